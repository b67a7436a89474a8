"""Small report inputs for the documentation: a one-hypothesis design and toy results.

Like :mod:`analysis.study.examples` for the study, these helpers make the same small
:class:`~analysis.report.results.StudyResults` that the ``Examples`` sections of
:mod:`analysis.report` start from, so each example states only what it shows. They are
made-up tables of a few cells (nothing here is a result) and import nothing outside
:mod:`analysis.report`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd

from analysis.report.design import ReportDesign, ReportHypothesis
from analysis.report.results import StudyResults

__all__ = ["example_checkpoint_results", "example_design", "example_results"]


def example_design(**fields: Any) -> ReportDesign:
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
    >>> from analysis.report.examples import example_design
    >>> d = example_design(alpha=0.05)
    >>> [(h.id, h.kind, h.base, h.rich) for h in d.hypotheses], d.alpha
    ([('H1', 'confirmatory', 'M0', 'M1')], 0.05)
    """
    return ReportDesign(hypotheses=(ReportHypothesis("H1", "confirmatory", "M0", "M1"),), **fields)


def example_results(**fields: Any) -> StudyResults:
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
    >>> from analysis.report.examples import example_results
    >>> r = example_results()
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
        As for :func:`example_results`.

    Returns
    -------
    StudyResults
        Titled ``Toy`` (study ``toy``), with an empty features table.

    Examples
    --------
    >>> from analysis.report.examples import example_checkpoint_results
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
