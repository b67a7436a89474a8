"""The power simulator's assumptions fitted to data the confirmatory cells never touch.

:func:`fit_assumptions` estimates what :class:`~analysis.power.inputs.PowerAssumptions`
leaves to the analyst from a table of **training** cells (a study's comparison table
without its held-out heads) or of a pilot (a separate input seed), and the **reference M0
loss** that the simulated studies' M0 loss at the null is checked against
(:func:`m0_loss_check`); what each is: docs/prereg.md, section "Fitting the simulator to
data". ``attnrank validate-comparison --fit`` reads a study's training table from its
store (:mod:`analysis.cli.power`; prereg reads no store).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis.power.result import FittedAssumptions
from analysis.power.tails import excess_kurtosis
from analysis.power.widths import StratumWidths
from analysis.validation import ParameterError, check_int

__all__ = ["TrainingCells", "fit_assumptions", "reference_m0_losses"]


def _layer_of(clusters: pd.Series) -> pd.Series:
    """``checkpoint:layer`` of head ids ``checkpoint:layer:head`` (the head id itself when
    it has no such form)."""
    parts = clusters.astype(str).str.rsplit(":", n=1)
    return parts.map(lambda p: p[0] if len(p) == 2 and ":" in p[0] else "|".join(p))


def _truth_position_moments(truth_position: tuple[float, float]) -> tuple[float, float]:
    a, b = truth_position
    mean = a / (a + b)
    var = a * b / ((a + b) ** 2 * (a + b + 1))
    return mean, var


def _bracket_variance(width: np.ndarray, truth_position: tuple[float, float]) -> float:
    """Variance of ``(1/2 - P) w`` over cells, P ~ Beta(a, b) independent of w."""
    mean_p, var_p = _truth_position_moments(truth_position)
    d = 0.5 - mean_p
    return float((var_p + d**2) * np.mean(width**2) - (d * np.mean(width)) ** 2)


def _mixed_components(
    resid: np.ndarray, heads: np.ndarray, layers: np.ndarray
) -> tuple[float, float, float, str]:
    """(layer, head, cell) variance components of residuals by REML."""
    import statsmodels.api as sm

    n_layers = len(np.unique(layers))
    data = pd.DataFrame({"r": resid, "head": heads, "layer": layers})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence chatter; the estimates are checked
        if 2 <= n_layers < len(np.unique(heads)):
            model = sm.MixedLM.from_formula(
                "r ~ 1",
                data,
                groups="layer",
                re_formula="1",
                vc_formula={"head": "0 + C(head)"},
            )
            res = _fit(model)
            layer_var = float(np.asarray(res.cov_re)[0, 0])
            head_var = float(res.vcomp[0])
            how = "(checkpoint, layer) random intercept + head variance component"
        else:
            res = _fit(sm.MixedLM(resid, np.ones((len(resid), 1)), groups=heads))
            layer_var, head_var = 0.0, float(np.asarray(res.cov_re)[0, 0])
            how = "head random intercept (the cells hold one layer, or one head per layer)"
    return max(layer_var, 0.0), max(head_var, 0.0), float(res.scale), how


def _fit(model: Any) -> Any:
    """REML fit, trying optimizers in turn (L-BFGS can step onto a singular point)."""
    err: Exception | None = None
    for method in ("bfgs", "lbfgs", "powell"):
        try:
            return model.fit(reml=True, method=method)
        except (np.linalg.LinAlgError, ValueError) as exc:
            err = exc
    raise ParameterError("table", "cells whose variance components can be fitted", str(err))


def _head_share(x: np.ndarray, heads: np.ndarray, baseline: np.ndarray) -> float:
    """Between-head share of one column's variance after the baseline (REML)."""
    import statsmodels.api as sm

    exog = np.column_stack([np.ones(len(x)), baseline])
    resid = x - exog @ np.linalg.lstsq(exog, x, rcond=None)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = _fit(sm.MixedLM(resid, np.ones((len(x), 1)), groups=heads))
    between = max(float(np.asarray(res.cov_re)[0, 0]), 0.0)
    total = between + float(res.scale)
    return between / total if total > 0 else float("nan")


def reference_m0_losses(
    table: pd.DataFrame,
    models: Mapping[str, Sequence[str]],
    pair: tuple[str, str],
    *,
    folds: int = 5,
    random_state: int = 0,
    comparison_kwargs: Mapping[str, Any] | None = None,
    covariate_kwargs: Mapping[str, Any] | None = None,
) -> tuple[dict[str, float], str]:
    """The base model's held-out loss on ``table``'s heads, by a cross-fit over them,
    overall (``"all"``) and per checkpoint stratum.

    Heads are assigned to ``folds`` folds within each stratum (permuted by
    ``numpy.random.default_rng(random_state)``, head j of a stratum to fold j mod K); each
    fold is held out in turn and :class:`~analysis.compare.NestedComparison` runs with the
    design's estimator and calibration on the rest, as the confirmatory run does on its
    held-out heads. The reference is the cell-weighted mean of the base model's
    ``interval_sq_loss`` over every cell (each predicted by the fold that held it out),
    and the same mean within each stratum.

    Returns
    -------
    (dict, str)
        The losses (``"all"`` and one per ``stratum`` value) and a sentence saying how
        they were computed.

    Examples
    --------
    >>> from analysis.datasets import EXAMPLE_MODELS, example_comparison_table
    >>> from analysis.power.fit import reference_m0_losses
    >>> table = example_comparison_table().drop(columns="held_out")
    >>> losses, how = reference_m0_losses(table, EXAMPLE_MODELS, ("base", "rich"), folds=3,
    ...                                   comparison_kwargs={"estimator": "ols"})
    >>> sorted(losses), bool(losses["all"] > 0), how[:28]
    (['all', 'ck-a', 'ck-b'], True, '3-fold cross-fit over the 20')
    """
    from analysis.compare import (
        ComparisonSpec,
        NestedComparison,
        held_out_predictions,
        interval_sq_loss,
    )

    folds = check_int("folds", folds, minimum=2)
    kw = dict(comparison_kwargs or {})
    # checkpoint effects change M0; resampling and sensitivities do not change its loss
    kw.update(refit_replicates=0, sensitivities=False, sesoi={})
    for k in ("family", "extra_pairs", "metrics", "primary_metric", "n_boot", "random_state"):
        kw.pop(k, None)
    base, rich = pair
    sub_models = {base: models[base], rich: models[rich]}
    heads = (
        table[["cluster"]]
        .assign(stratum=table["stratum"].astype(str) if "stratum" in table else "")
        .drop_duplicates("cluster")
    )
    rng = np.random.default_rng(random_state)
    fold_of = {}
    for _, g in heads.groupby("stratum", sort=True):
        hs = np.sort(g["cluster"].astype(str).to_numpy())
        for j, h in enumerate(rng.permutation(hs)):
            fold_of[h] = j % folds
    fold = table["cluster"].astype(str).map(fold_of).to_numpy()
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for k in range(folds):
        held = fold == k
        if not held.any():
            continue
        fold_table = table.assign(held_out=held)
        spec = ComparisonSpec(
            models=sub_models,
            family=[(base, rich)],
            metrics=("interval_sq_loss",),
            primary_metric="interval_sq_loss",
            n_boot=99,
            random_state=random_state,
            **kw,
            **dict(covariate_kwargs or {}),
        )
        res = NestedComparison(spec).fit(fold_table)
        pred = held_out_predictions(res, fold_table)
        pred = pred[pred["model"] == base]
        loss = interval_sq_loss(
            pred["y_hat"].to_numpy(float),
            pred["y_lower"].to_numpy(float),
            pred["y_upper"].to_numpy(float),
        )
        groups = [("all", np.ones(len(pred), dtype=bool))]
        if "stratum" in table:
            groups += [
                (str(c), (pred["checkpoint"] == c).to_numpy()) for c in pred["checkpoint"].unique()
            ]
        for key, sel in groups:
            sums[key] = sums.get(key, 0.0) + float(loss[sel].sum())
            counts[key] = counts.get(key, 0) + int(sel.sum())
    how = (
        f"{folds}-fold cross-fit over the {len(heads)} heads (folds within checkpoints), "
        f"{base}'s held-out interval_sq_loss with the design's estimator"
    )
    return {k: sums[k] / counts[k] for k in sums}, how


@dataclass(frozen=True, eq=False)
class TrainingCells:
    """Cells the simulator is fitted to, and how the design compares them.

    Attributes
    ----------
    table : pandas.DataFrame
        A comparison table of cells the confirmatory comparison never scores: no
        ``held_out`` column, or one that is False everywhere. ``cluster`` (head id,
        ``checkpoint:layer:head`` for the layer component, or a ``checkpoint_layer``
        column), ``stratum`` (checkpoint, optional), ``y_lower``, ``y_upper`` (log2),
        ``eps`` or ``baseline__eps`` (for the widths) and the models' ``block__feature``
        columns.
    models : mapping
        The design's models; ``pair[0]`` is the base model (its blocks are the
        covariates the residual is taken after).
    pair : (base, rich)
        The confirmatory pair: the base model's loss is the reference.
    source : str
        Recorded as :attr:`FittedAssumptions.source`.
    log_columns, covariate_kwargs
        As for :func:`~analysis.compare.prepare_covariates` (the registry's block order,
        calibrated blocks and diagnostics).
    comparison_kwargs : mapping or None
        The design's ``comparison_kwargs`` (estimator, calibration, options) for the
        reference M0 loss; None skips it (NaN).
    random_state : int
        Seed of the reference M0 loss's folds, of the calibration folds (and, in a
        study, of the scale calibration): the design's inference seed.
    input_seed : int or None
        The input seed of the study the cells come from (a pilot's is checked).
    """

    table: pd.DataFrame
    models: Mapping[str, Sequence[str]]
    pair: tuple[str, str] = ("M0", "M1")
    source: str = "a table of training cells"
    log_columns: Sequence[str] = ()
    covariate_kwargs: Mapping[str, Any] | None = None
    comparison_kwargs: Mapping[str, Any] | None = None
    random_state: int = 0
    input_seed: int | None = None


def fit_assumptions(
    cells: TrainingCells,
    *,
    truth_position: tuple[float, float] = (2.0, 1.0),
    eps: Sequence[float] | None = None,
    width_bins: int = 4,
    signal_block: str = "native",
    reference_folds: int = 5,
    pooled_strata: Sequence[str] = (),
) -> FittedAssumptions:
    """Fit the simulator's parameters to training (or pilot) cells.

    Parameters
    ----------
    cells : TrainingCells
        The table, the design's models, pair and comparison settings, the seed.
    truth_position : (a, b), keyword-only
        The Beta law of where the truth lies in its bracket (the simulator's), to take
        the bracket's part out of the midpoints' cell variance.
    eps : sequence of float, keyword-only
        The eps values of the widths (default: those of the table).
    width_bins : int, keyword-only
    signal_block : str, keyword-only
        The block whose columns' between-head share is fitted.
    reference_folds : int, keyword-only
        Folds of :func:`reference_m0_losses`.
    pooled_strata : sequence of str, keyword-only
        Strata of the simulated design that the cells do not hold (a checkpoint whose
        heads are all in the study, none left for its pilot: a design's ``[power]
        unpiloted = "pooled"``). Each gets the pooled fit: offset 0, residual scale 1,
        the widths of all cells and the pooled reference M0 loss, recorded as a stratum
        with 0 heads and a note. Default none (every stratum is fitted to its own cells).

    Returns
    -------
    FittedAssumptions

    Notes
    -----
    What is fitted and how (pooled least squares of the bracket midpoints on the base
    model's prepared covariates and checkpoint indicators, a ``statsmodels`` ``MixedLM``
    REML split of the residual, the bracket's part taken out of the cell component):
    docs/prereg.md, section "Fitting the simulator to data". The covariates are fitted
    pooled, as the base model is, rather than by the mixed model's GLS, which would lean on
    within-head variation and push their between-head part into the random effects (on
    MiniLM's training heads its components sum to 0.064 while the pooled fit leaves
    0.039); REML rather than moment estimators because the design is unbalanced (held-out
    heads removed, unequal layers) and the variance components are the quantity of
    interest. A checkpoint's offset (centred, head-weighted) is the part of its mean that
    a base model without checkpoint effects cannot absorb; its scale (the root of its
    cells' mean squared residual over the pooled one) is a starting value that
    :func:`~analysis.power.calibrate.calibrate_scales` fits to its reference M0 loss. The
    signal block's head share is taken after an OLS on the base columns.

    Examples
    --------
    A study simulated with known parameters, fitted back (its training cells only):

    >>> from analysis.datasets import example_widths
    >>> from analysis.power import (PowerAssumptions, SIMULATED_COVARIATES, StudySizes,
    ...                             simulate_study)
    >>> from analysis.power.fit import TrainingCells, fit_assumptions
    >>> sizes = StudySizes(n_heads=60, n_held_out=10, lengths=(64, 128), eps=(0.1,),
    ...                    temperatures=(0.5, 1.0, 2.0), inputs_per_length=2)
    >>> truth = PowerAssumptions(residual_sd=0.3, icc=0.6)
    >>> table = simulate_study(sizes, example_widths(), share=0.0, assumptions=truth,
    ...                        random_state=1)
    >>> train = table.loc[~table["held_out"]].drop(columns="held_out")
    >>> kw = dict(SIMULATED_COVARIATES)
    >>> models = {"M0": ["baseline"], "M1": ["baseline", "native"]}
    >>> fit = fit_assumptions(TrainingCells(train, models, log_columns=kw.pop("log_columns"),
    ...                                     covariate_kwargs=kw))
    >>> round(fit.residual_sd, 2), round(fit.icc, 2)  # truth 0.3, 0.6; 50 heads, 5 widths
    (0.33, 0.69)
    """
    from analysis.compare.covariates import head_folds, prepare_covariates

    table, models, pair, random_state = cells.table, cells.models, cells.pair, cells.random_state
    log_columns, covariate_kwargs = cells.log_columns, cells.covariate_kwargs
    if "held_out" in table.columns and table["held_out"].astype(bool).any():
        raise ParameterError(
            "table",
            "training or pilot cells only (no held-out cell may inform the simulator)",
            f"{int(table['held_out'].astype(bool).sum())} held-out cells",
        )
    for c in ("cluster", "y_lower", "y_upper"):
        if c not in table.columns:
            raise ParameterError("table", f"a column {c}", list(table.columns))
    base, rich = pair
    if base not in models or rich not in models:
        raise ParameterError("pair", "two models of models", pair)
    tab = table.reset_index(drop=True)
    if "stratum" not in tab:
        tab = tab.assign(stratum="all")
    heads = tab["cluster"].astype(str).to_numpy()
    n_heads = len(np.unique(heads))
    if n_heads < 6:
        raise ParameterError("table", "cells of at least 6 heads", n_heads)
    layers = (
        tab["checkpoint_layer"].astype(str).to_numpy()
        if "checkpoint_layer" in tab
        else _layer_of(tab["cluster"]).to_numpy()
    )
    strata = tab["stratum"].astype(str).to_numpy()
    lower, upper = tab["y_lower"].to_numpy(float), tab["y_upper"].to_numpy(float)
    mid, width = 0.5 * (lower + upper), upper - lower
    ck = dict(covariate_kwargs or {})
    train = np.ones(len(tab), dtype=bool)
    k_cal = min(5, n_heads)
    cal_folds = head_folds(heads, train, folds=k_cal, seed=random_state)
    fit_models = {"base": list(models[base])}
    has_signal = signal_block in models[rich] and any(
        c.startswith(signal_block + "__") for c in tab.columns
    )
    if has_signal:
        fit_models["signal"] = list(dict.fromkeys([*models[base], signal_block]))
    prep = prepare_covariates(
        tab,
        fit_models,
        train,
        log_columns=log_columns,
        calibration_folds=cal_folds if ck.get("calibrate_blocks") else None,
        **ck,
    )
    X = prep.matrices["base"]
    labels = sorted(set(strata))
    dummies = (
        np.column_stack([(strata == s).astype(float) for s in labels[1:]])
        if len(labels) > 1
        else np.zeros((len(tab), 0))
    )
    exog = np.column_stack([np.ones(len(tab)), X, dummies])
    # the base model is a pooled fit: its coefficients use the covariates' between-head
    # variation too, so they are fitted pooled (OLS) and only what they leave is split
    fe = np.linalg.lstsq(exog, mid, rcond=None)[0]
    layer_var, head_var, cell_var, how = _mixed_components(mid - exog @ fe, heads, layers)
    notes = []
    bracket_var = _bracket_variance(width, truth_position)
    cell_true = cell_var - bracket_var
    if cell_true <= 0.1 * cell_var:
        notes.append(
            f"the brackets' part ({bracket_var:.4g}) leaves less than 10% of the midpoints' "
            f"cell variance ({cell_var:.4g}); 10% kept"
        )
        cell_true = 0.1 * cell_var
    V = layer_var + head_var + cell_true
    icc = (layer_var + head_var) / V
    layer_share = layer_var / V

    # per checkpoint: offset (coefficient), residual scale (net of its bracket part)
    coef = np.concatenate([[0.0], fe[1 + X.shape[1] :]])  # first stratum is the reference
    head_strata = pd.Series(strata).groupby(heads).first()
    n_heads_s = head_strata.value_counts()
    w_heads = np.array([n_heads_s.get(s, 0) for s in labels], dtype=float)
    offsets = coef - np.average(coef, weights=w_heads)
    resid = mid - exog @ fe
    per = []
    # relative scales from the midpoints' residual mean squares: net of each checkpoint's
    # bracket part they collapse where that part exceeds the mean square (SmolLM2, MPNet),
    # so they are a start that power_calibrate fits to each checkpoint's M0 loss
    ms = {s: max(float(np.mean(resid[strata == s] ** 2)), 1e-12) for s in labels}
    pooled = np.average([ms[s] for s in labels], weights=[(strata == s).sum() for s in labels])
    for s, off in zip(labels, offsets, strict=True):
        sel = strata == s
        per.append(
            (
                s,
                int(n_heads_s.get(s, 0)),
                int(sel.sum()),
                float(off),
                float(np.sqrt(ms[s] / pooled)),
                float(np.mean(width[sel])),
            )
        )

    head_share = float("nan")
    if has_signal:
        cols = [c for c in prep.columns["signal"] if c.startswith(signal_block + "__")]
        idx = [prep.columns["signal"].index(c) for c in cols]
        Xs = prep.matrices["signal"]
        shares = [_head_share(Xs[:, j], heads, X) for j in idx]
        shares = [v for v in shares if np.isfinite(v)]
        if shares:
            head_share = float(np.median(shares))

    wframe = pd.DataFrame(
        {
            "stratum": strata,
            "eps": tab["eps" if "eps" in tab else "baseline__eps"].to_numpy(float),
            "lower": np.exp2(lower),
            "upper": np.exp2(upper),
            "width": width,
            "midpoint": mid,
        }
    )
    eps_values = sorted(set(wframe["eps"])) if eps is None else list(eps)
    widths = StratumWidths.from_frame(wframe, eps_values, n_bins=width_bins)
    pooled_only = sorted({str(x) for x in pooled_strata} - set(labels))
    if pooled_only:
        # a stratum without cells takes the pooled fit: every cell's widths, offset 0 (the
        # offsets are centred), scale 1 (the pooled residual), the pooled reference below
        extra = pd.concat([wframe.assign(stratum=label) for label in pooled_only])
        both = widths.models + StratumWidths.from_frame(extra, eps_values, n_bins=width_bins).models
        widths = StratumWidths(tuple(sorted(both, key=lambda m: m[0])))
        per += [(label, 0, 0, 0.0, 1.0, float(np.mean(width))) for label in pooled_only]
        notes.append(
            f"no cells of {', '.join(pooled_only)}: the pooled fit (offset 0, residual "
            "scale 1, every cell's widths, the pooled reference M0 loss)"
        )

    if cells.comparison_kwargs is not None:
        refs, ref_how = reference_m0_losses(
            table.drop(columns="held_out", errors="ignore"),
            models,
            pair,
            folds=reference_folds,
            random_state=random_state,
            comparison_kwargs=cells.comparison_kwargs,
            covariate_kwargs={**ck, "log_columns": tuple(log_columns)},
        )
        ref = refs["all"]
        by_stratum = tuple((k, float(v)) for k, v in refs.items() if k != "all")
        if pooled_only:  # every stratum named (one fitted stratum has only "all")
            known = dict(by_stratum)
            by_stratum = tuple((k, float(known.get(k, ref))) for k in [*labels, *pooled_only])
    else:
        ref, ref_how, by_stratum = float("nan"), "not computed", ()
    return FittedAssumptions(
        source=cells.source,
        n_heads=n_heads,
        n_cells=len(tab),
        residual_sd=float(np.sqrt(V)),
        icc=float(icc),
        layer_share=float(layer_share),
        native_head_share=head_share,
        strata=tuple(per),
        components=(
            ("layer", layer_var),
            ("head", head_var),
            ("cell", cell_var),
            ("bracket", bracket_var),
        ),
        reference_m0_loss=float(ref),
        reference_by_stratum=by_stratum,
        reference_method=ref_how,
        method=(
            "pooled least squares of bracket midpoints on the base model's prepared "
            "covariates and checkpoint indicators; statsmodels MixedLM (REML) of its "
            f"residual: {how}"
        ),
        notes=tuple(notes),
        widths=widths,
        residual_kurtosis=excess_kurtosis(resid),
    )
