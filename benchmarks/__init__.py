"""Benchmarks: scripts that measure what the package promises (see README.md here).

Run each as a module from the repository root, e.g. ``python -m benchmarks.bench_brackets``.
"""
