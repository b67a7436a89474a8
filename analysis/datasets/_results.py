"""Study results for the report and a hand-made atlas: the fixtures of :mod:`analysis.report`
and :mod:`analysis.atlas`.

They are made-up tables of a few cells with every number given in the docstrings, so the
facts an example checks (counts, medians, shares) can be worked out by hand.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pandas as pd

from analysis.atlas.schema import conform, derive_columns
from analysis.report.design import ReportDesign, ReportHypothesis
from analysis.report.results import BRACKET_COLUMNS, StudyResults

__all__ = [
    "example_atlas",
    "example_checkpoint_results",
    "example_report_design",
    "example_study_results",
    "example_table_results",
]


def example_report_design(**fields: Any) -> ReportDesign:
    """A report design with one confirmatory hypothesis, H1: ``M0`` against ``M1``.

    Parameters
    ----------
    **fields
        Further :class:`~analysis.report.design.ReportDesign` fields, e.g. ``family``.

    Returns
    -------
    ReportDesign
        Its other fields at their defaults (no Holm family unless ``family`` is given).

    Examples
    --------
    >>> from analysis.datasets import example_report_design
    >>> d = example_report_design(alpha=0.05)
    >>> [(h.id, h.kind, h.base, h.rich) for h in d.hypotheses], d.alpha
    ([('H1', 'confirmatory', 'M0', 'M1')], 0.05)
    """
    return ReportDesign(hypotheses=(ReportHypothesis("H1", "confirmatory", "M0", "M1"),), **fields)


def example_study_results(**fields: Any) -> StudyResults:
    """Six real cells of one checkpoint and length, two heads, one cell with lo = 0.

    The cells ``a`` to ``f`` of ``org/a`` (family ``bert``) at N = 16: heads ``h1`` and
    ``h2``, eps 0.1 and 0.2 at t = 1 and eps 0.1 at t = 2; brackets
    ``lo = [2, 3, 1, 4, 0, 5]``, ``hi = [4, 3, 2, 8, 2, 6]`` (cell ``b`` closed, cell
    ``e`` with lo = 0); every other cell held out. One descriptor, ``native__kappa``
    = 1 to 6.

    Parameters
    ----------
    **fields
        :class:`~analysis.report.results.StudyResults` fields that replace the defaults
        (``design`` is ``ReportDesign()``; the optional results are unset).

    Returns
    -------
    StudyResults

    Examples
    --------
    >>> from analysis.datasets import example_study_results
    >>> r = example_study_results()
    >>> len(r.brackets), int(r.brackets["closed"].sum()), list(r.features.columns)
    (6, 1, ['cell_key', 'native__kappa'])
    """
    keys = list("abcdef")
    brackets = pd.DataFrame(
        {
            "cell_key": keys,
            "source": "checkpoint",
            "family": "bert",
            "checkpoint": "org/a",
            "head_id": ["h1", "h1", "h2", "h2", "h1", "h2"],
            "length": 16,
            "lo": [2, 3, 1, 4, 0, 5],
            "hi": [4, 3, 2, 8, 2, 6],
            "eps": [0.1, 0.2] * 2 + [0.1] * 2,
            "temperature": [1.0] * 4 + [2.0] * 2,
            "held_out": [False, True] * 3,
            "beta": None,
        }
    )
    brackets["closed"] = brackets["lo"] == brackets["hi"]
    features = pd.DataFrame({"cell_key": keys, "native__kappa": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    return replace(StudyResults("t", "T", ReportDesign(), brackets, features), **fields)


def example_checkpoint_results(**fields: Any) -> StudyResults:
    """Four real cells of two checkpoints at three lengths, one cell with lo = 0.

    The cells ``a`` to ``d``: ``org/a`` at N = 16 and 32, ``org/b`` at N = 16 and 64,
    one head each (``w`` to ``z``), t = 1; brackets ``lo = [2, 3, 4, 0]``,
    ``hi = [8, 3, 4, 2]`` at eps ``[0.1, 0.1, 0.2, 0.1]``. No descriptors.

    Parameters
    ----------
    **fields
        As for :func:`example_study_results`.

    Returns
    -------
    StudyResults
        Titled ``Toy`` (study ``toy``), with an empty features table.

    Examples
    --------
    >>> from analysis.datasets import example_checkpoint_results
    >>> r = example_checkpoint_results()
    >>> r.brackets.groupby("checkpoint")["length"].apply(list).to_dict()
    {'org/a': [16, 32], 'org/b': [16, 64]}
    """
    brackets = pd.DataFrame(
        {
            "cell_key": list("abcd"),
            "source": ["checkpoint"] * 4,
            "checkpoint": ["org/a", "org/a", "org/b", "org/b"],
            "length": [16, 32, 16, 64],
            "head_id": list("wxyz"),
            "lo": [2, 3, 4, 0],
            "hi": [8, 3, 4, 2],
            "eps": [0.1, 0.1, 0.2, 0.1],
            "temperature": [1.0] * 4,
        }
    )
    brackets["closed"] = brackets["lo"] == brackets["hi"]
    results = StudyResults("toy", "Toy", ReportDesign(), brackets, pd.DataFrame())
    return replace(results, **fields)


def example_table_results() -> StudyResults:
    """The toy study of the tables' examples (four real cells, three synthetic).

    Every number in it is given here, so the facts an example checks (counts, medians,
    shares) can be worked out by hand.

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

    Returns
    -------
    StudyResults
        ``study="toy"``; no comparison, head-level, power or by-checkpoint result
        (each example adds what it needs with :func:`dataclasses.replace`).

    Examples
    --------
    >>> from analysis.datasets import example_table_results
    >>> r = example_table_results()
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
    design = example_report_design(primary_metric="loss", held_out=("ck:0:1",))
    return StudyResults("toy", "Toy", design, brackets, features)


def example_atlas() -> pd.DataFrame:
    """12 cells at t = 1, eps = 0.1: ``org/a`` (2 layers) and ``org/b`` (4 layers), 2 heads each.

    The lower ends are chosen so that the lowest-rank layer is ``org/a``'s last (median
    lower end 2) and ``org/b``'s third (1.5); every other upper end is one above its
    lower end. Hashes are placeholders: these rows do not re-verify.

    Returns
    -------
    pandas.DataFrame
        The atlas's fixed columns and one feature column, ``native__kappa``.

    Examples
    --------
    >>> from analysis.datasets import example_atlas
    >>> atlas = example_atlas()
    >>> atlas.groupby("checkpoint")["layer"].nunique().to_dict()
    {'org/a': 2, 'org/b': 4}
    >>> atlas["lower"].tolist()
    [4, 6, 2, 2, 3, 5, 4, 4, 1, 2, 6, 8]
    """
    lowers = {("org/a", 2): [[4, 6], [2, 2]], ("org/b", 4): [[3, 5], [4, 4], [1, 2], [6, 8]]}
    rows = []
    for (ck, n_layers), layers in lowers.items():
        for layer, heads in enumerate(layers):
            for head, lo in enumerate(heads):
                i = len(rows)
                rows.append(
                    {
                        "design": "example",
                        "design_sha256": "d" * 64,
                        "lock_sha256": "l" * 64,
                        "cell_key": f"cell{i:02d}",
                        "matrix_key": f"matrix{i:02d}",
                        "source": "checkpoint",
                        "checkpoint": ck,
                        "synthetic_params": "",
                        "head_id": f"{ck}:{layer}:{head}",
                        "layer": layer,
                        "head": head,
                        "n_layers": n_layers,
                        "input_id": "corpus:example",
                        "corpus_seed": 0,
                        "length": 16,
                        "n_queries": 16,
                        "temperature": 1.0,
                        "eps": 0.1,
                        "lower": lo,
                        "upper": lo + i % 2,
                        "closed": i % 2 == 0,
                        "lower_method": "ascent",
                        "upper_method": "adam",
                        "engine": "analysis.brackets 4",
                        "engine_version": 4,
                        "effort": "fast",
                        "profile_eps": json.dumps([0.1]),
                        "search_temperatures": json.dumps([1.0]),
                        "profile_revision": 1,
                        "extract_threads": 1,
                        "array_sha256": "a" * 64,
                        "matrix_sha256": "m" * 64,
                        "held_out": head == 1 and layer == 0,
                        "in_comparison": True,
                        "native__kappa": 1.0 + 0.5 * lo,
                    }
                )
    return conform(derive_columns(pd.DataFrame(rows)))
