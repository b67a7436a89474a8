"""The decision vocabulary of method 3: one word per (pair, metric) of the Holm family.

:func:`decide` reads a comparison row's CI, its Holm-adjusted superiority p, its
Holm-adjusted two-sided equivalence (TOST) p and its Holm-adjusted one-sided
non-superiority p, and returns one of :data:`DECISIONS` (first match wins).
"""

from __future__ import annotations

__all__ = ["DECISIONS", "decide"]

#: The words a method-3 decision can take, in the order the rule tries them.
DECISIONS: tuple[str, ...] = (
    "adds information",
    "harms",
    "equivalent within SESOI",
    "non-superior only",
    "inconclusive",
)


def decide(
    *,
    ci_low: float,
    ci_high: float,
    p_holm: float,
    tost_p_holm: float | None,
    non_superiority_p_holm: float | None,
    alpha: float,
) -> str:
    """The decision of one row (first match wins).

    Parameters
    ----------
    ci_low, ci_high : float, keyword-only
        The effect's confidence interval (rich better than base when positive).
    p_holm : float, keyword-only
        Holm-adjusted one-sided p of ``effect <= 0``.
    tost_p_holm : float or None, keyword-only
        Holm-adjusted TOST p (``max`` of the two one-sided p's at -SESOI and +SESOI);
        None without a SESOI.
    non_superiority_p_holm : float or None, keyword-only
        Holm-adjusted one-sided p of ``effect >= SESOI``; None without a SESOI.
    alpha : float, keyword-only

    Returns
    -------
    str
        ``"adds information"`` if ``p_holm < alpha`` and ``ci_low > 0``; ``"harms"`` if
        ``ci_high < 0``; ``"equivalent within SESOI"`` if ``tost_p_holm < alpha``;
        ``"non-superior only"`` if ``non_superiority_p_holm < alpha``; else
        ``"inconclusive"``.

    Examples
    --------
    >>> from analysis.compare.decisions import decide
    >>> decide(ci_low=0.1, ci_high=0.3, p_holm=0.01, tost_p_holm=None,
    ...        non_superiority_p_holm=None, alpha=0.05)
    'adds information'
    >>> decide(ci_low=-0.01, ci_high=0.01, p_holm=0.5, tost_p_holm=0.01,
    ...        non_superiority_p_holm=0.01, alpha=0.05)
    'equivalent within SESOI'
    >>> decide(ci_low=-0.3, ci_high=0.01, p_holm=0.9, tost_p_holm=0.2,
    ...        non_superiority_p_holm=0.01, alpha=0.05)
    'non-superior only'
    """
    if p_holm < alpha and ci_low > 0:
        return DECISIONS[0]
    if ci_high < 0:
        return DECISIONS[1]
    if tost_p_holm is not None and tost_p_holm < alpha:
        return DECISIONS[2]
    if non_superiority_p_holm is not None and non_superiority_p_holm < alpha:
        return DECISIONS[3]
    return DECISIONS[4]
