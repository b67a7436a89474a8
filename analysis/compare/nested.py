"""Nested model comparisons on held-out cells with a cluster bootstrap and Holm.

Input: a tidy table with ``cell_key``, ``cluster`` (head id), ``held_out`` (bool),
``y_lower``, ``y_upper`` (log2 interval ends) and ``BLOCK__feature`` columns, and
optionally ``stratum`` (the bootstrap then resamples held-out clusters within each
stratum). Models are fitted on training rows; metrics are computed on held-out rows.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.stats import chi2
from statsmodels.stats.multitest import multipletests

from analysis.compare.bootstrap import (
    _Draws,
    _held_out_draws,
    percentile_ci_and_p,
    percentile_equivalence_p,
    replicate_means,
    spearman_replicates,
    studentized_ci_and_p,
    studentized_equivalence_p,
)
from analysis.compare.covariates import (
    Calibration,
    PreparedCovariates,
    head_folds,
    model_feature_columns,
    prepare_covariates,
)
from analysis.compare.equivalence import EQUIVALENCE_COLUMNS, NO_EQUIVALENCE, decide_equivalence
from analysis.compare.estimators import FittedModel, fit_estimator
from analysis.compare.metrics import (
    HIGHER_IS_BETTER,
    METRICS,
    interval_loglik,
    interval_sq_loss,
)
from analysis.compare.nested_checks import (
    REQUIRED_COLUMNS,  # noqa: F401 (re-exported: analysis.compare.bycheckpoint)
    _check_columns,
    _check_settings,
    _check_table,
)
from analysis.compare.offsets import (
    SENSITIVITY_COLUMNS,
    add_checkpoint_effects,
    family_sensitivity,
)
from analysis.compare.options import ComparisonOptions
from analysis.compare.refit import refit_bootstrap_rows
from analysis.validation import ParameterError

__all__ = [
    "FIT_FAILED",
    "FIT_OK",
    "RESULT_COLUMNS",
    "ComparisonResult",
    "STRATUM",
    "check_nested",
    "compare_nested",
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
    """Result of :func:`compare_nested`.

    Attributes
    ----------
    frame : pandas.DataFrame
        One row per (pair, metric); use :meth:`to_frame` for a copy.
    lr_tests : pandas.DataFrame
        In-sample likelihood-ratio tests (secondary): ``pair``, ``base_model``,
        ``rich_model``, ``statistic``, ``df``, ``p_value``, ``status`` (as in ``frame``).
    dropped : pandas.DataFrame
        Constant or collinear columns dropped per model (``model``, ``column``,
        ``reason``).
    columns : dict
        Model -> kept covariate columns.
    estimator, primary_metric : str
    alpha : float
    n_boot : int
    lock_sha256 : str or None
        The locked design hash; None for an unlocked (exploratory or simulated) run.
    fits : dict
        Model -> :class:`~analysis.compare.estimators.FittedModel`.
    covariates : PreparedCovariates
        The covariate preparation the fits used: its calibration maps, training means and
        SDs, kept and dropped columns, and every row's design matrix (held-out rows
        included, built with what was learned on training rows).
    calibration : Calibration
        In-sample or cross-fitted by head (K folds, seed); also the frame's
        ``calibration`` (mode), ``calibration_folds`` and ``calibration_seed`` columns
        (None when in-sample).
    bootstrap : str
        ``"cluster"`` (percentile) or ``"studentized"`` (bootstrap-t).
    sensitivity : pandas.DataFrame
        Sensitivity rows (:data:`~analysis.compare.offsets.SENSITIVITY_COLUMNS`): with
        checkpoint effects (:class:`~analysis.compare.options.ComparisonOptions`) the
        checkpoint-equal estimand, leave-one-family-out and width-stratified rows; with
        ``refit_replicates`` the refit bootstrap (:mod:`analysis.compare.refit`); else
        empty.
    options : ComparisonOptions
        The options the comparison ran with.

    Examples
    --------
    Made by :func:`compare_nested`:

    >>> import numpy as np
    >>> import pandas as pd
    >>> from analysis.compare.nested import ComparisonResult, compare_nested
    >>> table = pd.DataFrame({
    ...     "cell_key": range(40), "cluster": np.repeat(range(10), 4),
    ...     "held_out": np.repeat(range(10), 4) >= 6, "base__x": np.arange(40.0) % 7,
    ...     "rich__z": np.arange(40.0) % 5,
    ... })
    >>> table["y_lower"] = table["base__x"] + table["rich__z"]
    >>> table["y_upper"] = table["y_lower"] + 1.0
    >>> result = compare_nested(
    ...     table, {"base": ["base"], "rich": ["base", "rich"]}, family=[("base", "rich")],
    ...     estimator="ols", n_boot=99, random_state=0,
    ... )
    >>> isinstance(result, ComparisonResult), result.columns["rich"]
    (True, ('base__x', 'rich__z'))
    >>> result.adds_information("base", "rich")  # y is base__x + rich__z + 0.5 exactly
    True
    """

    frame: pd.DataFrame = field(repr=False)
    lr_tests: pd.DataFrame = field(repr=False)
    dropped: pd.DataFrame = field(repr=False)
    columns: dict = field(repr=False)
    estimator: str
    primary_metric: str
    alpha: float
    n_boot: int
    lock_sha256: str | None
    fits: dict = field(repr=False)
    covariates: PreparedCovariates = field(repr=False)
    calibration: Calibration = field(default_factory=Calibration)
    bootstrap: str = "cluster"
    sensitivity: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=list(SENSITIVITY_COLUMNS)), repr=False
    )
    options: ComparisonOptions = field(default_factory=ComparisonOptions, repr=False)

    def to_frame(self) -> pd.DataFrame:
        """Tidy copy with the fixed columns of :data:`RESULT_COLUMNS`."""
        return self.frame.loc[:, list(RESULT_COLUMNS)].copy()

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
            f"over held-out {self.options.resampling_unit.replace('_', ' ')}s, B = {self.n_boot}; "
            f"alpha = {self.alpha}; "
            "adds information = Holm p < alpha and CI low > 0",
            f"calibration of calibrated blocks: {self.calibration.describe()}",
        ]
        for _, r in f.iterrows():
            if r.status == FIT_FAILED:
                mark = "FIT FAILED (no result)"
            else:
                mark = "ADDS INFORMATION" if r.adds_information else "no"
            if not np.isnan(r.sesoi):
                mark += (
                    f"; {r.metric_role} equivalence ({r.equivalence}) at SESOI {r.sesoi:.4g}"
                    + ("" if np.isnan(r.sesoi_share) else f" ({r.sesoi_share:.1%} of base)")
                    + ": "
                    f"p {r.equivalence_p:.4f}, {r.decision}"
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
        if self.options.checkpoint_effects:
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


def check_nested(
    columns: Sequence[str],
    models: Mapping[str, Sequence[str]],
    base: str,
    rich: str,
    *,
    name: str = "pairs",
    diagnostic_columns: Collection[str] = (),
) -> None:
    """Raise unless every covariate column of ``base`` is a column of ``rich``.

    ``diagnostic_columns`` are not covariates (see
    :func:`~analysis.compare.covariates.prepare_covariates`).

    Examples
    --------
    >>> from analysis.compare.nested import check_nested
    >>> columns = ["y_lower", "y_upper", "base__x", "rich__z"]
    >>> models = {"base": ["base"], "rich": ["base", "rich"]}
    >>> check_nested(columns, models, "base", "rich")  # nested: returns None
    >>> check_nested(columns, models, "rich", "base")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: pairs: expected a nested pair: base lacks column rich__z...
    """
    for m in (base, rich):
        if m not in models:
            raise ParameterError(name, "model names among " + ", ".join(models), m)
    bcols = model_feature_columns(columns, models[base], diagnostic_columns=diagnostic_columns)
    rcols = set(model_feature_columns(columns, models[rich], diagnostic_columns=diagnostic_columns))
    for c in bcols:
        if c not in rcols:
            raise ParameterError(
                name, f"a nested pair: {rich} lacks column {c} of {base}", (base, rich)
            )
    if len(rcols) == len(bcols):
        raise ParameterError(name, f"{rich} with a column more than {base}", (base, rich))


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


def _pair_list(name: str, pairs) -> list[tuple[str, str]]:
    out = []
    for p in pairs:
        if not isinstance(p, (tuple, list)) or len(p) != 2:
            raise ParameterError(name, "(base_model, rich_model) pairs", p)
        out.append((str(p[0]), str(p[1])))
    return out


def compare_nested(
    table: pd.DataFrame,
    models: Mapping[str, Sequence[str]],
    *,
    family: Sequence[tuple[str, str]],
    extra_pairs: Sequence[tuple[str, str]] = (),
    log_columns: Sequence[str] = (),
    estimator: str = "interval",
    metrics: Sequence[str] = METRICS,
    primary_metric: str = "interval_sq_loss",
    n_boot: int = 2000,
    alpha: float = 0.05,
    ci_level: float = 0.95,
    random_state: int | np.random.Generator | None = None,
    lock_sha256: str | None = None,
    calibrate_blocks: Sequence[str] = (),
    block_order: Sequence[str] = (),
    diagnostic_columns: Collection[str] = (),
    maxiter: int = 200,
    calibration: Calibration | None = None,
    bootstrap: str = "cluster",
    options: ComparisonOptions | None = None,
) -> ComparisonResult:
    """Fit nested models on training cells and compare them on held-out cells.

    Parameters
    ----------
    table : pandas.DataFrame
        Columns ``cell_key``, ``cluster``, ``held_out``, ``y_lower``, ``y_upper`` and
        ``BLOCK__feature`` covariates; optionally ``stratum`` (constant within a cluster,
        e.g. the checkpoint of a per-checkpoint held-out draw). Held-out rows must be
        whole clusters.
    models : mapping
        Model name -> block names.
    family : sequence of (base, rich), keyword-only
        The Holm family (pre-specified pairs).
    extra_pairs : sequence of (base, rich), keyword-only
        Sensitivity pairs outside the family: ``p_holm`` is NaN and the decision uses
        the unadjusted p.
    log_columns : sequence of str, keyword-only
        Positive scale features to enter as natural logs.
    estimator : {"interval", "ols", "ridge"}, keyword-only
    metrics : sequence of str, keyword-only
        Among ``interval_sq_loss``, ``interval_loglik``, ``spearman_mid``.
    primary_metric : str, keyword-only
    n_boot : int, keyword-only
        Bootstrap replicates B (>= 99).
    alpha : float, keyword-only
    ci_level : float, keyword-only
    random_state : int, Generator or None, keyword-only
        Seeds the bootstrap (the same resamples serve every pair and metric).
    lock_sha256 : str or None, keyword-only
        Stamped on every row (a confirmatory run passes the lock's hash).
    calibrate_blocks, block_order, diagnostic_columns : keyword-only
        Which blocks are calibrated, the order of blocks in the collinearity screen and
        which columns are never covariates; see
        :func:`~analysis.compare.covariates.prepare_covariates`. The defaults are neutral
        (no calibration, each model's own block order, no diagnostics); a study passes
        what its descriptor registry declares.
    maxiter : int, keyword-only
        Iteration cap of each interval fit (see
        :func:`~analysis.compare.estimators.fit_interval`); ignored by the closed-form
        ``ols`` and ``ridge``.
    calibration : Calibration or None, keyword-only
        How the maps of ``calibrate_blocks`` meet the training cells: None (default) or
        ``Calibration()`` in-sample; ``Calibration(folds=K, seed=S)`` cross-fitted by
        head (:func:`~analysis.compare.covariates.head_folds` over the training heads;
        held-out cells always use the maps fitted on all training cells). K larger than
        the number of training heads raises a ParameterError named ``calibration``.
    bootstrap : {"cluster", "studentized"}, keyword-only
        How the CI and p of the mean metrics are read from the resamples (the design's
        ``inference.bootstrap``): ``"cluster"`` percentile, ``"studentized"`` bootstrap-t
        (:func:`studentized_ci_and_p`). Spearman's CI is percentile in both.
    options : ComparisonOptions or None, keyword-only
        The options later designs may turn on (None: ``ComparisonOptions()``, which
        changes nothing): a SESOI per pair and metric (equivalence test and decision
        columns), checkpoint fixed effects, the resampling unit of the bootstrap
        (``resampling_unit``: ``"head"``, or a ``kv_group`` / ``checkpoint_layer`` column
        of the table, constant within each head) and the refit-bootstrap sensitivity.

    Returns
    -------
    ComparisonResult

    Notes
    -----
    For metric m with per-cell values ``v_i`` the model's value is the mean over
    held-out cells (Spearman: the rank correlation of ``y_hat`` with midpoints).
    Effect: ``base - rich`` for the loss, ``rich - base`` otherwise (positive = the rich
    model helps). Bootstrap: held-out heads are resampled with replacement B times
    (counts ``c_bh``), within each stratum when the table has a ``stratum`` column (each
    stratum keeps its number of held-out heads in every replicate; one stratum gives the
    unstratified draws exactly); replicate means are ``sum_h c_bh S_h / sum_h c_bh n_h`` with
    per-head sums ``S_h`` and sizes ``n_h``; fits are not refitted. CI: the
    ``(1 -/+ ci_level) / 2`` percentiles of the replicate effects. One-sided
    ``p = (1 + #{b : effect_b <= 0}) / (B + 1)``. Holm across ``family`` within each
    metric. Adds information: ``p_holm < alpha`` and ``ci_low > 0``. Secondary: the
    in-sample likelihood-ratio statistic ``2 (l_rich - l_base)`` against
    ``chi2(k_rich - k_base)`` (ignores clustering, so anti-conservative).

    Equivalence (:mod:`analysis.compare.equivalence`): for a (pair, metric) with a SESOI
    ``delta > 0`` in ``options``, the one-sided test of ``H0: effect >= delta`` on the
    same replicates: percentile ``p_eq = (1 + #{b : effect_b >= delta}) / (B + 1)``,
    studentized ``p_eq = (1 + #{b : t_b <= (effect - delta) / se}) / (B + 1)``; Holm
    across ``family`` within each metric; decision ``"adds information"`` (the rule
    above), else ``"equivalent within SESOI"`` (``p_eq`` (Holm) < alpha), else
    ``"inconclusive"``; ``"no SESOI"`` without one. ``sesoi``, ``equivalence_p`` and
    ``equivalence_p_holm`` are NaN without a SESOI and every older column is unchanged.

    Fit failures: each row carries both fits' ``converged``, ``iterations`` and
    ``grad_norm`` (:class:`~analysis.compare.estimators.FittedModel`). A pair with a fit
    that did not converge gets ``status = "fit failed"`` (else ``"ok"``) and
    ``adds_information = False``; its effect, CI and p are still computed and shown, but
    they are not a result. In Holm it keeps its place in the family with p = 1: the
    family stays the pre-specified size (dropping the pair would loosen the other
    pairs' adjustment after seeing a failure), and a p of 1 is never rejected, so it
    rejects nothing itself and its ``p_holm`` is 1.

    Examples
    --------
    A latent log2 rank that depends on ``base__x`` and ``rich__z`` but not on
    ``noise__w``, seen only as brackets of width 1:

    >>> from analysis.compare.examples import example_table
    >>> table = example_table()  # 80 cells of 20 heads, 6 heads held out
    >>> models = {"base": ["base"], "rich": ["base", "rich"], "noisy": ["base", "noise"]}
    >>> from analysis.compare.nested import compare_nested
    >>> result = compare_nested(
    ...     table, models, family=[("base", "rich"), ("base", "noisy")],
    ...     metrics=["interval_sq_loss"], n_boot=199, random_state=0,
    ... )
    >>> cols = ["pair", "effect", "ci_low", "p_holm", "adds_information", "n_heads"]
    >>> print(result.to_frame()[cols].round(2).to_string(index=False))
          pair  effect  ci_low  p_holm  adds_information  n_heads
     base<rich    0.23    0.08    0.01              True        6
    base<noisy   -0.04   -0.13    0.87             False        6
    >>> result.adds_information("base", "rich"), result.adds_information("base", "noisy")
    (True, False)
    """
    settings = dict(locals())  # the arguments, for the sensitivity refits
    del settings["table"], settings["models"], settings["options"]
    _check_columns(table)
    calibration, n_boot, maxiter, rng = _check_settings(
        estimator=estimator,
        metrics=metrics,
        primary_metric=primary_metric,
        bootstrap=bootstrap,
        n_boot=n_boot,
        maxiter=maxiter,
        alpha=alpha,
        ci_level=ci_level,
        random_state=random_state,
        calibration=calibration,
    )
    if options is None:
        options = ComparisonOptions()
    if not isinstance(options, ComparisonOptions):
        raise ParameterError("options", "a ComparisonOptions or None", options)
    family, extra_pairs = _check_pairs(
        list(table.columns), models, family, extra_pairs, diagnostic_columns=diagnostic_columns
    )
    held, clusters, lower, upper = _check_table(table)

    pairs = family + extra_pairs
    used = list(dict.fromkeys(m for p in pairs for m in p))
    train = ~held
    folds = (
        None
        if calibration.folds is None
        else head_folds(clusters, train, folds=calibration.folds, seed=calibration.seed)
    )
    prep = prepare_covariates(
        table,
        {m: models[m] for m in used},
        train,
        log_columns=log_columns,
        calibrate_blocks=calibrate_blocks,
        block_order=block_order,
        diagnostic_columns=diagnostic_columns,
        calibration_folds=folds,
    )
    if options.checkpoint_effects:
        if STRATUM not in table.columns:
            raise ParameterError("table", f"a {STRATUM} column (checkpoint effects)", "missing")
        prep = add_checkpoint_effects(prep, table[STRATUM].astype(str).to_numpy(), train)
    fits, cell_vals, preds = _fit_and_score(
        prep, used, estimator, held, clusters, lower, upper, metrics=metrics, maxiter=maxiter
    )
    draws = _held_out_draws(table, clusters, held, n_boot, rng, options.resampling_unit, STRATUM)
    mid_h = 0.5 * (lower[held] + upper[held])
    point, boot = _replicates(cell_vals, preds, used, mid_h, draws, metrics=metrics)
    frame = _effect_rows(
        pairs,
        family,
        fits,
        cell_vals,
        point,
        boot,
        draws,
        metrics=metrics,
        bootstrap=bootstrap,
        ci_level=ci_level,
        n_cells=int(held.sum()),
        lock_sha256=lock_sha256,
        calibration=calibration,
        options=options,
    )
    frame = _decide(frame, metrics=metrics, primary_metric=primary_metric, alpha=alpha)
    parts = []
    refit = {k: v for k, v in settings.items() if k != "random_state"}
    if options.checkpoint_effects and options.sensitivities:
        parts.append(
            family_sensitivity(
                table,
                models,
                frame,
                pairs=pairs,
                metrics=metrics,
                cell_vals=cell_vals,
                preds=preds,
                codes=draws.codes,
                counts=draws.counts,
                rng=rng,
                options=options,
                refit=refit,
                compare=compare_nested,
            )
        )
    if options.refit_replicates and options.sensitivities:
        parts.append(
            refit_bootstrap_rows(
                table, models, frame, rng=rng, options=options, refit=refit, compare=compare_nested
            )
        )
    sensitivity = pd.concat(parts, ignore_index=True) if parts else None
    return ComparisonResult(
        frame=frame.loc[:, list(RESULT_COLUMNS)],
        lr_tests=_lr_tests(pairs, fits),
        dropped=prep.dropped,
        columns=dict(prep.columns),
        estimator=estimator,
        primary_metric=primary_metric,
        alpha=float(alpha),
        n_boot=n_boot,
        lock_sha256=lock_sha256,
        fits=fits,
        covariates=prep,
        calibration=calibration,
        bootstrap=bootstrap,
        **({} if sensitivity is None else {"sensitivity": sensitivity}),
        options=options,
    )


def _check_pairs(
    columns: Sequence[str],
    models: Mapping[str, Sequence[str]],
    family: Sequence[tuple[str, str]],
    extra_pairs: Sequence[tuple[str, str]],
    *,
    diagnostic_columns: Collection[str],
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The family (at least one pair) and the extra pairs, each nested in ``columns``."""
    family = _pair_list("family", family)
    extra_pairs = _pair_list("extra_pairs", extra_pairs)
    if not family:
        raise ParameterError("family", "at least one pair", family)
    for i, (b, r) in enumerate(family):
        check_nested(
            columns, models, b, r, name=f"family[{i}]", diagnostic_columns=diagnostic_columns
        )
    for i, (b, r) in enumerate(extra_pairs):
        check_nested(
            columns, models, b, r, name=f"extra_pairs[{i}]", diagnostic_columns=diagnostic_columns
        )
    return family, extra_pairs


def _fit_and_score(
    prep: PreparedCovariates,
    used: Sequence[str],
    estimator: str,
    held: np.ndarray,
    clusters: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    metrics: Sequence[str],
    maxiter: int,
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
            estimator,
            X[train],
            lower[train],
            upper[train],
            groups=clusters[train],
            maxiter=maxiter,
        )
        fits[m] = fit
        yh = fit.predict(X[held])
        preds[m] = yh
        if "interval_sq_loss" in metrics:
            cell_vals[(m, "interval_sq_loss")] = interval_sq_loss(yh, lo_h, up_h)
        if "interval_loglik" in metrics:
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
    pairs: Sequence[tuple[str, str]],
    family: Sequence[tuple[str, str]],
    fits: Mapping[str, FittedModel],
    cell_vals: Mapping[tuple[str, str], np.ndarray],
    point: Mapping[tuple[str, str], float],
    boot: Mapping[tuple[str, str], np.ndarray],
    draws: _Draws,
    *,
    metrics: Sequence[str],
    bootstrap: str,
    ci_level: float,
    n_cells: int,
    lock_sha256: str | None,
    calibration: Calibration,
    options: ComparisonOptions,
) -> pd.DataFrame:
    """One row per (metric, pair): values, effect, CI and p, equivalence p at the SESOI,
    fit diagnostics; undecided (``p_holm`` NaN, ``adds_information`` False) and marked
    ``_in_family``."""
    rows = []
    for met in metrics:
        sign = 1.0 if HIGHER_IS_BETTER[met] else -1.0
        for b, r in pairs:
            eff = sign * (point[(r, met)] - point[(b, met)])
            sesoi = options.sesoi_for(b, r, met)
            p_eq = np.nan
            if bootstrap == "studentized" and met != "spearman_mid":
                d = sign * (cell_vals[(r, met)] - cell_vals[(b, met)])
                d_h = np.bincount(draws.codes, weights=d, minlength=draws.n_units)
                args = (d_h, draws.head_sizes, draws.counts, draws.per_cluster)
                _, lo_ci, hi_ci, p = studentized_ci_and_p(*args, ci_level)
                if sesoi is not None:
                    p_eq = studentized_equivalence_p(*args, sesoi)
            else:
                eff_b = sign * (boot[(r, met)] - boot[(b, met)])
                lo_ci, hi_ci, p = percentile_ci_and_p(eff_b, ci_level)
                if sesoi is not None:
                    p_eq = percentile_equivalence_p(eff_b, sesoi)
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
                    "lock_sha256": lock_sha256,
                    **_fit_columns(fits[b], fits[r]),
                    "calibration": calibration.mode,
                    "calibration_folds": calibration.folds,
                    "calibration_seed": calibration.seed,
                    "metric_role": "",
                    "sesoi": np.nan if sesoi is None else sesoi,
                    "sesoi_share": np.nan,
                    "equivalence_p": p_eq,
                    "equivalence_p_holm": np.nan,
                    "decision": "",
                    "equivalence": NO_EQUIVALENCE if sesoi is None else options.sesoi_source,
                    "_in_family": (b, r) in family,
                }
            )
    return pd.DataFrame(rows)


def _decide(
    frame: pd.DataFrame, *, metrics: Sequence[str], primary_metric: str, alpha: float
) -> pd.DataFrame:
    """Holm within each metric over the family, then the decision rule and the
    equivalence decision (see Notes of :func:`compare_nested`); drops the
    ``_in_family`` marker."""
    ok = (frame["status"] == FIT_OK).to_numpy()
    # a failed pair stays in the family with p = 1 (see Notes)
    p_family = np.where(ok, frame["p_value"], 1.0)
    for met in metrics:
        sel = ((frame.metric == met) & frame["_in_family"]).to_numpy()
        frame.loc[sel, "p_holm"] = multipletests(p_family[sel], alpha=alpha, method="holm")[1]
    p_dec = np.where(frame["_in_family"], frame["p_holm"], frame["p_value"])
    frame["adds_information"] = (p_dec < alpha) & (frame["ci_low"] > 0) & ok
    frame = decide_equivalence(
        frame,
        in_family=frame["_in_family"].to_numpy(bool),
        ok=ok,
        metrics=metrics,
        primary_metric=primary_metric,
        alpha=alpha,
    )
    return frame.drop(columns="_in_family")


def _lr_tests(pairs: Sequence[tuple[str, str]], fits: Mapping[str, FittedModel]) -> pd.DataFrame:
    """The in-sample likelihood-ratio test of each pair (secondary; see Notes)."""
    lr_rows = []
    for b, r in pairs:
        stat = 2.0 * (fits[r].loglik - fits[b].loglik)
        df = fits[r].n_params - fits[b].n_params
        lr_rows.append(
            {
                "pair": f"{b}<{r}",
                "base_model": b,
                "rich_model": r,
                "statistic": stat,
                "df": df,
                "p_value": float(chi2.sf(stat, df)) if df > 0 else np.nan,
                "status": _fit_columns(fits[b], fits[r])["status"],
            }
        )
    return pd.DataFrame(lr_rows)
