"""The words of a hypothesis's decision in the report: superiority, then equivalence.

The superiority rule (Holm p < alpha and CI lower end > 0) decides "adds information". A
(pair, metric) with a SESOI (:mod:`analysis.compare.equivalence`) also gets its one-sided
equivalence test, said with the SESOI in loss units and as a share of M0's held-out loss,
and whether the SESOI was pre-specified or chosen after the outcomes (exploratory).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from analysis.report.tables import format_value

__all__ = ["decision_words", "equivalence_clause"]


def decision_words(row: Mapping[str, Any], *, alpha: float, in_family: bool) -> str:
    """The superiority decision of one comparison row, with why it was not taken.

    Examples
    --------
    >>> from analysis.report.decisions import decision_words
    >>> row = {"adds_information": False, "p_holm": 0.2, "p_value": 0.1, "ci_low": -0.01}
    >>> decision_words(row, alpha=0.05, in_family=True)
    'no incremental information detected (Holm p ≥ 0.05; the CI reaches 0 or below)'
    """
    if bool(row["adds_information"]):
        return "**adds information**"
    p = row["p_holm"] if in_family else row["p_value"]
    reasons = []
    if not (p < alpha):
        reasons.append(f"{'Holm' if in_family else 'unadjusted'} p ≥ {alpha:g}")
    if not (row["ci_low"] > 0):
        reasons.append("the CI reaches 0 or below")
    return "no incremental information detected" + (f" ({'; '.join(reasons)})" if reasons else "")


def _finite(v: Any) -> bool:
    try:
        return math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def equivalence_clause(row: Mapping[str, Any], *, in_family: bool) -> str:
    """``"; equivalence at SESOI ...: ... → decision"``, or ``""`` for a row without a SESOI.

    Examples
    --------
    >>> from analysis.report.decisions import equivalence_clause
    >>> row = {"sesoi": 0.0007, "sesoi_share": 0.05, "equivalence_p": 0.004,
    ...        "equivalence_p_holm": 0.008, "decision": "equivalent within SESOI",
    ...        "equivalence": "pre-specified"}
    >>> print(equivalence_clause(row, in_family=True))
    ; equivalence at the pre-specified SESOI 0.0007 (5% of M0's loss): Holm p = 0.008 → equivalent within SESOI
    >>> equivalence_clause({"sesoi": float("nan")}, in_family=True)
    ''
    """
    if not _finite(row.get("sesoi")):
        return ""
    share = row.get("sesoi_share")
    share_text = f" ({float(share):.0%} of M0's loss)" if _finite(share) else ""
    p_holm = row.get("equivalence_p_holm")
    if in_family and _finite(p_holm):
        p_text = f"Holm p = {format_value(p_holm)}"
    else:
        p_text = f"unadjusted p = {format_value(row.get('equivalence_p'))}"
    source = str(row.get("equivalence") or "pre-specified")
    return (
        f"; equivalence at the {source} SESOI {format_value(row['sesoi'])}{share_text}: "
        f"{p_text} → {row.get('decision', '')}"
    )
