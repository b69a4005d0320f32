"""Benchmarks: `make bench` runs every bench_*.py (bench/run.py) and prints one table."""
