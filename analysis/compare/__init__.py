"""Nested model comparisons on held-out cells (knows nothing of attention).

Input is a tidy table (``cell_key``, ``cluster``, ``held_out``, ``y_lower``, ``y_upper``,
``BLOCK__feature`` columns); output is frozen result objects with ``to_frame()`` and
``summary()``. Which blocks are calibrated, the order of blocks in the collinearity
screen and which columns are diagnostics are arguments (in a study, the descriptor
registry supplies them).
"""

from analysis.compare.bootstrap import BOOTSTRAPS, ClusterBootstrap
from analysis.compare.bycheckpoint import (
    BY_CHECKPOINT_COLUMNS,
    PREDICTION_COLUMNS,
    CheckpointEffects,
    checkpoint_seed,
    effects_by_checkpoint,
    held_out_predictions,
)
from analysis.compare.bylength import (
    BY_LENGTH_COLUMNS,
    LengthEffects,
    effects_by_length,
    length_seed,
)
from analysis.compare.covariates import (
    Calibration,
    PreparedCovariates,
    head_folds,
    leave_one_head_out,
    prepare_covariates,
    repeated_head_folds,
)
from analysis.compare.estimators import (
    FittedModel,
    IntervalRegression,
    fit_estimator,
    fit_interval,
    fit_ols,
    fit_ridge,
)
from analysis.compare.extrapolation import EXTRAPOLATION_COLUMNS, Extrapolation
from analysis.compare.headlevel import (
    FoldExtrapolationWarning,
    HeadLevelAnalysis,
    HeadLevelResult,
    HeadLevelSpec,
    QuestionSkippedWarning,
    head_level_folds,
    residual_icc,
)
from analysis.compare.metrics import interval_loglik, interval_sq_loss, spearman
from analysis.compare.multiplicity import holm
from analysis.compare.nested import (
    FIT_FAILED,
    FIT_OK,
    RESULT_COLUMNS,
    ComparisonResult,
    NestedComparison,
    check_nested,
)
from analysis.compare.spec import ComparisonSpec

__all__ = [
    "BOOTSTRAPS",
    "BY_CHECKPOINT_COLUMNS",
    "BY_LENGTH_COLUMNS",
    "EXTRAPOLATION_COLUMNS",
    "FIT_FAILED",
    "FIT_OK",
    "RESULT_COLUMNS",
    "Calibration",
    "ClusterBootstrap",
    "ComparisonSpec",
    "CheckpointEffects",
    "Extrapolation",
    "LengthEffects",
    "ComparisonResult",
    "FittedModel",
    "FoldExtrapolationWarning",
    "HeadLevelAnalysis",
    "HeadLevelResult",
    "HeadLevelSpec",
    "IntervalRegression",
    "NestedComparison",
    "PREDICTION_COLUMNS",
    "PreparedCovariates",
    "QuestionSkippedWarning",
    "check_nested",
    "checkpoint_seed",
    "length_seed",
    "effects_by_checkpoint",
    "effects_by_length",
    "fit_estimator",
    "fit_interval",
    "fit_ols",
    "fit_ridge",
    "head_folds",
    "head_level_folds",
    "held_out_predictions",
    "holm",
    "interval_loglik",
    "interval_sq_loss",
    "leave_one_head_out",
    "prepare_covariates",
    "repeated_head_folds",
    "residual_icc",
    "spearman",
]
