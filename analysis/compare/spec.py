"""The settings of a nested comparison: :class:`ComparisonSpec`, one place for each.

:class:`~analysis.compare.nested.NestedComparison` takes a spec and fits it to a table
(``NestedComparison(spec).fit(table)``), as scikit-learn estimators take their settings
at construction and their data in ``fit``. Every setting is checked here, once, and a bad
one raises :class:`~analysis.validation.ParameterError` naming it.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

import numpy as np

from analysis.compare.bootstrap import BOOTSTRAPS
from analysis.compare.covariates import Calibration
from analysis.compare.estimators import ESTIMATORS
from analysis.compare.extrapolation import EXTRAPOLATIONS
from analysis.compare.inputs import check_input_settings
from analysis.compare.metrics import METRICS
from analysis.validation import ParameterError, check_int, check_random_state

__all__ = ["RESAMPLING_UNITS", "SESOI_SOURCES", "ComparisonSpec"]

#: What the bootstrap resamples: whole heads (the default), whole KV groups (heads that
#: share their keys under grouped-query attention) or whole (checkpoint, layer) pairs.
#: A unit other than ``head`` is read from the table's column of that name, constant
#: within each head.
RESAMPLING_UNITS: tuple[str, ...] = ("head", "kv_group", "checkpoint_layer")

#: How a SESOI came about: declared in the design before the lock (``"pre-specified"``)
#: or supplied after outcomes, e.g. in a re-analysis of a design that predates SESOI
#: (``"exploratory"``). The comparisons table repeats it in its ``equivalence`` column.
SESOI_SOURCES: tuple[str, ...] = ("pre-specified", "exploratory")


def _check_sesoi(sesoi: object) -> Mapping[str, Mapping[str, float]]:
    if not isinstance(sesoi, Mapping):
        raise ParameterError("sesoi", 'a mapping "base<rich" -> {metric: SESOI}', sesoi)
    out: dict[str, Mapping[str, float]] = {}
    for pair, per_metric in sesoi.items():
        if not isinstance(pair, str) or pair.count("<") != 1:
            raise ParameterError("sesoi", 'pair keys written "base<rich"', pair)
        if not isinstance(per_metric, Mapping) or not per_metric:
            raise ParameterError(
                f"sesoi[{pair}]", "a non-empty mapping metric -> SESOI", per_metric
            )
        values = {}
        for metric, v in per_metric.items():
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            if not ok or v <= 0:
                raise ParameterError(f"sesoi[{pair}][{metric}]", "a finite number > 0", v)
            values[str(metric)] = float(v)
        out[pair] = MappingProxyType(values)
    return MappingProxyType(out)


def _pairs(name: str, pairs: object) -> tuple[tuple[str, str], ...]:
    out = []
    for p in pairs:  # type: ignore[attr-defined]
        if not isinstance(p, (tuple, list)) or len(p) != 2:
            raise ParameterError(name, "(base_model, rich_model) pairs", p)
        out.append((str(p[0]), str(p[1])))
    return tuple(out)


def check_names(name: str, names: object) -> tuple[str, ...]:
    """``names`` as a tuple; a lone string raises (it would be read letter by letter)."""
    if isinstance(names, str):  # a lone string would be read letter by letter
        raise ParameterError(name, "a sequence of names, not one string", names)
    return tuple(names)  # type: ignore[arg-type]


def check_models(models: object) -> dict[str, tuple[str, ...]]:
    """``models`` as a dict model name -> tuple of blocks (at least one model)."""
    if not isinstance(models, Mapping) or not models:
        raise ParameterError("models", "a non-empty mapping model name -> blocks", models)
    return {str(m): check_names(f"models[{m}]", blocks) for m, blocks in models.items()}


def _unit_interval(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise ParameterError(name, "a number in (0, 1)", value)
    return value


@dataclass(frozen=True)
class ComparisonSpec:
    """What a nested comparison compares and how (:class:`NestedComparison`).

    Attributes
    ----------
    models : mapping
        Model name -> block names.
    family : sequence of (base, rich)
        The Holm family (pre-specified pairs); at least one.
    extra_pairs : sequence of (base, rich), default ()
        Sensitivity pairs outside the family: ``p_holm`` is NaN and the decision uses the
        unadjusted p.
    log_columns : sequence of str, default ()
        Positive scale features to enter as natural logs.
    estimator : {"interval", "ols", "ridge"}, default "interval"
    metrics : sequence of str
        Among ``interval_sq_loss``, ``interval_loglik``, ``spearman_mid`` (default all).
    primary_metric : str, default "interval_sq_loss"
        One of ``metrics``.
    n_boot : int, default 2000
        Bootstrap replicates B (>= 99).
    alpha, ci_level : float, default 0.05, 0.95
        Each in (0, 1).
    random_state : int, Generator or None
        Seeds the bootstrap (the same resamples serve every pair and metric).
    lock_sha256 : str or None
        Stamped on every row (a confirmatory run passes the lock's hash).
    calibrate_blocks, block_order, diagnostic_columns : default ()
        Which blocks are calibrated, the order of blocks in the collinearity screen and
        which columns are never covariates; see
        :func:`~analysis.compare.covariates.prepare_covariates`. The defaults are neutral
        (no calibration, each model's own block order, no diagnostics); a study passes
        what its descriptor registry declares.
    maxiter : int, default 200
        Iteration cap of each interval fit (see
        :func:`~analysis.compare.estimators.fit_interval`); ignored by ``ols`` and
        ``ridge``.
    calibration : Calibration, default Calibration()
        How the maps of ``calibrate_blocks`` meet the training cells: in-sample, or
        ``Calibration(folds=K, seed=S)`` cross-fitted by head
        (:func:`~analysis.compare.covariates.head_folds` over the training heads; held-out
        cells always use the maps fitted on all training cells). None reads as
        ``Calibration()``.
    bootstrap : {"cluster", "studentized"}, default "cluster"
        How the CI and p of the mean metrics are read from the resamples (the design's
        ``inference.bootstrap``): percentile or bootstrap-t. Spearman's CI is percentile
        in both.
    sesoi : mapping, default {}
        Pair (``"M0<M1"``) -> metric -> smallest effect size of interest, in the units
        of the metric's effect (``interval_sq_loss``: squared log2 units;
        ``interval_loglik``: mean log-likelihood per cell; ``spearman_mid``:
        correlation). Each value finite and > 0. A (pair, metric) absent from it has no
        equivalence test (:mod:`analysis.compare.equivalence`).
    sesoi_source : {"pre-specified", "exploratory"}, default "pre-specified"
        Stamped in the ``equivalence`` column of each row with a SESOI.
    checkpoint_effects : bool, default False
        Checkpoint fixed effects in every model (M0 included), features constant within
        a checkpoint dropped, plus the checkpoint-equal estimand and the
        leave-one-family-out and width-stratified sensitivities
        (:mod:`analysis.compare.offsets`). Needs the table's ``stratum`` column.
    resampling_unit : {"head", "kv_group", "checkpoint_layer"}, default "head"
        The unit of the cluster bootstrap over held-out cells (:data:`RESAMPLING_UNITS`).
    refit_replicates : int, default 0
        R > 0 adds the refit-bootstrap sensitivity (:mod:`analysis.compare.refit`).
    refit_confirmatory : bool, default False
        With ``refit_replicates`` R > 0: the confirmatory CI and p (and equivalence p)
        are the refit bootstrap's, and the held-out bootstrap's (fits fixed) become a
        sensitivity row (``[inference] refit_bootstrap``; the default under
        ``method = 3``).
    sensitivities : bool, default True
        Compute the sensitivity rows that ``checkpoint_effects`` and
        ``refit_replicates`` ask for, and under method 3 the SESOI sensitivity
        (:mod:`analysis.compare.sesoi_sensitivity`); the refits themselves run with False.
    extrapolation : {"none", "clip"}, default "none"
        ``"clip"`` clips each held-out covariate to its training range before prediction
        (:mod:`analysis.compare.extrapolation`, the design's ``inference.extrapolation``).
    method : {2, 3}, default 2
        The design's method (``analysis.prereg.options.METHODS``). 2 keeps the
        one-sided SESOI test under the name ``equivalence_p`` and the decisions of
        :mod:`analysis.compare.equivalence`, and the in-sample likelihood-ratio tests; 3
        makes ``equivalence_p`` the two-sided TOST p, adds ``non_superiority_p``, decides
        by :func:`analysis.compare.decisions.decide`, tests the added coefficients by a
        cluster-robust Wald test and labels the sensitivity rows unadjusted.
    input_effects : {"none", "fixed"}, default "none"
        ``"fixed"``: one intercept per input level (checkpoint, input_id, length) in every
        model (:func:`analysis.compare.inputs.add_input_effects`; the design's
        ``inference.input_effects``). Needs the table's ``input_id`` and ``length``.
    resample_inputs : bool, default False
        True: the crossed bootstrap, heads and inputs
        (:func:`analysis.compare.inputs.crossed_draws`; the design's
        ``inference.resample = ["head", "input"]``). Percentile bootstrap only, and not
        with ``refit_confirmatory``.

    Examples
    --------
    >>> from analysis.compare.spec import ComparisonSpec
    >>> spec = ComparisonSpec(
    ...     models={"M0": ["base"], "M1": ["base", "rich"]}, family=[("M0", "M1")],
    ...     sesoi={"M0<M1": {"interval_sq_loss": 0.001}},
    ... )
    >>> spec.family, spec.sesoi_for("M0", "M1", "interval_sq_loss")
    ((('M0', 'M1'),), 0.001)
    >>> ComparisonSpec(models=spec.models, family=[("M0", "M1")], n_boot=10)
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: n_boot: expected an integer >= 99, got 10
    """

    models: Mapping[str, Sequence[str]]
    family: Sequence[tuple[str, str]]
    extra_pairs: Sequence[tuple[str, str]] = ()
    log_columns: Sequence[str] = ()
    estimator: str = "interval"
    metrics: Sequence[str] = METRICS
    primary_metric: str = "interval_sq_loss"
    n_boot: int = 2000
    alpha: float = 0.05
    ci_level: float = 0.95
    random_state: int | np.random.Generator | None = None
    lock_sha256: str | None = None
    calibrate_blocks: Sequence[str] = ()
    block_order: Sequence[str] = ()
    diagnostic_columns: Collection[str] = ()
    maxiter: int = 200
    calibration: Calibration | None = None
    bootstrap: str = "cluster"
    sesoi: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    sesoi_source: str = "pre-specified"
    checkpoint_effects: bool = False
    resampling_unit: str = "head"
    refit_replicates: int = 0
    sensitivities: bool = True
    extrapolation: str = "none"
    refit_confirmatory: bool = False
    method: int = 2
    input_effects: str = "none"
    resample_inputs: bool = False

    def __post_init__(self) -> None:
        def put(name: str, value: object) -> None:
            object.__setattr__(self, name, value)

        put("models", check_models(self.models))
        put("family", _pairs("family", self.family))
        put("extra_pairs", _pairs("extra_pairs", self.extra_pairs))
        if not self.family:
            raise ParameterError("family", "at least one pair", list(self.family))
        for name in ("log_columns", "calibrate_blocks", "block_order", "diagnostic_columns"):
            put(name, check_names(name, getattr(self, name)))
        if self.estimator not in ESTIMATORS:
            raise ParameterError("estimator", "one of " + ", ".join(ESTIMATORS), self.estimator)
        put("metrics", check_names("metrics", self.metrics))
        for m in self.metrics:
            if m not in METRICS:
                raise ParameterError("metrics", "among " + ", ".join(METRICS), m)
        if self.primary_metric not in self.metrics:
            raise ParameterError(
                "primary_metric", "one of the computed metrics", self.primary_metric
            )
        if self.bootstrap not in BOOTSTRAPS:
            raise ParameterError("bootstrap", "one of " + ", ".join(BOOTSTRAPS), self.bootstrap)
        put("n_boot", check_int("n_boot", self.n_boot, minimum=99))
        put("maxiter", check_int("maxiter", self.maxiter, minimum=1))
        put("alpha", _unit_interval("alpha", self.alpha))
        put("ci_level", _unit_interval("ci_level", self.ci_level))
        check_random_state(self.random_state)  # the generator itself is made in fit
        put("calibration", Calibration() if self.calibration is None else self.calibration)
        if not isinstance(self.calibration, Calibration):
            raise ParameterError("calibration", "a Calibration or None", self.calibration)
        put("sesoi", _check_sesoi(self.sesoi))
        if self.sesoi_source not in SESOI_SOURCES:
            raise ParameterError("sesoi_source", " or ".join(SESOI_SOURCES), self.sesoi_source)
        for name in ("checkpoint_effects", "sensitivities", "refit_confirmatory"):
            if not isinstance(getattr(self, name), bool):
                raise ParameterError(name, "true or false", getattr(self, name))
        if self.resampling_unit not in RESAMPLING_UNITS:
            raise ParameterError(
                "resampling_unit", " or ".join(RESAMPLING_UNITS), self.resampling_unit
            )
        if self.extrapolation not in EXTRAPOLATIONS:
            raise ParameterError("extrapolation", " or ".join(EXTRAPOLATIONS), self.extrapolation)
        if isinstance(self.method, bool) or self.method not in (2, 3):
            raise ParameterError("method", "2 or 3", self.method)
        r = self.refit_replicates
        if isinstance(r, bool) or not isinstance(r, int) or r < 0:
            raise ParameterError("refit_replicates", "an integer >= 0", r)
        check_input_settings(self.input_effects, self.resample_inputs, self)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # a mappingproxy does not pickle (a spec sent to a worker process): plain dicts
        # travel, and __post_init__ checks and freezes them again on arrival
        return (
            _spec_from_fields,
            (type(self), {f.name: _thaw(getattr(self, f.name)) for f in fields(self)}),
        )

    @property
    def pairs(self) -> tuple[tuple[str, str], ...]:
        """The family, then the extra pairs."""
        return self.family + self.extra_pairs

    def sesoi_for(self, base: str, rich: str, metric: str) -> float | None:
        """The SESOI of one (pair, metric), or None when it has none."""
        return self.sesoi.get(f"{base}<{rich}", {}).get(metric)


def _thaw(value: Any) -> Any:
    """``value`` with every mappingproxy, at any depth of mappings, a plain dict."""
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    return value


def _spec_from_fields(cls: type, values: dict[str, Any]) -> Any:
    """A spec from its fields (how a pickled :class:`ComparisonSpec` is rebuilt)."""
    return cls(**values)
