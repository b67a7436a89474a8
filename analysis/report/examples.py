"""A small fixed :class:`~analysis.report.results.StudyResults` for the report's examples.

Like statsmodels' ``datasets`` this helper returns a toy study, written out by hand, that
the ``Examples`` sections of :mod:`analysis.report` start from, so each example states
only what it shows. Every number in it is given below, so the facts an example checks
(counts, medians, shares) can be worked out by hand from this docstring.

The study has one checkpoint ``ck`` (family ``bert``) with two heads ``ck:0:0`` and
``ck:0:1`` (the second held out), each with one input of length 8 at temperature 1 and
eps 0.1 and 0.2; and three synthetic ``ball`` cells (d = 2, n = 8, beta = 1, eps = 0.1,
seeds 0, 1 and 2). Brackets ``[lo, hi]``:

=========  ======  =====  ==========
cell       head    eps    [lo, hi]
=========  ======  =====  ==========
``r0``     0:0     0.1    [2, 4]
``r1``     0:0     0.2    [2, 2]
``r2``     0:1     0.1    [3, 3]
``r3``     0:1     0.2    [1, 2]
``s0``     --      0.1    [2, 3]
``s1``     --      0.1    [4, 5]
``s2``     --      0.1    [9, 10]
=========  ======  =====  ==========

The features of the real cells are ``native__kappa`` = 1, 2, 3, inf and the per-r
diagnostic ``intrinsic__q_r3`` = 0.5 each. The design has one confirmatory hypothesis
``H1`` (``M0`` < ``M1``), primary metric ``loss``, held-out list ``("ck:0:1",)``.
"""

from __future__ import annotations

import pandas as pd

from analysis.report.design import ReportDesign, ReportHypothesis
from analysis.report.results import BRACKET_COLUMNS, StudyResults

__all__ = ["example_results"]


def example_results() -> StudyResults:
    """The toy study of this module's docstring (four real cells, three synthetic).

    Returns
    -------
    StudyResults
        ``study="toy"``; no comparison, head-level, power or by-checkpoint result
        (each example adds what it needs with :func:`dataclasses.replace`).

    Examples
    --------
    >>> from analysis.report.examples import example_results
    >>> r = example_results()
    >>> r.brackets["source"].value_counts().to_dict(), r.design.held_out
    ({'checkpoint': 4, 'synthetic': 3}, ('ck:0:1',))
    """
    nan = float("nan")
    lo = [2, 2, 3, 1, 2, 4, 9]
    hi = [4, 2, 3, 2, 3, 5, 10]
    head_id = ["ck:0:0", "ck:0:0", "ck:0:1", "ck:0:1", "", "", ""]
    brackets = pd.DataFrame(
        {
            "cell_key": ["r0", "r1", "r2", "r3", "s0", "s1", "s2"],
            "matrix_key": ["m0", "m0", "m1", "m1", "b0", "b1", "b2"],
            "source": ["checkpoint"] * 4 + ["synthetic"] * 3,
            "checkpoint": ["ck"] * 4 + ["ball"] * 3,
            "family": ["bert"] * 4 + ["ball"] * 3,
            "head_id": head_id,
            "layer": 0,
            "head": [0, 0, 1, 1, 0, 0, 0],
            "input_id": "x",
            "length": 8,
            "temperature": 1.0,
            "eps": [0.1, 0.2, 0.1, 0.2, 0.1, 0.1, 0.1],
            "lo": lo,
            "hi": hi,
            "closed": [a == b for a, b in zip(lo, hi, strict=True)],
            "held_out": [h == "ck:0:1" for h in head_id],
            "d": [nan] * 4 + [2.0] * 3,
            "beta": [nan] * 4 + [1.0] * 3,
            "seed": [nan] * 4 + [0.0, 1.0, 2.0],
        },
        columns=list(BRACKET_COLUMNS),
    )
    features = pd.DataFrame(
        {
            "cell_key": ["r0", "r1", "r2", "r3"],
            "native__kappa": [1.0, 2.0, 3.0, float("inf")],
            "intrinsic__q_r3": [0.5] * 4,
        }
    )
    design = ReportDesign(
        hypotheses=(ReportHypothesis("H1", "confirmatory", "M0", "M1"),),
        primary_metric="loss",
        held_out=("ck:0:1",),
    )
    return StudyResults("toy", "Toy", design, brackets, features)
