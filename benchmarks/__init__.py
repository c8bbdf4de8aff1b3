"""Benchmarks: results as JSON under benchmarks/results/, compared with a baseline measured in the same run."""
