"""Preregistration: design schema, held-out draw, lock / check / amend, sealing.

A design's stored power file is hashed into its lock (:func:`power_sha256`); the power
analysis that writes it is :mod:`analysis.power`, which prereg never imports.
"""

from analysis.prereg.amend import amend_design
from analysis.prereg.design import (
    Design,
    canonical_bytes,
    design_sha256,
    draw_held_out,
    heads_sha256,
    load_design,
    write_held_out,
)
from analysis.prereg.lock import (
    FROZEN_SECTIONS,
    Lock,
    PreregistrationError,
    check_descriptor_columns,
    check_design,
    deviations_path,
    lock_design,
    lock_path,
    require_locked,
    verify_blocks,
)
from analysis.prereg.provenance import power_path, power_sha256
from analysis.prereg.schema import population, validate_design
from analysis.prereg.sealing import ConfirmatoryData, SealedCells

__all__ = [
    "ConfirmatoryData",
    "Design",
    "FROZEN_SECTIONS",
    "Lock",
    "PreregistrationError",
    "SealedCells",
    "amend_design",
    "canonical_bytes",
    "check_descriptor_columns",
    "check_design",
    "design_sha256",
    "deviations_path",
    "draw_held_out",
    "heads_sha256",
    "load_design",
    "lock_design",
    "lock_path",
    "population",
    "power_path",
    "power_sha256",
    "require_locked",
    "validate_design",
    "verify_blocks",
    "write_held_out",
]
