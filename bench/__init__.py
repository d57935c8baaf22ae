"""Benchmarks of the xiaozhi server: latency, turn-taking and concurrency.

    .venv/bin/python -m bench [--quick] [section ...]

Every section prints its figures beside their targets. Nothing here is
asserted: the figures are for people (docs/bench.md), tests only check
that the benchmark still runs.
"""
