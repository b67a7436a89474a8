"""The decisions of method 3: each word says what was tested.

Under a design's ``method = 3`` every (pair, metric) of a nested comparison gets one of
:data:`DECISIONS`, by :func:`decide`, from its CI, its superiority p, the two-sided TOST
p at its SESOI and the one-sided non-superiority p at its SESOI (all Holm-adjusted over
the family within each metric; an extra pair outside the family uses its unadjusted p).
Method 2 (the default, and every locked study) keeps the decisions of
:mod:`analysis.compare.equivalence`, whose one-sided test it calls "equivalence".

The p values of the SESOI tests come from the same bootstrap replicates as the
superiority test: :func:`~analysis.compare.equivalence.percentile_tost_p` and
:func:`~analysis.compare.equivalence.studentized_tost_p`.
"""

from __future__ import annotations

import math

__all__ = [
    "ADDS_INFORMATION",
    "DECISIONS",
    "DECISION_MEANINGS",
    "EQUIVALENT",
    "HARMS",
    "INCONCLUSIVE",
    "METHOD3_RULE",
    "NON_SUPERIOR",
    "decide",
]

ADDS_INFORMATION = "adds information"
HARMS = "harms"
EQUIVALENT = "equivalent within SESOI"
NON_SUPERIOR = "non-superior only"
INCONCLUSIVE = "inconclusive"
#: The method-3 decisions, in the order :func:`decide` tries them.
DECISIONS: tuple[str, ...] = (ADDS_INFORMATION, HARMS, EQUIVALENT, NON_SUPERIOR, INCONCLUSIVE)

#: One line per decision: what it says about the rich model's effect (the report and the
#: tables print these beside the words).
DECISION_MEANINGS: dict[str, str] = {
    ADDS_INFORMATION: "the effect is above 0: Holm p < alpha and the whole CI is above 0 "
    "(the richer model predicts held-out cells better).",
    HARMS: "the whole CI is below 0: the richer model predicts held-out cells worse.",
    EQUIVALENT: "two one-sided tests (TOST) at the SESOI both reject, Holm p < alpha: the "
    "effect lies between -SESOI and +SESOI.",
    NON_SUPERIOR: "only the one-sided test of effect < +SESOI rejects (Holm p < alpha): "
    "the block does not help by the SESOI, but it may harm by more than the SESOI; "
    "not equivalence.",
    INCONCLUSIVE: "none of the above: the data cannot tell these apart at this precision.",
}

#: The rule after "adds information", in one line (summaries).
METHOD3_RULE = (
    "harms = CI high < 0; equivalent within SESOI = TOST Holm p < alpha; "
    "non-superior only = one-sided (effect < +SESOI) Holm p < alpha"
)


def _below(p: float | None, alpha: float) -> bool:
    """``p < alpha`` for a finite p (None and NaN are no rejection)."""
    return p is not None and not math.isnan(float(p)) and float(p) < alpha


def decide(
    *,
    ci_low: float,
    ci_high: float,
    p_holm: float,
    tost_p_holm: float | None,
    non_superiority_p_holm: float | None,
    alpha: float,
) -> str:
    """The method-3 decision of one (pair, metric): one of :data:`DECISIONS`.

    Parameters
    ----------
    ci_low, ci_high : float, keyword-only
        The effect's confidence interval (positive effect = the rich model helps). NaN
        (a failed fit) never decides.
    p_holm : float, keyword-only
        The superiority p the decision uses (Holm-adjusted in the family; unadjusted
        for a pair outside it).
    tost_p_holm : float or None, keyword-only
        The two-sided TOST p at the SESOI, adjusted as ``p_holm``; None (or NaN) without
        a SESOI.
    non_superiority_p_holm : float or None, keyword-only
        The one-sided p of ``H0: effect >= SESOI``, adjusted as ``p_holm``; None (or NaN)
        without a SESOI.
    alpha : float, keyword-only
        The design's size.

    Returns
    -------
    str

    Notes
    -----
    First match wins:

    1. "adds information" if ``p_holm < alpha`` and ``ci_low > 0``;
    2. "harms" if ``ci_high < 0`` (the whole CI below 0);
    3. "equivalent within SESOI" if ``tost_p_holm < alpha``, where the TOST p is
       ``max(p_lower, p_upper)``: ``p_upper`` tests ``H0: effect >= +SESOI`` and
       ``p_lower`` tests ``H0: effect <= -SESOI``;
    4. "non-superior only" if ``non_superiority_p_holm < alpha`` (``p_upper`` alone:
       the effect is below +SESOI, while a harm beyond -SESOI is not excluded);
    5. "inconclusive" otherwise.

    Examples
    --------
    >>> from analysis.compare.decisions import decide
    >>> kw = dict(alpha=0.05, tost_p_holm=None, non_superiority_p_holm=None)
    >>> decide(ci_low=0.01, ci_high=0.03, p_holm=0.001, **kw)
    'adds information'
    >>> decide(ci_low=-0.03, ci_high=-0.01, p_holm=1.0, **kw)
    'harms'
    >>> decide(ci_low=-0.0004, ci_high=0.0005, p_holm=0.3, alpha=0.05,
    ...        tost_p_holm=0.01, non_superiority_p_holm=0.004)
    'equivalent within SESOI'
    >>> decide(ci_low=-0.0224, ci_high=0.0009, p_holm=0.9, alpha=0.05,
    ...        tost_p_holm=0.65, non_superiority_p_holm=0.03)
    'non-superior only'
    >>> decide(ci_low=-0.0224, ci_high=0.0009, p_holm=0.9, **kw)
    'inconclusive'
    """
    if _below(p_holm, alpha) and ci_low > 0:
        return ADDS_INFORMATION
    if ci_high < 0:
        return HARMS
    if _below(tost_p_holm, alpha):
        return EQUIVALENT
    if _below(non_superiority_p_holm, alpha):
        return NON_SUPERIOR
    return INCONCLUSIVE
