"""Nested model comparisons on held-out cells (knows nothing of attention).

Input is a tidy table (``cell_key``, ``cluster``, ``held_out``, ``y_lower``, ``y_upper``,
``BLOCK__feature`` columns); output is frozen result objects with ``to_frame()`` and
``summary()``.
"""

from analysis.compare.covariates import PreparedCovariates, prepare_covariates
from analysis.compare.estimators import (
    FittedModel,
    IntervalRegression,
    fit_estimator,
    fit_interval,
    fit_ols,
    fit_ridge,
)
from analysis.compare.headlevel import HeadLevelResult, head_level_analysis, residual_icc
from analysis.compare.metrics import interval_loglik, interval_sq_loss, spearman
from analysis.compare.nested import (
    RESULT_COLUMNS,
    ComparisonResult,
    check_nested,
    cluster_bootstrap_effect,
    compare_nested,
)
from analysis.compare.validate import (
    POWER_CURVE_COLUMNS,
    StudySizes,
    ValidationResult,
    approximate_power,
    load_widths,
    minimum_detectable_effect,
    power_curve,
    simulate_study,
    validate_comparison,
)

__all__ = [
    "POWER_CURVE_COLUMNS",
    "RESULT_COLUMNS",
    "ComparisonResult",
    "FittedModel",
    "HeadLevelResult",
    "IntervalRegression",
    "PreparedCovariates",
    "StudySizes",
    "ValidationResult",
    "check_nested",
    "approximate_power",
    "cluster_bootstrap_effect",
    "compare_nested",
    "fit_estimator",
    "fit_interval",
    "fit_ols",
    "fit_ridge",
    "head_level_analysis",
    "interval_loglik",
    "interval_sq_loss",
    "load_widths",
    "minimum_detectable_effect",
    "power_curve",
    "prepare_covariates",
    "residual_icc",
    "simulate_study",
    "spearman",
    "validate_comparison",
]
