"""Tidy tables of cells with width-1 brackets: the fixtures of :mod:`analysis.compare`.

The tables are drawn with ``numpy.random.default_rng(0)``. The latent log2 outcome of each
is a known linear function of its columns plus noise, and only brackets of width 1 around
it are kept (``y_lower = floor(y)``, ``y_upper = y_lower + 1``): the facts an example
checks follow from that function, not from a run of the code.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.compare.covariates import PreparedCovariates, prepare_covariates
from analysis.compare.nested import ComparisonResult, NestedComparison
from analysis.compare.spec import ComparisonSpec

__all__ = [
    "EXAMPLE_MODELS",
    "example_comparison",
    "example_comparison_table",
    "example_covariate_table",
    "example_head_table",
    "example_intervals",
    "example_range_covariates",
    "example_study_table",
]

EXAMPLE_MODELS: dict[str, list[str]] = {
    "base": ["base"],
    "rich": ["base", "rich"],
    "noisy": ["base", "noise"],
}
"""The nested models of :func:`example_comparison_table`: ``rich`` adds a block that
carries information, ``noisy`` one that carries none."""


def _brackets(table: pd.DataFrame, y: pd.Series | np.ndarray) -> pd.DataFrame:
    table["y_lower"] = np.floor(y)
    table["y_upper"] = table["y_lower"] + 1.0
    return table


def _cells() -> pd.DataFrame:
    """80 cells of 20 heads: heads 0-9 in ``ck-a``, 10-19 in ``ck-b`` (``stratum``),
    4 cells a head; heads whose number ends in 7, 8 or 9 held out (3 a checkpoint)."""
    heads = np.repeat(np.arange(20), 4)
    return pd.DataFrame(
        {
            "cell_key": np.arange(80),
            "cluster": heads,
            "held_out": heads % 10 >= 7,
            "stratum": np.where(heads < 10, "ck-a", "ck-b"),
        }
    )


def example_comparison_table() -> pd.DataFrame:
    """80 cells of 20 heads, 6 heads held out, with a latent rank in two of three blocks.

    Heads 0-9 are checkpoint ``ck-a`` and 10-19 ``ck-b`` (column ``stratum``), 4 cells a
    head; heads whose number ends in 7, 8 or 9 are held out. The covariates ``base__x``,
    ``rich__z`` and ``noise__w`` are standard normal, and the latent log2 rank is
    ``y = 3 + base__x + 0.8 rich__z + N(0, 0.3^2)``: ``noise__w`` carries no information.

    Returns
    -------
    pandas.DataFrame
        Columns ``cell_key``, ``cluster``, ``held_out``, ``stratum``, ``base__x``,
        ``rich__z``, ``noise__w``, ``y_lower``, ``y_upper``.

    Examples
    --------
    >>> from analysis.datasets import example_comparison_table
    >>> table = example_comparison_table()
    >>> table.shape, table.loc[table["held_out"], "cluster"].nunique()
    ((80, 9), 6)
    >>> table.loc[table["held_out"]].groupby("stratum")["cluster"].nunique().to_dict()
    {'ck-a': 3, 'ck-b': 3}
    >>> bool(((table["y_upper"] - table["y_lower"]) == 1).all())
    True
    """
    rng = np.random.default_rng(0)
    table = _cells()
    for column in ("base__x", "rich__z", "noise__w"):
        table[column] = rng.normal(size=80)
    y = 3.0 + table["base__x"] + 0.8 * table["rich__z"] + rng.normal(0.0, 0.3, 80)
    return _brackets(table, y)


def example_comparison() -> tuple[pd.DataFrame, ComparisonResult]:
    """:func:`example_comparison_table` and its comparison of :data:`EXAMPLE_MODELS`.

    The family is ``base < rich`` and ``base < noisy``, on the interval squared loss,
    with 199 bootstrap replicates (a real study uses thousands) and seed 0.

    Returns
    -------
    table : pandas.DataFrame
        :func:`example_comparison_table`.
    result : ComparisonResult
        The comparison of the family.

    Examples
    --------
    >>> from analysis.datasets import example_comparison
    >>> table, result = example_comparison()
    >>> frame = result.to_frame().set_index("pair")
    >>> frame["adds_information"].to_dict()  # rich__z enters y, noise__w does not
    {'base<rich': True, 'base<noisy': False}
    """
    table = example_comparison_table()
    spec = ComparisonSpec(
        models=EXAMPLE_MODELS,
        family=[("base", "rich"), ("base", "noisy")],
        metrics=["interval_sq_loss"],
        n_boot=199,
        random_state=0,
    )
    result = NestedComparison(spec).fit(table)
    return table, result


def example_study_table() -> pd.DataFrame:
    """80 cells of 20 heads in two checkpoints, where the native block carries information.

    The cells are those of :func:`example_comparison_table` with the built-in blocks'
    column names. Each head has inputs ``a`` and ``b`` at lengths 16 and 32.
    ``baseline__entropy_mean`` is standard normal, ``native__kappa`` log-normal, and the
    latent log2 rank is ``y = 3 + baseline__entropy_mean + 0.8 log(native__kappa) +
    N(0, 0.3^2)``.

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
    >>> list(table.columns[4:])  # after the cells' columns
    ['input_id', 'length', 'baseline__entropy_mean', 'native__kappa', 'y_lower', 'y_upper']
    >>> table.groupby(["cluster", "length"]).size().unique().tolist()  # inputs a and b
    [2]
    >>> bool((table["native__kappa"] > 0).all())  # log-normal, so its log is defined
    True
    """
    rng = np.random.default_rng(0)
    table = _cells()
    table["input_id"] = np.tile(["a", "b"], 40)
    table["length"] = np.tile([16, 16, 32, 32], 20)
    table["baseline__entropy_mean"] = rng.normal(size=80)
    table["native__kappa"] = rng.lognormal(size=80)
    log_kappa = np.log(table["native__kappa"])
    y = 3.0 + table["baseline__entropy_mean"] + 0.8 * log_kappa + rng.normal(0.0, 0.3, 80)
    return _brackets(table, y)


def example_head_table() -> pd.DataFrame:
    """48 training cells of 8 heads: inputs ``a``, ``b``, ``c`` at lengths 16 and 32.

    The latent log2 rank is ``y = 1 + 0.5 base__log_length + 0.8 rich__z + u_h +
    N(0, 0.2^2)`` with a head effect ``u_h ~ N(0, 0.7^2)``, so ``rich__z`` predicts both
    within and across heads.

    Returns
    -------
    pandas.DataFrame
        Columns ``cluster``, ``input_id``, ``length``, ``base__log_length``,
        ``rich__z``, ``y_lower``, ``y_upper``.

    Examples
    --------
    >>> from analysis.datasets import example_head_table
    >>> table = example_head_table()
    >>> table.groupby("cluster").size().unique().tolist(), sorted(table["length"].unique().tolist())
    ([6], [16, 32])
    >>> table[["input_id", "length", "base__log_length"]].head(4).values.tolist()
    [['a', 16, 4.0], ['b', 16, 4.0], ['c', 16, 4.0], ['a', 32, 5.0]]
    """
    rng = np.random.default_rng(0)
    heads = np.repeat(np.arange(8), 6)
    table = pd.DataFrame(
        {
            "cluster": heads,
            "input_id": np.tile(["a", "b", "c"], 16),
            "length": np.tile([16, 16, 16, 32, 32, 32], 8),
        }
    )
    table["base__log_length"] = np.log2(table["length"])
    table["rich__z"] = rng.normal(size=48)
    head_effect = rng.normal(0.0, 0.7, 8)[heads]
    y = 1 + 0.5 * table["base__log_length"] + 0.8 * table["rich__z"] + head_effect
    y += rng.normal(0.0, 0.2, 48)
    return _brackets(table, y)


def example_intervals() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One covariate and the width-1 brackets of ``y = 1 + 2 x + N(0, 0.1^2)``, 40 cells.

    Returns
    -------
    x, lower, upper : numpy.ndarray
        Each of shape (40,); ``x`` is standard normal, ``lower = floor(y)`` and
        ``upper = lower + 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.datasets import example_intervals
    >>> x, lower, upper = example_intervals()
    >>> x.shape, bool(np.all(upper - lower == 1)), bool(np.all(lower == np.floor(lower)))
    ((40,), True, True)
    >>> bool(np.all(np.abs((lower + upper) / 2 - (1 + 2 * x)) < 0.5 + 0.4))  # noise < 4 sd
    True
    """
    rng = np.random.default_rng(0)
    x = rng.normal(size=40)
    y = 1.0 + 2.0 * x + rng.normal(0.0, 0.1, 40)
    lower = np.floor(y)
    return x, lower, lower + 1.0


def example_covariate_table() -> pd.DataFrame:
    """Twelve cells whose blocks need the covariate screen.

    ``base__size`` is 1 to 12 and ``y_lower = round(log2(base__size))``; ``base__twice``
    duplicates ``base__size`` (collinear), ``rich__const`` is constant and
    ``rich__noise`` is standard normal noise (seed 0).

    Returns
    -------
    pandas.DataFrame
        Columns ``y_lower``, ``base__size``, ``base__twice``, ``rich__const``,
        ``rich__noise``, ``y_upper``.

    Examples
    --------
    >>> from analysis.datasets import example_covariate_table
    >>> table = example_covariate_table()
    >>> table[["y_lower", "base__size", "base__twice", "rich__const"]].tail(2).values.tolist()
    [[3.0, 11.0, 22.0, 1.0], [4.0, 12.0, 24.0, 1.0]]
    """
    size = np.arange(1.0, 13.0)
    table = pd.DataFrame(
        {
            "y_lower": np.log2(size).round(),
            "base__size": size,
            "base__twice": 2 * size,
            "rich__const": np.ones(12),
            "rich__noise": np.random.default_rng(0).normal(size=12),
        }
    )
    table["y_upper"] = table["y_lower"] + 1.0
    return table


def example_range_covariates() -> tuple[PreparedCovariates, np.ndarray]:
    """Five cells of one covariate, two held out, one of them outside the training range.

    ``a__x`` is 1, 2, 3 on the training cells and 2, 9 on the held-out ones; model
    ``"M"`` has the block ``a``. The fixture of :mod:`analysis.compare.extrapolation`.

    Returns
    -------
    prep : PreparedCovariates
        ``prepare_covariates`` of the table for ``{"M": ["a"]}``, learned on the training
        cells (``a__x`` standardized with their mean and SD).
    held : numpy.ndarray
        ``[False, False, False, True, True]``.

    Examples
    --------
    >>> from analysis.datasets import example_range_covariates
    >>> prep, held = example_range_covariates()
    >>> prep.columns["M"], held.tolist()
    (('a__x',), [False, False, False, True, True])
    """
    table = pd.DataFrame({"y_lower": 0.0, "y_upper": 1.0, "a__x": [1.0, 2, 3, 2, 9]})
    held = np.arange(5) >= 3
    return prepare_covariates(table, {"M": ["a"]}, ~held), held
