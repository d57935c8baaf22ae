"""Helpers of tools/check_esp32_glue.py (docs/cmodule.md)."""
