"""Equivalence beside superiority: the decision vocabulary of a nested comparison.

Method 2 (the default; every locked design): a pair with a smallest effect size of
interest (SESOI, :class:`~analysis.compare.spec.ComparisonSpec`) gets a one-sided test of
``H0: effect >= SESOI`` on the same bootstrap replicates as its superiority test
(:func:`~analysis.compare.bootstrap.percentile_equivalence_p`,
:func:`~analysis.compare.bootstrap.studentized_equivalence_p`), Holm-adjusted over the
family within each metric as the superiority p is, and one of three decisions
(:data:`DECISIONS`). That one-sided test is a non-superiority test; method 2 keeps the
column name ``equivalence_p`` and the word "equivalent within SESOI" its locked studies
ran under. A pair without a SESOI keeps the superiority decision alone and its
equivalence columns are empty.

Method 3 (``spec.method == 3``): ``equivalence_p`` is the two-sided TOST p at the SESOI
(:func:`percentile_tost_p`, :func:`studentized_tost_p`), the one-sided p is
``non_superiority_p`` (:data:`METHOD3_COLUMNS`), and the decisions are those of
:func:`analysis.compare.decisions.decide` (:func:`decide_method3`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.compare.bootstrap import (
    cluster_se,
    percentile_equivalence_p,
    studentized_equivalence_p,
)
from analysis.compare.decisions import decide
from analysis.compare.metrics import HIGHER_IS_BETTER
from analysis.compare.multiplicity import holm as holm_adjust

__all__ = [
    "ADDS_INFORMATION",
    "DECISIONS",
    "EQUIVALENCE_COLUMNS",
    "EQUIVALENT",
    "INCONCLUSIVE",
    "METHOD3_COLUMNS",
    "NO_EQUIVALENCE",
    "NO_SESOI",
    "decide_equivalence",
    "decide_method3",
    "method_columns",
    "percentile_tost_p",
    "sesoi_p_values",
    "studentized_tost_p",
]

ADDS_INFORMATION = "adds information"
EQUIVALENT = "equivalent within SESOI"
INCONCLUSIVE = "inconclusive"
#: The decisions of a (pair, metric) with a SESOI.
DECISIONS: tuple[str, ...] = (ADDS_INFORMATION, EQUIVALENT, INCONCLUSIVE)
#: ``decision`` of a (pair, metric) without a SESOI that does not add information: no
#: equivalence test was made, so neither "equivalent" nor "inconclusive" is claimed.
NO_SESOI = "no SESOI"
#: ``equivalence`` of a row without a SESOI (else the SESOI's source, "pre-specified" or
#: "exploratory", :data:`analysis.compare.spec.SESOI_SOURCES`).
NO_EQUIVALENCE = "none"
#: Columns this module adds to the comparison's frame, after the older ones, in order.
EQUIVALENCE_COLUMNS: tuple[str, ...] = (
    "metric_role",
    "sesoi",
    "sesoi_share",
    "equivalence_p",
    "equivalence_p_holm",
    "decision",
    "equivalence",
)
#: Columns a method-3 comparison adds after :data:`EQUIVALENCE_COLUMNS`: the one-sided p
#: of ``H0: effect >= SESOI`` (method 2's ``equivalence_p``) and its Holm adjustment.
METHOD3_COLUMNS: tuple[str, ...] = ("non_superiority_p", "non_superiority_p_holm")


def method_columns(method: int) -> tuple[str, ...]:
    """The columns a comparison of ``method`` adds after ``RESULT_COLUMNS``.

    Parameters
    ----------
    method : {2, 3}
        The design's method.

    Returns
    -------
    tuple of str
        :data:`METHOD3_COLUMNS` under method 3, else none.

    Examples
    --------
    >>> from analysis.compare.equivalence import method_columns
    >>> method_columns(2), method_columns(3)
    ((), ('non_superiority_p', 'non_superiority_p_holm'))
    """
    return METHOD3_COLUMNS if method == 3 else ()


def decide_equivalence(
    frame: pd.DataFrame,
    *,
    in_family: np.ndarray,
    ok: np.ndarray,
    metrics: Sequence[str],
    primary_metric: str,
    alpha: float,
) -> pd.DataFrame:
    """Fill ``equivalence_p_holm``, ``decision``, ``sesoi_share`` and ``metric_role``.

    Parameters
    ----------
    frame : pandas.DataFrame
        Rows of the comparison after the superiority decision (``adds_information``),
        with ``sesoi`` and ``equivalence_p`` (NaN where no SESOI) and ``equivalence``.
    in_family : array of bool
        Rows of the Holm family.
    ok : array of bool
        Rows whose two fits converged.
    metrics : sequence of str
    primary_metric : str
    alpha : float

    Returns
    -------
    pandas.DataFrame
        The frame with the three columns filled (a copy).

    Notes
    -----
    The Holm adjustment (within each metric over the family rows with a SESOI, a failed
    fit counting with p = 1) and the decision rule (superiority first, so that
    ``decision`` never contradicts ``adds_information``): docs/prereg.md, section
    "Equivalence: a smallest effect size of interest (SESOI)". ``sesoi_share`` is
    ``sesoi / base_value`` for a loss metric, NaN otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from analysis.compare.equivalence import decide_equivalence
    >>> frame = pd.DataFrame({
    ...     "metric": ["loss"] * 3, "adds_information": [True, False, False],
    ...     "sesoi": [0.1, 0.1, np.nan], "equivalence_p": [0.9, 0.01, np.nan],
    ...     "equivalence": ["pre-specified", "pre-specified", "none"],
    ... })
    >>> out = decide_equivalence(
    ...     frame, in_family=np.array([True, True, False]), ok=np.ones(3, bool),
    ...     metrics=["loss"], primary_metric="loss", alpha=0.05,
    ... )
    >>> out["decision"].tolist()
    ['adds information', 'equivalent within SESOI', 'no SESOI']
    """
    frame = frame.copy()
    has = frame["sesoi"].notna().to_numpy()
    p_eq = np.where(ok, frame["equivalence_p"].to_numpy(float), 1.0)
    holm = np.full(len(frame), np.nan)
    for met in metrics:
        sel = (frame["metric"] == met).to_numpy() & in_family & has
        if sel.any():
            holm[sel] = holm_adjust(p_eq[sel])
    frame["equivalence_p_holm"] = holm
    p_dec = np.where(in_family, holm, p_eq)
    equivalent = has & ok & (p_dec < alpha)
    adds = frame["adds_information"].to_numpy(bool)
    frame["decision"] = np.where(
        adds,
        ADDS_INFORMATION,
        np.where(~has, NO_SESOI, np.where(equivalent, EQUIVALENT, INCONCLUSIVE)),
    )
    return _share_and_role(frame, primary_metric)


def _share_and_role(frame: pd.DataFrame, primary_metric: str) -> pd.DataFrame:
    """``sesoi_share`` (the SESOI as a share of the base model's held-out loss, loss
    metrics only) and ``metric_role``, set in ``frame``."""
    loss = frame["metric"].map(lambda m: not HIGHER_IS_BETTER.get(m, True)).to_numpy(bool)
    base = frame["base_value"].to_numpy(float) if "base_value" in frame else np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        frame["sesoi_share"] = np.where(loss, frame["sesoi"].to_numpy(float) / base, np.nan)
    frame["metric_role"] = np.where(frame["metric"] == primary_metric, "primary", "secondary")
    return frame


def _holm(p: np.ndarray, frame: pd.DataFrame, sel: np.ndarray, metrics):
    """Holm within each metric over the rows ``sel`` (NaN elsewhere)."""
    holm = np.full(len(frame), np.nan)
    for met in metrics:
        rows = (frame["metric"] == met).to_numpy() & sel
        if rows.any():
            holm[rows] = holm_adjust(p[rows])
    return holm


def percentile_tost_p(effects: np.ndarray, sesoi: float) -> tuple[float, float]:
    """The two one-sided percentile p values at ``-sesoi`` and ``+sesoi``.

    Parameters
    ----------
    effects : array (B,)
        The replicate effects (positive = the rich model helps).
    sesoi : float
        The SESOI (> 0), in the effect's units.

    Returns
    -------
    p_lower, p_upper : float
        ``p_lower = (1 + #{effect_b <= -sesoi}) / (B + 1)`` tests ``H0: effect <=
        -sesoi``; ``p_upper = (1 + #{effect_b >= sesoi}) / (B + 1)`` tests ``H0: effect
        >= sesoi`` (:func:`~analysis.compare.bootstrap.percentile_equivalence_p`). The
        TOST p is their maximum.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare.equivalence import percentile_tost_p
    >>> effects = np.arange(-10.0, 10.0)  # 20 replicates: -10 ... 9
    >>> [round(p, 4) for p in percentile_tost_p(effects, 8.0)]  # (1 + 3) / 21, (1 + 2) / 21
    [0.1905, 0.1429]
    """
    effects = np.asarray(effects, float)
    p_lower = float((1.0 + np.sum(effects <= -sesoi)) / (effects.size + 1.0))
    return p_lower, percentile_equivalence_p(effects, sesoi)


def studentized_tost_p(
    head_sums: np.ndarray,
    head_sizes: np.ndarray,
    counts: np.ndarray,
    strata: np.ndarray,
    sesoi: float,
) -> tuple[float, float]:
    """The two one-sided studentized (bootstrap-t) p values at ``-sesoi`` and ``+sesoi``.

    Parameters
    ----------
    head_sums, head_sizes, counts, strata : arrays
        As :func:`~analysis.compare.bootstrap.studentized_ci_and_p`.
    sesoi : float
        The SESOI (> 0), in the effect's units.

    Returns
    -------
    p_lower, p_upper : float

    Notes
    -----
    With ``effect``, ``se`` and ``t_b = (effect_b - effect) / se_b`` of
    :func:`~analysis.compare.bootstrap.studentized_ci_and_p`: ``p_lower`` tests ``H0:
    effect <= -sesoi`` with ``t = (effect + sesoi) / se``, ``p_lower = (1 + #{b : t_b
    >= t}) / (B + 1)``; ``p_upper`` is
    :func:`~analysis.compare.bootstrap.studentized_equivalence_p`.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare.bootstrap import bootstrap_counts
    >>> from analysis.compare.equivalence import studentized_tost_p
    >>> sums, sizes = np.array([2.0, 4.0, -1.0]), np.array([2.0, 2.0, 1.0])  # effect 1
    >>> counts = bootstrap_counts(3, 199, np.random.default_rng(0))
    >>> lower, upper = studentized_tost_p(sums, sizes, counts, np.zeros(3), 100.0)
    >>> lower < 0.05 and upper < 0.05  # 1 lies well inside (-100, 100)
    True
    >>> lower, upper = studentized_tost_p(sums, sizes, counts, np.zeros(3), 1.0)
    >>> lower < 0.05 < upper  # far above -1, not below +1
    True
    """
    head_sums = np.asarray(head_sums, float)
    head_sizes = np.asarray(head_sizes, float)
    (eff,), (se,) = cluster_se(head_sums, head_sizes, np.ones((1, head_sums.size)), strata)
    eff_b, se_b = cluster_se(head_sums, head_sizes, counts, strata)
    t_b = np.divide(eff_b - eff, se_b, out=np.zeros_like(eff_b), where=se_b > 0)
    d = eff + sesoi
    t_obs = d / se if se > 0 else np.copysign(np.inf, d) if d else 0.0
    p_lower = float((1.0 + np.sum(t_b >= t_obs)) / (t_b.size + 1.0))
    upper = studentized_equivalence_p(head_sums, head_sizes, counts, strata, sesoi)
    return p_lower, upper


def sesoi_p_values(
    method: int,
    sesoi: float | None,
    *,
    replicates: np.ndarray | None = None,
    studentized: tuple | None = None,
) -> dict[str, float]:
    """The SESOI p columns of one comparison row.

    Parameters
    ----------
    method : {2, 3}
        The design's method.
    sesoi : float or None
        The row's SESOI (None: no test, NaN p values).
    replicates : array or None, keyword-only
        The replicate effects (percentile tests).
    studentized : tuple or None, keyword-only
        ``(head_sums, head_sizes, counts, strata)`` (studentized tests); wins over
        ``replicates``.

    Returns
    -------
    dict
        Method 2: ``{"equivalence_p": one-sided p}``. Method 3: ``{"equivalence_p": TOST
        p, "non_superiority_p": one-sided p}``.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare.equivalence import sesoi_p_values
    >>> effects = np.arange(-10.0, 10.0)
    >>> {k: round(v, 4) for k, v in sesoi_p_values(3, 8.0, replicates=effects).items()}
    {'equivalence_p': 0.1905, 'non_superiority_p': 0.1429}
    >>> {k: round(v, 4) for k, v in sesoi_p_values(2, 8.0, replicates=effects).items()}
    {'equivalence_p': 0.1429}
    """
    if sesoi is None:
        out = {"equivalence_p": np.nan}
        return out if method != 3 else {**out, "non_superiority_p": np.nan}
    if method != 3:
        if studentized is not None:
            return {"equivalence_p": studentized_equivalence_p(*studentized, sesoi)}
        return {"equivalence_p": percentile_equivalence_p(replicates, sesoi)}
    if studentized is not None:
        lower, upper = studentized_tost_p(*studentized, sesoi)
    else:
        lower, upper = percentile_tost_p(replicates, sesoi)
    return {"equivalence_p": max(lower, upper), "non_superiority_p": upper}


def decide_method3(
    frame: pd.DataFrame,
    *,
    in_family: np.ndarray,
    ok: np.ndarray,
    metrics: Sequence[str],
    primary_metric: str,
    alpha: float,
) -> pd.DataFrame:
    """Method 3: Holm of the TOST and non-superiority p, and :func:`decide` per row.

    Parameters
    ----------
    frame : pandas.DataFrame
        Rows of the comparison after Holm of the superiority p (``p_holm``), with
        ``ci_low``, ``ci_high``, ``p_value``, ``sesoi``, ``equivalence_p`` (TOST) and
        ``non_superiority_p``.
    in_family, ok : array of bool
        Rows of the Holm family; rows whose two fits converged.
    metrics : sequence of str
    primary_metric : str
    alpha : float

    Returns
    -------
    pandas.DataFrame
        A copy with ``equivalence_p_holm``, ``non_superiority_p_holm``, ``decision``
        (:data:`analysis.compare.decisions.DECISIONS`), ``sesoi_share`` and
        ``metric_role`` filled.

    Notes
    -----
    Each SESOI p is Holm-adjusted within each metric over the family rows with a SESOI
    (a failed fit counting with p = 1), as the superiority p is; a pair outside the
    family decides on its unadjusted p values. A failed fit decides nothing
    ("inconclusive"). ``adds_information`` keeps its meaning and equals ``decision ==
    "adds information"``.

    Examples
    --------
    A CI wholly below 0, a TOST that rejects, a non-superiority test that rejects alone:

    >>> import numpy as np
    >>> import pandas as pd
    >>> from analysis.compare.equivalence import decide_method3
    >>> frame = pd.DataFrame({
    ...     "metric": ["loss"] * 3, "ci_low": [-0.3, -0.01, -0.2], "ci_high": [-0.1, 0.01, 0.01],
    ...     "p_value": [1.0, 0.4, 0.9], "p_holm": [1.0, 0.8, 1.0], "sesoi": [0.05] * 3,
    ...     "equivalence_p": [0.9, 0.001, 0.6], "non_superiority_p": [0.001, 0.001, 0.001],
    ...     "adds_information": [False] * 3,
    ... })
    >>> out = decide_method3(frame, in_family=np.ones(3, bool), ok=np.ones(3, bool),
    ...                      metrics=["loss"], primary_metric="loss", alpha=0.05)
    >>> out["decision"].tolist()
    ['harms', 'equivalent within SESOI', 'non-superior only']
    """
    frame = frame.copy()
    has = frame["sesoi"].notna().to_numpy()
    family = np.asarray(in_family, bool)
    p_dec = np.where(family, frame["p_holm"].to_numpy(float), frame["p_value"].to_numpy(float))
    used = {}
    for col in ("equivalence_p", "non_superiority_p"):
        p = np.where(ok, frame[col].to_numpy(float), 1.0)
        holm = _holm(p, frame, family & has, metrics)
        frame[f"{col}_holm"] = holm
        used[col] = np.where(family, holm, np.where(has, p, np.nan))
    lo = np.where(ok, frame["ci_low"].to_numpy(float), np.nan)
    hi = np.where(ok, frame["ci_high"].to_numpy(float), np.nan)
    frame["decision"] = [
        decide(
            ci_low=lo[i],
            ci_high=hi[i],
            p_holm=p_dec[i],
            tost_p_holm=used["equivalence_p"][i],
            non_superiority_p_holm=used["non_superiority_p"][i],
            alpha=alpha,
        )
        for i in range(len(frame))
    ]
    return _share_and_role(frame, primary_metric)
