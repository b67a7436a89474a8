"""Nested model comparisons on held-out cells (knows nothing of attention)."""
