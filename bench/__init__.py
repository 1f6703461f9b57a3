"""Benchmarks (not tests): run each from the project root as `.venv/bin/python -m bench.<name>`.
Shared pieces are in bench.harness; see bench/README.md."""
