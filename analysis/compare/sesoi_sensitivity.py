"""SESOI sensitivity of method 3's decisions: the family decided again at half and at
twice the declared SESOI (a sensitivity analysis; it decides nothing).

Under ``method = 3`` each (pair, metric) with a SESOI ``delta`` gets, on the same
bootstrap replicates (or studentized inputs) as its confirmatory p values and while they
still exist, the two-sided TOST p and the one-sided non-superiority p at ``delta / 2``
and at ``2 delta`` as well (:func:`sesoi_columns`; kept in the undecided frame under
names that start with ``_``, which ``ComparisonResult.to_frame()`` never shows). Like the
other sensitivities it needs ``spec.sensitivities`` (the refits of a refit bootstrap run
without it, and without these p values). After
the confirmatory decision, :func:`sesoi_sensitivity` Holm-adjusts each margin's p values
over the confirmatory family within each metric, as at ``delta``, and decides every
family row with a SESOI by :func:`analysis.compare.decisions.decide` (through
:func:`~analysis.compare.equivalence.decide_method3`). At factor 1 the rows are the
confirmatory decisions themselves. Method 2 computes none of this.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysis.compare.equivalence import decide_method3, sesoi_p_values
from analysis.compare.spec import ComparisonSpec
from analysis.validation import ParameterError

__all__ = [
    "SESOI_FACTORS",
    "SESOI_SENSITIVITY_COLUMNS",
    "refit_sesoi_columns",
    "sesoi_columns",
    "sesoi_sensitivity",
    "wanted",
]

#: The multiples of the declared SESOI the sensitivity decides at (1: the confirmatory).
SESOI_FACTORS: tuple[float, ...] = (0.5, 1.0, 2.0)
#: Columns of :func:`sesoi_sensitivity`'s table, one row per (pair, metric, factor).
SESOI_SENSITIVITY_COLUMNS: tuple[str, ...] = (
    "pair",
    "base_model",
    "rich_model",
    "metric",
    "metric_role",
    "status",
    "sesoi_factor",
    "sesoi",
    "ci_low",
    "ci_high",
    "p_holm",
    "equivalence_p",
    "equivalence_p_holm",
    "non_superiority_p",
    "non_superiority_p_holm",
    "decision",
)
_P_COLUMNS = ("equivalence_p", "non_superiority_p")


def _scaled(column: str, factor: float) -> str:
    """The hidden column of ``column`` at ``factor`` times the SESOI."""
    return f"_{column}_at_{factor:g}"


def wanted(spec: ComparisonSpec) -> bool:
    """Whether a comparison of ``spec`` makes the SESOI sensitivity: under method 3 with
    ``sensitivities`` (a refit of the refit bootstrap runs without).

    Parameters
    ----------
    spec : ComparisonSpec

    Returns
    -------
    bool

    Examples
    --------
    >>> from dataclasses import replace
    >>> from analysis.compare import ComparisonSpec
    >>> from analysis.compare.sesoi_sensitivity import wanted
    >>> spec = ComparisonSpec(models={"a": ["x"], "b": ["x", "y"]}, family=[("a", "b")])
    >>> wanted(spec), wanted(replace(spec, method=3))
    (False, True)
    >>> wanted(replace(spec, method=3, sensitivities=False))
    False
    """
    return spec.method == 3 and bool(spec.sensitivities)


def sesoi_columns(spec: ComparisonSpec, sesoi: float | None, **inputs: Any) -> dict[str, float]:
    """``sesoi_p_values(spec.method, sesoi, **inputs)``
    (:func:`~analysis.compare.equivalence.sesoi_p_values`), and where :func:`wanted`
    the same p values at every other factor of :data:`SESOI_FACTORS`, from the same
    inputs.

    Parameters
    ----------
    spec : ComparisonSpec
        The comparison's settings (its ``method`` and ``sensitivities``).
    sesoi : float or None
        The row's declared SESOI, which the factors multiply (None: NaN p values).
    **inputs
        ``replicates=`` or ``studentized=``, as ``sesoi_p_values`` takes them.

    Returns
    -------
    dict
        ``sesoi_p_values``'s, and where :func:`wanted` also ``_equivalence_p_at_F`` and
        ``_non_superiority_p_at_F`` for each factor ``F`` other than 1, the TOST and
        non-superiority p at ``F * sesoi``.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare import ComparisonSpec
    >>> from analysis.compare.sesoi_sensitivity import sesoi_columns
    >>> spec = ComparisonSpec(models={"a": ["x"], "b": ["x", "y"]}, family=[("a", "b")],
    ...                       method=3)
    >>> effects = np.arange(-10.0, 10.0)  # 20 replicates: -10 ... 9
    >>> out = sesoi_columns(spec, 4.0, replicates=effects)
    >>> # at 2 x 4: p_lower = (1 + #{<= -8}) / 21 = 4 / 21, p_upper = (1 + #{>= 8}) / 21
    >>> round(out["_equivalence_p_at_2"], 4), round(out["_non_superiority_p_at_2"], 4)
    (0.1905, 0.1429)
    >>> spec2 = ComparisonSpec(models={"a": ["x"], "b": ["x", "y"]}, family=[("a", "b")])
    >>> sesoi_columns(spec2, 4.0, replicates=effects).keys()  # method 2
    dict_keys(['equivalence_p'])
    """
    out = sesoi_p_values(spec.method, sesoi, **inputs)
    if not wanted(spec):
        return out
    for factor in SESOI_FACTORS:
        if factor != 1.0:
            at = None if sesoi is None else factor * sesoi
            p = sesoi_p_values(3, at, **inputs)
            out.update({_scaled(col, factor): p[col] for col in _P_COLUMNS})
    return out


def refit_sesoi_columns(spec: ComparisonSpec, sesoi: float | None, effects: np.ndarray) -> dict:
    """The hidden columns of :func:`sesoi_columns` from refitted effects (the
    confirmatory refit bootstrap), read as
    :func:`~analysis.compare.bootstrap.replicate_summary` reads them.

    Parameters
    ----------
    spec : ComparisonSpec
        The comparison's settings (nothing unless :func:`wanted`).
    sesoi : float or None
        The row's SESOI.
    effects : array
        The refitted point effects; the finite ones count, and without any the p
        values are NaN.

    Returns
    -------
    dict
        Only the ``_``-prefixed columns (empty unless :func:`wanted`).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare import ComparisonSpec
    >>> from analysis.compare.sesoi_sensitivity import refit_sesoi_columns
    >>> spec = ComparisonSpec(models={"a": ["x"], "b": ["x", "y"]}, family=[("a", "b")],
    ...                       method=3)
    >>> out = refit_sesoi_columns(spec, 4.0, np.array([np.nan, *np.arange(-10.0, 10.0)]))
    >>> round(out["_equivalence_p_at_2"], 4)
    0.1905
    >>> bool(np.isnan(refit_sesoi_columns(spec, 4.0, np.array([np.nan]))["_equivalence_p_at_2"]))
    True
    """
    eff = np.asarray(effects, float)
    eff = eff[np.isfinite(eff)]
    out = sesoi_columns(spec, sesoi if eff.size else None, replicates=eff)
    return {k: v for k, v in out.items() if k.startswith("_")}


def sesoi_sensitivity(frame: pd.DataFrame, spec: ComparisonSpec) -> pd.DataFrame | None:
    """The family's method-3 decisions at each factor of :data:`SESOI_FACTORS`.

    Parameters
    ----------
    frame : pandas.DataFrame
        The comparison's decided rows (``p_holm``, ``p_value``, ``ci_low``,
        ``ci_high``, ``status``, ``sesoi``, the SESOI p columns) with the hidden
        columns of :func:`sesoi_columns`.
    spec : ComparisonSpec
        The comparison's settings: ``method``, ``family``, ``metrics``,
        ``primary_metric`` and ``alpha``.

    Returns
    -------
    pandas.DataFrame or None
        None unless :func:`wanted` (method 3, ``spec.sensitivities``); else :data:`SESOI_SENSITIVITY_COLUMNS`, per
        family (pair, metric) with a SESOI (in the frame's order) one row per factor:
        ``sesoi`` is the factor times the declared SESOI, the p values are those at it,
        Holm-adjusted within each metric over the family rows with a SESOI (a failed
        fit counting with p = 1), and ``decision`` is
        :func:`~analysis.compare.equivalence.decide_method3`'s. The CI and the
        superiority ``p_holm`` are the confirmatory ones at every factor.

    Examples
    --------
    A block that carries nothing, at a SESOI whose double its CI (-0.126, 0.017) lies
    within (the TOST at 2 x 0.05 rejects) and whose half it does not:

    >>> from analysis.compare import ComparisonSpec, NestedComparison
    >>> from analysis.datasets import EXAMPLE_MODELS, example_comparison_table
    >>> spec = ComparisonSpec(
    ...     models=EXAMPLE_MODELS, family=[("base", "noisy")], metrics=["interval_sq_loss"],
    ...     n_boot=199, random_state=0, method=3,
    ...     sesoi={"base<noisy": {"interval_sq_loss": 0.05}},
    ... )
    >>> result = NestedComparison(spec).fit(example_comparison_table())
    >>> cols = ["sesoi_factor", "sesoi", "equivalence_p_holm", "decision"]
    >>> print(result.sesoi_sensitivity[cols].to_string(index=False))
     sesoi_factor  sesoi  equivalence_p_holm                decision
              0.5  0.025               0.695       non-superior only
              1.0  0.050               0.355       non-superior only
              2.0  0.100               0.045 equivalent within SESOI
    >>> result.to_frame()["decision"].iloc[0]  # factor 1 is the confirmatory decision
    'non-superior only'
    """
    if not isinstance(spec, ComparisonSpec):
        raise ParameterError("spec", "a ComparisonSpec", type(spec).__name__)
    if not wanted(spec):
        return None
    pairs = zip(frame["base_model"], frame["rich_model"], strict=True)
    family = np.array([(b, r) in spec.family for b, r in pairs], dtype=bool)
    ok = (frame["status"] == "ok").to_numpy()  # analysis.compare.nested.FIT_OK
    keep = family & frame["sesoi"].notna().to_numpy()
    parts = []
    for factor in SESOI_FACTORS:
        scaled = frame.assign(sesoi=frame["sesoi"] * factor)
        if factor != 1.0:
            for col in _P_COLUMNS:
                scaled[col] = frame[_scaled(col, factor)]
        decided = decide_method3(
            scaled,
            in_family=family,
            ok=ok,
            metrics=spec.metrics,
            primary_metric=spec.primary_metric,
            alpha=spec.alpha,
        )
        parts.append(decided.loc[keep].assign(sesoi_factor=factor, _row=np.flatnonzero(keep)))
    out = pd.concat(parts, ignore_index=True).sort_values(["_row", "sesoi_factor"], kind="stable")
    return out.loc[:, list(SESOI_SENSITIVITY_COLUMNS)].reset_index(drop=True)
