"""Preregistration: design schema, held-out draw, lock / check / amend, sealing, power.

The power analysis (:mod:`analysis.prereg.power`, :mod:`analysis.prereg.error_rates`,
:mod:`analysis.prereg.power_curve`) simulates a design's study and runs
``analysis.compare`` on it; a design's result is stored beside it and locked with it
(:mod:`analysis.prereg.power_file`).
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
from analysis.prereg.error_rates import (
    HypothesisPower,
    Rate,
    ValidationResult,
    clopper_pearson,
    validate_comparison,
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
from analysis.prereg.power import (
    SIMULATED_BLOCKS,
    SIMULATED_COVARIATES,
    PowerAssumptions,
    StudySizes,
    WidthModel,
    load_widths,
    simulate_study,
    simulated_comparison,
    simulated_decisions,
    sizes_from_design,
)
from analysis.prereg.power_curve import (
    POWER_CURVE_COLUMNS,
    approximate_power,
    minimum_detectable_effect,
    power_curve,
)
from analysis.prereg.power_file import (
    POWER_FILE_FORMAT,
    power_path,
    power_sha256,
    read_power_file,
    write_power_file,
)
from analysis.prereg.schema import population, validate_design
from analysis.prereg.sealing import ConfirmatoryData, SealedCells

__all__ = [
    "ConfirmatoryData",
    "Design",
    "FROZEN_SECTIONS",
    "HypothesisPower",
    "Lock",
    "POWER_CURVE_COLUMNS",
    "POWER_FILE_FORMAT",
    "PowerAssumptions",
    "PreregistrationError",
    "Rate",
    "SIMULATED_BLOCKS",
    "SIMULATED_COVARIATES",
    "SealedCells",
    "StudySizes",
    "ValidationResult",
    "WidthModel",
    "amend_design",
    "approximate_power",
    "canonical_bytes",
    "clopper_pearson",
    "check_descriptor_columns",
    "check_design",
    "design_sha256",
    "deviations_path",
    "draw_held_out",
    "heads_sha256",
    "load_design",
    "load_widths",
    "lock_design",
    "lock_path",
    "minimum_detectable_effect",
    "population",
    "power_curve",
    "power_path",
    "power_sha256",
    "read_power_file",
    "require_locked",
    "simulate_study",
    "simulated_comparison",
    "simulated_decisions",
    "sizes_from_design",
    "validate_comparison",
    "validate_design",
    "verify_blocks",
    "write_held_out",
    "write_power_file",
]
