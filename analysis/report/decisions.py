"""The words of a hypothesis's decision in the report: superiority, then equivalence.

Method 2 (every locked study): the superiority rule (Holm p < alpha and CI lower end > 0)
decides "adds information". A (pair, metric) with a SESOI
(:mod:`analysis.compare.equivalence`) also gets its one-sided test at the SESOI, said
with the SESOI in loss units and as a share of M0's held-out loss, and whether the SESOI
was pre-specified or chosen after the outcomes (exploratory); the report keeps the words
those studies ran under.

Method 3 (a comparison with a ``non_superiority_p`` column): one decision of
:data:`analysis.compare.decisions.DECISIONS` per row, with the TOST and non-superiority
p values at the SESOI (:func:`method3_clause`), and one line on what each word means
(:func:`decision_meaning_lines`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from analysis.compare.decisions import DECISION_MEANINGS, DECISIONS
from analysis.report.tables import format_value

__all__ = [
    "decision_meaning_lines",
    "decision_words",
    "equivalence_clause",
    "is_method3",
    "method3_clause",
]

#: The column only a method-3 comparison has.
_METHOD3_COLUMN = "non_superiority_p"


def is_method3(frame: pd.DataFrame | None) -> bool:
    """Whether a stored comparison frame was decided under method 3.

    Parameters
    ----------
    frame : pandas.DataFrame or None
        A stored comparison (``comparison.csv``), or None when it has not run.

    Returns
    -------
    bool
        True when the frame has the method-3 column ``non_superiority_p``.

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.report.decisions import is_method3
    >>> is_method3(pd.DataFrame(columns=["decision", "non_superiority_p"])), is_method3(None)
    (True, False)
    """
    return frame is not None and _METHOD3_COLUMN in frame.columns


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


def method3_clause(row: Mapping[str, Any], *, in_family: bool) -> str:
    """The tail of a method-3 hypothesis sentence: the SESOI tests, then the decision.

    Parameters
    ----------
    row : mapping
        A comparison row with ``decision`` and, with a SESOI, ``sesoi``,
        ``sesoi_share``, ``equivalence`` (its source), ``equivalence_p`` (TOST),
        ``non_superiority_p`` and their ``_holm`` columns.
    in_family : bool, keyword-only
        Whether the pair is in the Holm family (else unadjusted p values are quoted).

    Returns
    -------
    str

    Examples
    --------
    >>> from analysis.report.decisions import method3_clause
    >>> row = {"sesoi": 0.001, "sesoi_share": float("nan"), "equivalence": "pre-specified",
    ...        "equivalence_p": 0.65, "equivalence_p_holm": 0.65, "non_superiority_p": 0.03,
    ...        "non_superiority_p_holm": 0.03, "decision": "non-superior only"}
    >>> print(method3_clause(row, in_family=True))
    ; at the pre-specified SESOI 0.001: TOST (-SESOI < effect < +SESOI) Holm p = 0.65, non-superiority (effect < +SESOI) Holm p = 0.03 → **non-superior only**
    >>> method3_clause({"sesoi": float("nan"), "decision": "harms"}, in_family=True)
    ' → **harms**'
    """
    decision = f" → **{row.get('decision', '')}**"
    if not _finite(row.get("sesoi")):
        return decision
    share = row.get("sesoi_share")
    share_text = f" ({float(share):.0%} of M0's loss)" if _finite(share) else ""

    def p(col: str) -> str:
        holm = row.get(f"{col}_holm")
        if in_family and _finite(holm):
            return f"Holm p = {format_value(holm)}"
        return f"unadjusted p = {format_value(row.get(col))}"

    source = str(row.get("equivalence") or "pre-specified")
    return (
        f"; at the {source} SESOI {format_value(row['sesoi'])}{share_text}: TOST "
        f"(-SESOI < effect < +SESOI) {p('equivalence_p')}, non-superiority "
        f"(effect < +SESOI) {p('non_superiority_p')}{decision}"
    )


def decision_meaning_lines() -> list[str]:
    """One markdown bullet per method-3 decision word: what it says.

    Examples
    --------
    >>> from analysis.report.decisions import decision_meaning_lines
    >>> lines = decision_meaning_lines()
    >>> len(lines), lines[1]
    (5, '- **harms**: the whole CI is below 0: the richer model predicts held-out cells worse.')
    """
    return [f"- **{d}**: {DECISION_MEANINGS[d]}" for d in DECISIONS]
