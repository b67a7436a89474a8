"""Equivalence beside superiority: the decision vocabulary of a nested comparison.

A pair with a smallest effect size of interest (SESOI, :class:`~analysis.compare.spec.ComparisonSpec`) gets
a one-sided equivalence test on the same bootstrap replicates as its superiority test
(:func:`~analysis.compare.bootstrap.percentile_equivalence_p`,
:func:`~analysis.compare.bootstrap.studentized_equivalence_p`), Holm-adjusted over the
family within each metric as the superiority p is, and one of three decisions
(:data:`DECISIONS`). A pair without a SESOI keeps the superiority decision alone and its
equivalence columns are empty.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from statsmodels.stats.multitest import multipletests

from analysis.compare.metrics import HIGHER_IS_BETTER

__all__ = [
    "ADDS_INFORMATION",
    "DECISIONS",
    "EQUIVALENCE_COLUMNS",
    "EQUIVALENT",
    "INCONCLUSIVE",
    "NO_EQUIVALENCE",
    "NO_SESOI",
    "decide_equivalence",
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
            holm[sel] = multipletests(p_eq[sel], alpha=alpha, method="holm")[1]
    frame["equivalence_p_holm"] = holm
    p_dec = np.where(in_family, holm, p_eq)
    equivalent = has & ok & (p_dec < alpha)
    adds = frame["adds_information"].to_numpy(bool)
    frame["decision"] = np.where(
        adds,
        ADDS_INFORMATION,
        np.where(~has, NO_SESOI, np.where(equivalent, EQUIVALENT, INCONCLUSIVE)),
    )
    # the SESOI as a share of the base model's held-out loss (loss metrics only)
    loss = frame["metric"].map(lambda m: not HIGHER_IS_BETTER.get(m, True)).to_numpy(bool)
    base = frame["base_value"].to_numpy(float) if "base_value" in frame else np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        frame["sesoi_share"] = np.where(loss, frame["sesoi"].to_numpy(float) / base, np.nan)
    frame["metric_role"] = np.where(frame["metric"] == primary_metric, "primary", "secondary")
    return frame
