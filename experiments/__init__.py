"""Experiments: diagnostic studies behind the write-ups in docs/ (see README.md here).

Run each as a module from the repository root, e.g. ``python -m experiments.closure_limits``.
"""
