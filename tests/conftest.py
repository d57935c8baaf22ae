"""The test tree's root. tests/ (for testkit) and tools/ (for simkit) are
on the import path through pyproject.toml's pytest `pythonpath`, so no test
folder adds another's path."""
