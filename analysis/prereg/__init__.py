"""Preregistration: design schema, held-out draw, lock / check / amend, sealing."""

from analysis.prereg.design import (
    Design,
    canonical_bytes,
    design_sha256,
    draw_held_out,
    heads_sha256,
    load_design,
    population,
    validate_design,
    write_held_out,
)
from analysis.prereg.lock import (
    Lock,
    PreregistrationError,
    amend_design,
    check_design,
    deviations_path,
    lock_design,
    lock_path,
    require_locked,
)
from analysis.prereg.sealing import ConfirmatoryData, SealedCells

__all__ = [
    "ConfirmatoryData",
    "Design",
    "Lock",
    "PreregistrationError",
    "SealedCells",
    "amend_design",
    "canonical_bytes",
    "check_design",
    "deviations_path",
    "design_sha256",
    "draw_held_out",
    "heads_sha256",
    "load_design",
    "lock_design",
    "lock_path",
    "population",
    "require_locked",
    "validate_design",
    "write_held_out",
]
