"""Certified brackets for the max-row-l1 approximation rank ``r_eps(A)``.

Takes arrays, returns profiles and witnesses; knows nothing of models, stores or studies.
"""

from analysis.brackets.matrix import check_attention, softmax64

__all__ = ["check_attention", "softmax64"]

from analysis.brackets.profile import (  # noqa: E402
    EFFORTS,
    LowerWitness,
    Profile,
    UpperWitness,
    fixed_torch_threads,
    matrix_seed,
    profile_matrix,
)

__all__ += [
    "EFFORTS",
    "LowerWitness",
    "Profile",
    "UpperWitness",
    "fixed_torch_threads",
    "matrix_seed",
    "profile_matrix",
]
