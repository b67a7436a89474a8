"""Sources of attention matrices: transformer checkpoints, inputs for them, synthetic families.

``checkpoints`` loads models offline and captures per-head A, Q, K, scale and mask;
``inputs`` builds texts and images of a chosen length; ``synthetic`` builds families with
known geometry or known rank.
"""
