"""Nested model comparisons on held-out cells with a cluster bootstrap and Holm.

Input: a tidy table with ``cell_key``, ``cluster`` (head id), ``held_out`` (bool),
``y_lower``, ``y_upper`` (log2 interval ends) and ``BLOCK__feature`` columns, and
optionally ``stratum`` (the bootstrap then resamples held-out clusters within each
stratum). Models are fitted on training rows; metrics are computed on held-out rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis.compare import extrapolation as _extrap
from analysis.compare.bootstrap import (
    _Draws,
    _held_out_draws,
    percentile_ci_and_p,
    replicate_means,
    spearman_replicates,
    studentized_ci_and_p,
)
from analysis.compare.covariates import PreparedCovariates, prepare_covariates
from analysis.compare.decisions import METHOD3_RULE
from analysis.compare.equivalence import (
    EQUIVALENCE_COLUMNS,
    NO_EQUIVALENCE,
    decide_equivalence,
    decide_method3,
    method_columns,
)
from analysis.compare.estimators import FittedModel, fit_estimator
from analysis.compare.inputs import add_input_effects, crossed_draws
from analysis.compare.lrtests import pair_tests
from analysis.compare.metrics import HIGHER_IS_BETTER, interval_loglik, interval_sq_loss
from analysis.compare.multiplicity import holm
from analysis.compare.nested_checks import (
    REQUIRED_COLUMNS,  # noqa: F401 (re-exported: analysis.compare.bycheckpoint)
    _check_columns,
    _check_pairs,
    _check_table,
    check_nested,
)
from analysis.compare.offsets import (
    SENSITIVITY_COLUMNS,
    add_checkpoint_effects,
    family_sensitivity,
)
from analysis.compare.refit import (
    fixed_fit_rows,
    refit_bootstrap_rows,
    refit_confirmatory,
    refit_effects,
)
from analysis.compare.sesoi_sensitivity import sesoi_columns, sesoi_sensitivity
from analysis.compare.spec import ComparisonSpec
from analysis.validation import ParameterError, check_random_state

__all__ = [
    "FIT_FAILED",
    "FIT_OK",
    "RESULT_COLUMNS",
    "ComparisonResult",
    "NestedComparison",
    "STRATUM",
    "check_nested",
]

RESULT_COLUMNS: tuple[str, ...] = (
    "pair",
    "base_model",
    "rich_model",
    "metric",
    "base_value",
    "rich_value",
    "effect",
    "ci_low",
    "ci_high",
    "p_value",
    "p_holm",
    "adds_information",
    "n_cells",
    "n_heads",
    "lock_sha256",
    # fit diagnostics (added last so the columns above keep their positions)
    "base_converged",
    "rich_converged",
    "base_iterations",
    "rich_iterations",
    "base_grad_norm",
    "rich_grad_norm",
    "status",
    # how the calibration maps met the training cells (added last, as above)
    "calibration",
    "calibration_folds",
    "calibration_seed",
    # equivalence beside superiority (analysis.compare.equivalence; added last, as above)
    *EQUIVALENCE_COLUMNS,
)


#: ``status`` of a pair whose two fits converged.
FIT_OK = "ok"
#: ``status`` of a pair with a fit that did not converge: reported, never decided.
FIT_FAILED = "fit failed"
#: Optional column: the stratum of each cell's cluster (a study passes the checkpoint, the
#: unit of its per-checkpoint held-out draw); the bootstrap resamples clusters within it.
STRATUM = "stratum"


@dataclass(frozen=True)
class ComparisonResult:
    """Result of :meth:`NestedComparison.fit`.

    Attributes
    ----------
    frame : pandas.DataFrame
        One row per (pair, metric); use :meth:`to_frame` for a copy.
    lr_tests : pandas.DataFrame
        In-sample tests of each pair's added coefficients (secondary;
        :mod:`analysis.compare.lrtests`): method 2 the likelihood-ratio test (``pair``,
        ``base_model``, ``rich_model``, ``statistic``, ``df``, ``p_value``, ``status``),
        method 3 the cluster-robust Wald test (also ``test`` and ``clusters``).
    dropped : pandas.DataFrame
        Constant or collinear columns dropped per model (``model``, ``column``,
        ``reason``).
    columns : dict
        Model -> kept covariate columns.
    fits : dict
        Model -> :class:`~analysis.compare.estimators.FittedModel`.
    covariates : PreparedCovariates
        The covariate preparation the fits used: its calibration maps, training means and
        SDs, kept and dropped columns, and every row's design matrix (held-out rows
        included, built with what was learned on training rows).
    spec : ComparisonSpec
        The settings the comparison ran with; ``estimator``, ``primary_metric``,
        ``alpha``, ``n_boot``, ``lock_sha256`` (None for an unlocked run), ``calibration``
        and ``bootstrap`` read from it.
    sensitivity : pandas.DataFrame
        Sensitivity rows (:data:`~analysis.compare.offsets.SENSITIVITY_COLUMNS`): with
        ``checkpoint_effects`` the checkpoint-equal estimand, leave-one-family-out and
        width-stratified rows; with ``refit_replicates`` the refit bootstrap
        (:mod:`analysis.compare.refit`), and with ``refit_confirmatory`` the held-out
        bootstrap with the fits fixed; else empty.
    held_out : HeldOutScores or None
        What :meth:`extrapolation` reads: held-out flags, per-cell values, resamples.
    sesoi_sensitivity : pandas.DataFrame or None
        Method 3: the family's decisions at half, once and twice the SESOI
        (:func:`~analysis.compare.sesoi_sensitivity.sesoi_sensitivity`); else None.

    Examples
    --------
    Made by :class:`NestedComparison`:

    >>> import numpy as np
    >>> import pandas as pd
    >>> from analysis.compare.nested import ComparisonResult, NestedComparison
    >>> from analysis.compare.spec import ComparisonSpec
    >>> table = pd.DataFrame({
    ...     "cell_key": range(40), "cluster": np.repeat(range(10), 4),
    ...     "held_out": np.repeat(range(10), 4) >= 6, "base__x": np.arange(40.0) % 7,
    ...     "rich__z": np.arange(40.0) % 5,
    ... })
    >>> table["y_lower"] = table["base__x"] + table["rich__z"]
    >>> table["y_upper"] = table["y_lower"] + 1.0
    >>> spec = ComparisonSpec(
    ...     models={"base": ["base"], "rich": ["base", "rich"]}, family=[("base", "rich")],
    ...     estimator="ols", n_boot=99, random_state=0,
    ... )
    >>> result = NestedComparison(spec).fit(table)
    >>> isinstance(result, ComparisonResult), result.columns["rich"]
    (True, ('base__x', 'rich__z'))
    >>> result.adds_information("base", "rich")  # y is base__x + rich__z + 0.5 exactly
    True
    """

    frame: pd.DataFrame = field(repr=False)
    lr_tests: pd.DataFrame = field(repr=False)
    dropped: pd.DataFrame = field(repr=False)
    columns: dict = field(repr=False)
    fits: dict = field(repr=False)
    covariates: PreparedCovariates = field(repr=False)
    spec: ComparisonSpec
    sensitivity: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=list(SENSITIVITY_COLUMNS)), repr=False
    )
    held_out: _extrap.HeldOutScores | None = field(default=None, repr=False)
    sesoi_sensitivity: pd.DataFrame | None = field(default=None, repr=False)

    estimator = property(lambda self: self.spec.estimator)
    primary_metric = property(lambda self: self.spec.primary_metric)
    alpha = property(lambda self: float(self.spec.alpha))
    n_boot = property(lambda self: self.spec.n_boot)
    lock_sha256 = property(lambda self: self.spec.lock_sha256)
    calibration = property(lambda self: self.spec.calibration)
    bootstrap = property(lambda self: self.spec.bootstrap)

    def to_frame(self) -> pd.DataFrame:
        """Tidy copy with the fixed columns: :data:`RESULT_COLUMNS`, then under method 3
        :data:`~analysis.compare.equivalence.METHOD3_COLUMNS`."""
        return self.frame.loc[:, [*RESULT_COLUMNS, *method_columns(self.spec.method)]].copy()

    def extrapolation(self) -> _extrap.Extrapolation:
        """Held-out cells outside the training ranges and each pair's effect apart on them
        (secondary; :func:`~analysis.compare.extrapolation.extrapolation_effects`)."""
        return _extrap.extrapolation_effects(self.held_out, self.spec)

    def adds_information(self, base: str, rich: str, metric: str | None = None) -> bool:
        """The pre-specified decision for one pair (primary metric by default)."""
        metric = metric or self.primary_metric
        f = self.frame
        row = f[(f.base_model == base) & (f.rich_model == rich) & (f.metric == metric)]
        if row.empty:
            raise ParameterError("pair", "a compared pair and metric", (base, rich, metric))
        return bool(row["adds_information"].iloc[0])

    def summary(self) -> str:
        """Plain-text report of the decision rule and each pair's primary result."""
        f = self.frame
        lines = [
            f"Nested comparisons ({self.estimator} fits on training cells; "
            f"metrics on held-out cells)",
            f"lock sha256: {self.lock_sha256 or 'NONE (not a confirmatory run)'}",
            f"{'studentized ' if self.bootstrap == 'studentized' else ''}cluster bootstrap "
            f"over held-out {self.spec.resampling_unit.replace('_', ' ')}s, B = {self.n_boot}; "
            f"alpha = {self.alpha}; "
            "adds information = Holm p < alpha and CI low > 0"
            + (f"; {METHOD3_RULE}" if self.spec.method == 3 else ""),
            f"calibration of calibrated blocks: {self.calibration.describe()}",
        ]
        for _, r in f.iterrows():
            if r.status == FIT_FAILED:
                mark = "FIT FAILED (no result)"
            elif self.spec.method == 3:
                mark = r.decision.upper() if r.decision == "adds information" else r.decision
            else:
                mark = "ADDS INFORMATION" if r.adds_information else "no"
            if not np.isnan(r.sesoi):
                mark += (
                    f"; {r.metric_role} equivalence ({r.equivalence}) at SESOI {r.sesoi:.4g}"
                    + ("" if np.isnan(r.sesoi_share) else f" ({r.sesoi_share:.1%} of base)")
                    + ": "
                    + (
                        f"TOST p {r.equivalence_p:.4f}, non-superiority p {r.non_superiority_p:.4f}"
                        if self.spec.method == 3
                        else f"p {r.equivalence_p:.4f}, {r.decision}"
                    )
                )
            holm = "outside family" if np.isnan(r.p_holm) else f"{r.p_holm:.4f}"
            lines.append(
                f"  {r.pair:<16} {r.metric:<17} base {r.base_value:.4f} rich "
                f"{r.rich_value:.4f} effect {r.effect:+.4f} "
                f"[{r.ci_low:+.4f}, {r.ci_high:+.4f}] p {r.p_value:.4f} holm {holm}: {mark}"
            )
        n = f.iloc[0]
        lines.append(f"  held-out cells {n.n_cells}, heads {n.n_heads}")
        failed = [m for m, fit in self.fits.items() if not fit.converged]
        if failed:
            lines.append(
                "  fit failed: "
                + "; ".join(
                    f"{m} did not converge ({self.fits[m].iterations} iterations, "
                    f"gradient norm {self.fits[m].grad_norm:.3g})"
                    for m in failed
                )
                + "; a pair with a failed fit is no result and never adds information "
                "(in the Holm family it counts with p = 1)"
            )
        if self.spec.checkpoint_effects:
            lines.append("  checkpoint fixed effects in every model (checkpoint labels dropped)")
        if not self.sensitivity.empty:
            lines.append(
                f"  sensitivity rows (decide nothing): {len(self.sensitivity)}, see .sensitivity"
            )
        if not self.dropped.empty:
            lines.append(
                "  dropped columns: "
                + "; ".join(f"{m}: {c} ({r})" for m, c, r in self.dropped.itertuples(index=False))
            )
        return "\n".join(lines)


def _fit_columns(base: FittedModel, rich: FittedModel) -> dict:
    """The pair's fit diagnostics and status (the last columns of RESULT_COLUMNS)."""
    return {
        "base_converged": bool(base.converged),
        "rich_converged": bool(rich.converged),
        "base_iterations": int(base.iterations),
        "rich_iterations": int(rich.iterations),
        "base_grad_norm": float(base.grad_norm),
        "rich_grad_norm": float(rich.grad_norm),
        "status": FIT_OK if base.converged and rich.converged else FIT_FAILED,
    }


class NestedComparison:
    """Fit nested models on training cells and compare them on held-out cells.

    Parameters
    ----------
    spec : ComparisonSpec
        What to compare and how (:class:`~analysis.compare.spec.ComparisonSpec`).

    Notes
    -----
    Values, effects (positive = the rich model helps), the cluster bootstrap over held-out
    heads within strata (replicate means: :func:`~analysis.compare.bootstrap.replicate_means`;
    fits not refitted), percentile CI, one-sided p, Holm across ``family`` within each
    metric, the decision (``p_holm < alpha`` and ``ci_low > 0``) and the treatment of
    failed fits: docs/prereg.md, section "The comparison and its decision rule". A pair
    with a failed fit (``status = "fit failed"``, else ``"ok"``; each row carries both
    fits' ``converged``, ``iterations`` and ``grad_norm``) keeps p = 1 in Holm, so its
    ``p_holm`` is 1 and it rejects nothing itself.
    Secondary (:mod:`analysis.compare.lrtests`): method 2 the in-sample likelihood-ratio
    test (ignores clustering, so anti-conservative); method 3 a cluster-robust Wald test
    of the added coefficients, clustered by the resampling unit.

    Equivalence (:mod:`analysis.compare.equivalence`): a (pair, metric) with a SESOI
    ``delta`` also gets, on the same replicates, under method 2 the one-sided test of
    ``H0: effect >= delta`` (``equivalence_p``) and a decision
    (:func:`~analysis.compare.equivalence.decide_equivalence`); under method 3 the
    two-sided TOST at ``+-delta`` (``equivalence_p``), the one-sided p
    (``non_superiority_p``) and the decisions of :mod:`analysis.compare.decisions`
    (``harms`` for a CI wholly below 0). The SESOI p columns are NaN without a SESOI.

    Examples
    --------
    A latent log2 rank that depends on ``base__x`` and ``rich__z`` but not on
    ``noise__w``, seen only as brackets of width 1:

    >>> from analysis.datasets import EXAMPLE_MODELS, example_comparison_table
    >>> table = example_comparison_table()  # 80 cells of 20 heads, 6 heads held out
    >>> from analysis.compare import ComparisonSpec, NestedComparison
    >>> spec = ComparisonSpec(
    ...     models=EXAMPLE_MODELS, family=[("base", "rich"), ("base", "noisy")],
    ...     metrics=["interval_sq_loss"], n_boot=199, random_state=0,
    ... )
    >>> result = NestedComparison(spec).fit(table)
    >>> cols = ["pair", "effect", "ci_low", "p_holm", "adds_information", "n_heads"]
    >>> print(result.to_frame()[cols].round(2).to_string(index=False))
          pair  effect  ci_low  p_holm  adds_information  n_heads
     base<rich    0.23    0.08    0.01              True        6
    base<noisy   -0.04   -0.13    0.87             False        6
    >>> result.adds_information("base", "rich"), result.adds_information("base", "noisy")
    (True, False)
    """

    def __init__(self, spec: ComparisonSpec) -> None:
        if not isinstance(spec, ComparisonSpec):
            raise ParameterError("spec", "a ComparisonSpec", spec)
        self.spec = spec

    def fit(self, table: pd.DataFrame) -> ComparisonResult:
        """Run the comparison on ``table``.

        Parameters
        ----------
        table : pandas.DataFrame
            Columns ``cell_key``, ``cluster``, ``held_out``, ``y_lower``, ``y_upper`` and
            ``BLOCK__feature`` covariates; optionally ``stratum`` (constant within a
            cluster, e.g. the checkpoint of a per-checkpoint held-out draw). Held-out rows
            must be whole clusters.

        Returns
        -------
        ComparisonResult
        """
        spec = self.spec
        _check_columns(table)
        rng = check_random_state(spec.random_state)
        _check_pairs(table, spec)
        held, clusters, lower, upper = _check_table(table)
        used = list(dict.fromkeys(m for p in spec.pairs for m in p))
        prep = _prepare(table, spec, used, ~held, clusters)
        prep, out_of_range = _extrap.check_ranges(prep, held, spec.extrapolation)
        fits, cell_vals, preds = _fit_and_score(prep, used, spec, held, clusters, lower, upper)
        draws = _held_out_draws(table, clusters, held, spec.n_boot, rng, spec.resampling_unit)
        draws = crossed_draws(table, draws, held, rng) if spec.resample_inputs else draws
        mid_h = 0.5 * (lower[held] + upper[held])
        point, boot = _replicates(cell_vals, preds, used, mid_h, draws, metrics=spec.metrics)
        frame = _effect_rows(spec, fits, cell_vals, point, boot, draws, n_cells=int(held.sum()))
        refits = fixed = None
        if spec.refit_replicates and spec.refit_confirmatory:  # fit uncertainty in the CI
            refits = refit_effects(table, spec, rng=rng, refit=_refit)
            fixed = fixed_fit_rows(frame, spec)
            frame = refit_confirmatory(frame, refits[0], spec)
        frame = _decide(frame, spec)
        parts = [] if fixed is None else [fixed]
        if spec.checkpoint_effects and spec.sensitivities:
            parts.append(
                family_sensitivity(
                    table, frame, spec, scores=(cell_vals, preds, draws), rng=rng, refit=_refit
                )
            )
        if spec.refit_replicates and spec.sensitivities:
            parts.append(
                refit_bootstrap_rows(table, frame, spec, rng=rng, refit=_refit, replicates=refits)
            )
        units = clusters if spec.resampling_unit == "head" else table[spec.resampling_unit]
        tests = pair_tests(spec.method, spec.pairs, fits, prep, ~held, units, (lower, upper))
        # method 3 labels the sensitivity rows' CIs and p as unadjusted (secondary)
        sens = [p.assign(adjustment="unadjusted") for p in parts] if spec.method == 3 else parts
        return ComparisonResult(
            frame=frame.loc[:, [*RESULT_COLUMNS, *method_columns(spec.method)]],
            lr_tests=tests,
            dropped=prep.dropped,
            columns=dict(prep.columns),
            fits=fits,
            covariates=prep,
            **({"sensitivity": pd.concat(sens, ignore_index=True)} if sens else {}),
            spec=spec,
            held_out=_extrap.held_out_scores(table, held, out_of_range, prep, cell_vals, draws),
            sesoi_sensitivity=sesoi_sensitivity(frame, spec),
        )


def _refit(table: pd.DataFrame, spec: ComparisonSpec) -> ComparisonResult:
    """A sensitivity refit (:mod:`analysis.compare.offsets`, :mod:`analysis.compare.refit`)."""
    return NestedComparison(spec).fit(table)


def _prepare(
    table: pd.DataFrame,
    spec: ComparisonSpec,
    used: Sequence[str],
    train: np.ndarray,
    clusters: np.ndarray,
) -> PreparedCovariates:
    """The covariates of the models in ``used``, learned on ``train`` (with checkpoint
    effects when the spec asks for them)."""
    folds = spec.calibration.fold_labels(clusters, train)  # None, (n,) or (R, n)
    prep = prepare_covariates(
        table,
        {m: spec.models[m] for m in used},
        train,
        log_columns=spec.log_columns,
        calibrate_blocks=spec.calibrate_blocks,
        block_order=spec.block_order,
        diagnostic_columns=spec.diagnostic_columns,
        calibration_folds=folds,
    )
    if spec.checkpoint_effects:
        if STRATUM not in table.columns:
            raise ParameterError("table", f"a {STRATUM} column (checkpoint effects)", "missing")
        prep = add_checkpoint_effects(prep, table[STRATUM].astype(str).to_numpy(), train)
    return add_input_effects(prep, table, train) if spec.input_effects == "fixed" else prep


def _fit_and_score(
    prep: PreparedCovariates,
    used: Sequence[str],
    spec: ComparisonSpec,
    held: np.ndarray,
    clusters: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
) -> tuple[dict[str, FittedModel], dict[tuple[str, str], np.ndarray], dict[str, np.ndarray]]:
    """Fit each model on the training cells; its held-out predictions and per-cell metrics.

    Returns the fits and predictions by model and the per-cell values of the mean
    metrics by (model, metric).
    """
    train = ~held
    lo_h, up_h = lower[held], upper[held]
    fits: dict[str, FittedModel] = {}
    cell_vals: dict[tuple[str, str], np.ndarray] = {}
    preds: dict[str, np.ndarray] = {}
    for m in used:
        X = prep.matrices[m]
        fit = fit_estimator(
            spec.estimator,
            X[train],
            lower[train],
            upper[train],
            groups=clusters[train],
            maxiter=spec.maxiter,
        )
        fits[m] = fit
        yh = fit.predict(X[held])
        preds[m] = yh
        if "interval_sq_loss" in spec.metrics:
            cell_vals[(m, "interval_sq_loss")] = interval_sq_loss(yh, lo_h, up_h)
        if "interval_loglik" in spec.metrics:
            cell_vals[(m, "interval_loglik")] = interval_loglik(yh, fit.sigma, lo_h, up_h)
    return fits, cell_vals, preds


def _replicates(
    cell_vals: Mapping[tuple[str, str], np.ndarray],
    preds: Mapping[str, np.ndarray],
    used: Sequence[str],
    mid_h: np.ndarray,
    draws: _Draws,
    *,
    metrics: Sequence[str],
) -> tuple[dict[tuple[str, str], float], dict[tuple[str, str], np.ndarray]]:
    """Each (model, metric)'s value on the held-out cells and its bootstrap replicates."""
    boot: dict[tuple[str, str], np.ndarray] = {}
    point: dict[tuple[str, str], float] = {}
    for (m, met), v in cell_vals.items():
        point[(m, met)] = float(v.mean())
        boot[(m, met)] = replicate_means(v, draws.codes, draws.counts)
    if "spearman_mid" in metrics:
        for m in used:
            key = (m, "spearman_mid")
            point[key], boot[key] = spearman_replicates(preds[m], mid_h, draws.codes, draws.counts)
    return point, boot


def _effect_rows(
    spec: ComparisonSpec,
    fits: Mapping[str, FittedModel],
    cell_vals: Mapping[tuple[str, str], np.ndarray],
    point: Mapping[tuple[str, str], float],
    boot: Mapping[tuple[str, str], np.ndarray],
    draws: _Draws,
    *,
    n_cells: int,
) -> pd.DataFrame:
    """One row per (metric, pair): values, effect, CI and p, equivalence p at the SESOI,
    fit diagnostics; undecided (``p_holm`` NaN, ``adds_information`` False) and marked
    ``_in_family``."""
    rows = []
    ci_level, cal = spec.ci_level, spec.calibration
    for met in spec.metrics:
        sign = 1.0 if HIGHER_IS_BETTER[met] else -1.0
        for b, r in spec.pairs:
            eff = sign * (point[(r, met)] - point[(b, met)])
            sesoi = spec.sesoi_for(b, r, met)
            if spec.bootstrap == "studentized" and met != "spearman_mid":
                d = sign * (cell_vals[(r, met)] - cell_vals[(b, met)])
                d_h = np.bincount(draws.codes, weights=d, minlength=draws.n_units)
                args = (d_h, draws.head_sizes, draws.counts, draws.per_cluster)
                _, lo_ci, hi_ci, p = studentized_ci_and_p(*args, ci_level)
                p_sesoi = sesoi_columns(spec, sesoi, studentized=args)
            else:
                eff_b = sign * (boot[(r, met)] - boot[(b, met)])
                lo_ci, hi_ci, p = percentile_ci_and_p(eff_b, ci_level)
                p_sesoi = sesoi_columns(spec, sesoi, replicates=eff_b)
            rows.append(
                {
                    "pair": f"{b}<{r}",
                    "base_model": b,
                    "rich_model": r,
                    "metric": met,
                    "base_value": point[(b, met)],
                    "rich_value": point[(r, met)],
                    "effect": eff,
                    "ci_low": float(lo_ci),
                    "ci_high": float(hi_ci),
                    "p_value": float(p),
                    "p_holm": np.nan,
                    "adds_information": False,
                    "n_cells": n_cells,
                    "n_heads": draws.n_heads,
                    "lock_sha256": spec.lock_sha256,
                    **_fit_columns(fits[b], fits[r]),
                    "calibration": cal.mode,
                    "calibration_folds": cal.folds,
                    "calibration_seed": cal.seed,
                    "metric_role": "",
                    "sesoi": np.nan if sesoi is None else sesoi,
                    "sesoi_share": np.nan,
                    **p_sesoi,
                    "equivalence_p_holm": np.nan,
                    "decision": "",
                    "equivalence": NO_EQUIVALENCE if sesoi is None else spec.sesoi_source,
                    "_in_family": (b, r) in spec.family,
                }
            )
    return pd.DataFrame(rows)


def _decide(frame: pd.DataFrame, spec: ComparisonSpec) -> pd.DataFrame:
    """Holm within each metric over the family, then the decision rule and the
    equivalence decision (see Notes of :class:`NestedComparison`); drops the
    ``_in_family`` marker."""
    metrics, alpha = spec.metrics, spec.alpha
    ok = (frame["status"] == FIT_OK).to_numpy()
    # a failed pair stays in the family with p = 1 (see Notes)
    p_family = np.where(ok, frame["p_value"], 1.0)
    for met in metrics:
        sel = ((frame.metric == met) & frame["_in_family"]).to_numpy()
        frame.loc[sel, "p_holm"] = holm(p_family[sel])
    p_dec = np.where(frame["_in_family"], frame["p_holm"], frame["p_value"])
    frame["adds_information"] = (p_dec < alpha) & (frame["ci_low"] > 0) & ok
    frame = (decide_method3 if spec.method == 3 else decide_equivalence)(
        frame,
        in_family=frame["_in_family"].to_numpy(bool),
        ok=ok,
        metrics=metrics,
        primary_metric=spec.primary_metric,
        alpha=alpha,
    )
    return frame.drop(columns="_in_family")
