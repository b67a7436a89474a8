"""A small locked study and a tidy study table for the documentation of :mod:`analysis.study`.

The design files of the examples come from
:func:`analysis.datasets.write_example_design`; this module locks and opens one as
a study, and makes the table of released cells that a study's comparison stages read,
with the built-in blocks' column names.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from analysis.datasets import example_cells, write_example_design
from analysis.prereg import load_design, lock_design
from analysis.study.core import Study, block_facts, engine_versions

__all__ = ["example_study_table", "open_example_study"]


def open_example_study(path: str | Path, *, synthetic: bool = False) -> Study:
    """Write the example design, lock it with the code's block facts and open it.

    The design is :func:`analysis.datasets.write_example_design` with
    temperatures 0.5 and 1.0 and eps 0.1 and 0.2: 8 heads of ``org/tiny`` x 2 x 2 = 32
    planned real cells, two of the heads held out.

    Parameters
    ----------
    path : str or Path
        The design file to write (its study root is the current folder when it lies in
        ``studies/``).
    synthetic : bool, default False
        Also plan the exploratory synthetic source (two ``ball`` matrices).

    Returns
    -------
    Study
        Locked with the code's block versions and opened; nothing is stored yet.

    Examples
    --------
    >>> from analysis.datasets import open_example_study
    >>> study = open_example_study("studies/toy.toml", synthetic=True)
    >>> study.plan.planned_real_cells, len(study.plan.synthetic), study.lock.held_out
    (32, 2, ('org/tiny:1:1', 'org/tiny:1:2'))
    """
    path = write_example_design(path, temperatures=(0.5, 1.0), eps=(0.1, 0.2), synthetic=synthetic)
    lock_design(path, engines=engine_versions(), **block_facts(load_design(path)))
    return Study.open(path)


def example_study_table() -> pd.DataFrame:
    """80 cells of 20 heads in two checkpoints, where the native block carries information.

    The rows are :func:`analysis.datasets.example_cells`. Each head has
    inputs ``a`` and ``b`` at lengths 16 and 32. ``baseline__entropy_mean`` is standard
    normal, ``native__kappa`` log-normal, and the latent log2 rank is
    ``y = 3 + baseline__entropy_mean + 0.8 log(native__kappa) + N(0, 0.3^2)``, seen only
    as brackets of width 1 (``y_lower = floor(y)``, ``y_upper = y_lower + 1``).

    Returns
    -------
    pandas.DataFrame
        Columns ``cell_key``, ``cluster``, ``held_out``, ``stratum``, ``input_id``,
        ``length``, ``baseline__entropy_mean``, ``native__kappa``, ``y_lower``,
        ``y_upper``.

    Examples
    --------
    >>> from analysis.datasets import example_study_table
    >>> table = example_study_table()
    >>> list(table.columns[4:])  # after example_cells' columns
    ['input_id', 'length', 'baseline__entropy_mean', 'native__kappa', 'y_lower', 'y_upper']
    >>> table.groupby(["cluster", "length"]).size().unique().tolist()  # inputs a and b
    [2]
    >>> bool((table["native__kappa"] > 0).all())  # log-normal, so its log is defined
    True
    """
    rng = np.random.default_rng(0)
    table = example_cells()
    table["input_id"] = np.tile(["a", "b"], 40)
    table["length"] = np.tile([16, 16, 32, 32], 20)
    table["baseline__entropy_mean"] = rng.normal(size=80)
    table["native__kappa"] = rng.lognormal(size=80)
    log_kappa = np.log(table["native__kappa"])
    y = 3.0 + table["baseline__entropy_mean"] + 0.8 * log_kappa + rng.normal(0.0, 0.3, 80)
    table["y_lower"] = np.floor(y)
    table["y_upper"] = table["y_lower"] + 1.0
    return table
