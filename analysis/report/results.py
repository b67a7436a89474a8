"""What a finished (or partly finished) study hands to the report: tidy tables only.

The runner (:mod:`analysis.study`) fills a :class:`StudyResults` from its stored stage
outputs; :mod:`analysis.report` renders it and computes no statistic of its own beyond
descriptive summaries (counts, medians, shares) of these tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from analysis.report.design import ReportDesign

__all__ = ["BRACKET_COLUMNS", "StudyResults"]

#: Columns of :attr:`StudyResults.brackets`, one row per cell (real and synthetic).
BRACKET_COLUMNS: tuple[str, ...] = (
    "cell_key",  # str, unique: the store's cell key over (matrix, temperature, eps)
    "matrix_key",  # str, the store's matrix key
    "source",  # "checkpoint" | "synthetic"
    "checkpoint",  # canonical HF id; for synthetic cells the family name ("spherical", "ball")
    "family",  # model family ("bert", "gpt2", "qwen2", "vit", "deit") or synthetic family
    "head_id",  # "<checkpoint>:<layer>:<head>" for real cells; "" for synthetic
    "layer",  # int (0 for synthetic)
    "head",  # int (0 for synthetic)
    "input_id",  # str
    "length",  # int, N (= n for synthetic)
    "temperature",  # float
    "eps",  # float
    "lo",  # int, certified lower end of r_eps
    "hi",  # int, certified upper end of r_eps
    "closed",  # bool, lo == hi
    "held_out",  # bool; always False for synthetic cells
    "d",  # float (NaN for real cells): synthetic dimension
    "beta",  # float (NaN for real cells): synthetic inverse temperature
    "seed",  # float (NaN for real cells): synthetic seed
)


@dataclass(frozen=True)
class StudyResults:
    """Everything the report renders.

    Attributes
    ----------
    study : str
        The design's stem (``offline-minilm``).
    title : str
        The design's ``title``.
    design : ReportDesign
        The design as the study ran it (:class:`~analysis.report.design.ReportDesign`,
        filled by :func:`analysis.study.report_design` from the parsed design): hypotheses,
        models, metrics, inference settings, held-out heads.
    brackets : pandas.DataFrame
        Columns :data:`BRACKET_COLUMNS`.
    features : pandas.DataFrame
        One row per real cell: ``cell_key`` then ``BLOCK__feature`` float columns (e.g.
        ``native__kappa``, ``intrinsic__Pi``, ``baseline__...``); plugin blocks likewise.
        Per-r diagnostics (``intrinsic__q_r3``, ...) may be present and are not covariates.
    comparison : pandas.DataFrame or None
        The confirmatory result's ``to_frame()`` (columns
        ``analysis.compare.RESULT_COLUMNS``), family and sensitivity pairs together;
        None when the comparison has not run (e.g. no real cells).
    comparison_ols : pandas.DataFrame or None
        The same pairs refitted with the OLS-on-midpoints sensitivity estimator.
    head_level : pandas.DataFrame or None
        ``HeadLevelResult.to_frame()`` (``analysis.compare.headlevel.HEAD_LEVEL_COLUMNS``:
        one row per question, model and fixed_effects) on training heads.
    dropped_columns : list of str
        Covariates dropped as constant or collinear.
    excluded : dict
        Exclusion counts by rule, e.g. ``{"failed_verification": 0, "missing_covariate": 3}``.
    provenance : dict
        ``design_sha256``, ``lock_sha256``, ``held_out_sha256``, ``package_version``,
        ``git_commit``, ``libraries`` (name -> version), ``seeds`` (name -> int),
        ``effort``, ``stage_seconds`` (stage -> wall seconds), ``created`` (ISO time);
        once the comparison ran, ``calibration``: ``mode`` (``"cross-fitted"`` or
        ``"in-sample"``), ``folds``, ``seed`` and ``description`` of the calibration
        maps it used.
    lr_tests : pandas.DataFrame or None
        Optional: the confirmatory result's ``lr_tests`` (in-sample likelihood-ratio
        tests, a pre-specified secondary test): ``pair``, ``base_model``, ``rich_model``,
        ``statistic``, ``df``, ``p_value``.
    head_level_meta : dict
        Optional: what ``head_level`` alone does not carry, ``HeadLevelResult.meta()``:
        ``residual_icc`` (float), ``base_model`` (str), ``folds`` (question -> how its
        folds were formed), ``skipped`` (question -> why it was not answered),
        ``warnings`` (fold extrapolation messages). A ``folds`` string (stored before
        the two questions existed) is shown as is.
    skipped : dict
        Optional: result name (``"comparison"``, ``"comparison_ols"``, ``"head_level"``)
        -> why it did not run, shown in the report where that result would be.
    power : dict
        Optional: the simulated error rates of the design's decision
        (``analysis.power.ValidationResult.to_dict()``: ``alpha``, ``simulations``,
        ``assumptions``, ``features``, ``hypotheses`` -- one dict per simulated
        hypothesis with ``hypothesis``, ``pair``, ``power``, ``size_simple``,
        ``size_boundary`` (each ``{"rate", "ci_low", "ci_high", "share", ...}``),
        ``boundary_share``, ``mde``, ``mde_low``, ``mde_high`` -- and ``skipped``), or
        ``{"skipped": reason}`` when it was not simulated; empty when not recorded.
    by_checkpoint : pandas.DataFrame or None
        Optional: the secondary by-checkpoint effects
        (``analysis.compare.CheckpointEffects.to_frame()``, columns
        ``analysis.compare.BY_CHECKPOINT_COLUMNS``: one row per pair, metric and
        checkpoint), computed when the design sets ``[inference] by_checkpoint = true``;
        None otherwise or before the comparison has run.
    by_length : pandas.DataFrame or None
        Optional: the secondary effects by input length
        (``analysis.compare.LengthEffects.to_frame()``, columns
        ``analysis.compare.BY_LENGTH_COLUMNS``: one row per pair, metric and length),
        computed when the design sets ``[inference] by_length = true``; None otherwise or
        before the comparison has run.
    held_out_predictions : pandas.DataFrame or None
        Optional, with ``by_checkpoint``: every held-out cell's prediction by every
        fitted model (``analysis.compare.PREDICTION_COLUMNS``: ``cell_key``,
        ``cluster``, ``checkpoint``, ``model``, ``y_hat``, ``y_lower``, ``y_upper``).
    extrapolation : pandas.DataFrame or None
        Optional: ``analysis.compare.Extrapolation.to_frame()`` (columns
        ``analysis.compare.extrapolation.EXTRAPOLATION_COLUMNS``: per pair and mean
        metric, the effect on in-range and on extrapolated held-out cells and the trimmed
        mean of per-unit effects), stored for method-3 designs; None otherwise.
    sesoi_sensitivity : pandas.DataFrame or None
        Optional: ``ComparisonResult.sesoi_sensitivity`` (columns
        ``analysis.compare.sesoi_sensitivity.SESOI_SENSITIVITY_COLUMNS``: the family's
        method-3 decisions at half, once and twice the declared SESOI), stored for
        method-3 designs; None otherwise.

    Examples
    --------
    >>> import pandas as pd
    >>> r = StudyResults("toy", "Toy", ReportDesign(by_checkpoint=True),
    ...                  pd.DataFrame(columns=list(BRACKET_COLUMNS)), pd.DataFrame())
    >>> r.by_checkpoint_asked, r.comparison is None, r.skipped
    (True, True, {})
    """

    study: str
    title: str
    design: ReportDesign
    brackets: pd.DataFrame
    features: pd.DataFrame
    comparison: pd.DataFrame | None = None
    comparison_ols: pd.DataFrame | None = None
    head_level: pd.DataFrame | None = None
    dropped_columns: list[str] = field(default_factory=list)
    excluded: dict[str, int] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    lr_tests: pd.DataFrame | None = None
    head_level_meta: dict[str, Any] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    power: dict[str, Any] = field(default_factory=dict)
    by_checkpoint: pd.DataFrame | None = None
    held_out_predictions: pd.DataFrame | None = None
    by_length: pd.DataFrame | None = None
    extrapolation: pd.DataFrame | None = None
    sesoi_sensitivity: pd.DataFrame | None = None

    @property
    def by_checkpoint_asked(self) -> bool:
        """Whether the design asks for the by-checkpoint effects
        (``[inference] by_checkpoint = true``)."""
        return self.design.by_checkpoint

    @property
    def by_length_asked(self) -> bool:
        """Whether the design asks for the effects by length (``[inference] by_length =
        true``)."""
        return self.design.by_length
