"""Tests that the benchmarks still run, at a tiny size."""
