"""Power analysis: simulated studies of a design (one frozen :class:`PowerSpec`), decided
by its pre-specified comparison; inputs, widths, simulate, fit, calibrate, error_rates,
rates, result, curve and file (the design's stored ``<stem>.power.json``, whose hash the
lock records). The study's power stage (:mod:`analysis.study.power`) calls it; prereg never
imports it.
"""

from analysis.power.curve import (
    POWER_CURVE_COLUMNS,
    approximate_power,
    minimum_detectable_effect,
    power_curve,
)
from analysis.power.error_rates import validate_comparison
from analysis.power.file import POWER_FILE_FORMAT, read_power_file, write_power_file
from analysis.power.inputs import SIMULATED_BLOCKS, PowerAssumptions, StudySizes, sizes_from_design
from analysis.power.rates import Rate, clopper_pearson
from analysis.power.result import HypothesisPower, ValidationResult
from analysis.power.simulate import (
    SIMULATED_COVARIATES,
    simulate_study,
    simulated_comparison,
    simulated_decisions,
)
from analysis.power.spec import PowerSpec
from analysis.power.widths import WidthModel, load_widths

__all__ = [
    "HypothesisPower",
    "POWER_CURVE_COLUMNS",
    "POWER_FILE_FORMAT",
    "PowerAssumptions",
    "PowerSpec",
    "Rate",
    "SIMULATED_BLOCKS",
    "SIMULATED_COVARIATES",
    "StudySizes",
    "ValidationResult",
    "WidthModel",
    "approximate_power",
    "clopper_pearson",
    "load_widths",
    "minimum_detectable_effect",
    "power_curve",
    "read_power_file",
    "simulate_study",
    "simulated_comparison",
    "simulated_decisions",
    "sizes_from_design",
    "validate_comparison",
    "write_power_file",
]
