"""A worked query on the atlas: which layers hold the lowest-rank heads.

:func:`lowest_rank_layers` summarises the lower ends of one (temperature, eps) by layer,
within each checkpoint and length; :func:`layer_depth_heatmap` draws the median log2
lower end by relative layer depth and (checkpoint, length), saved atomically.

The lower end is the certified part of the bracket that a rank statement rests on (the
rank is at least this); a cell with lower end 0 (no lower witness) enters the log2 scale
as 1, the trivial bound ``r_eps >= 1`` of every row-stochastic matrix at eps < 1 (the
zero matrix misses each row by 1).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.validation import ParameterError, check_eps_grid, check_positive_finite

__all__ = ["depth_grid", "layer_depth_heatmap", "lowest_rank_layers", "relative_depth"]


def relative_depth(layer: pd.Series, n_layers: pd.Series) -> pd.Series:
    """``layer / (n_layers - 1)``: 0 for the first layer, 1 for the last (0 for a
    one-layer model).

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.atlas.query import relative_depth
    >>> relative_depth(pd.Series([0, 3, 5]), pd.Series([6, 6, 6])).tolist()
    [0.0, 0.6, 1.0]
    """
    span = (n_layers.astype(float) - 1.0).where(n_layers > 1, 1.0)
    return layer.astype(float) / span


def _select(frame: pd.DataFrame, eps: float, temperature: float) -> pd.DataFrame:
    (eps,) = check_eps_grid([eps])
    temperature = check_positive_finite("temperature", temperature)
    real = frame.loc[frame["source"] == "checkpoint"]
    sel = real.loc[np.isclose(real["eps"], eps) & np.isclose(real["temperature"], temperature)]
    if sel.empty:
        have = sorted(
            {(float(t), float(e)) for t, e in zip(real["temperature"], real["eps"], strict=True)}
        )
        raise ParameterError(
            "eps",
            f"an (temperature, eps) of the atlas's real cells, among {have[:6]}",
            (temperature, eps),
        )
    return sel


def lowest_rank_layers(
    frame: pd.DataFrame,
    *,
    eps: float,
    temperature: float = 1.0,
    by: Sequence[str] = ("checkpoint", "length"),
) -> pd.DataFrame:
    """Median certified lower end by layer, within each group of ``by``; rank 1 lowest.

    Parameters
    ----------
    frame : DataFrame
        An atlas (:func:`analysis.atlas.load_atlas`); its real cells are used.
    eps : float, keyword-only
        The tolerance whose brackets are read.
    temperature : float, default 1.0, keyword-only
        The temperature whose brackets are read.
    by : sequence of str, default ("checkpoint", "length"), keyword-only
        Atlas columns to summarise within (each group ranks its own layers).

    Returns
    -------
    pandas.DataFrame
        ``*by``, ``layer``, ``n_layers``, ``depth`` (:func:`relative_depth`),
        ``heads`` and ``cells`` (counted), ``median_lower``, ``median_log2_lower``
        (lower ends of 0 as 1), ``share_closed`` (cells with ``lower == upper``) and
        ``rank`` (1 = the layer with the lowest median log2 lower end in its group; ties
        share the smaller rank), sorted by ``by`` then ``rank``.

    Raises
    ------
    ParameterError
        Naming ``by`` for a column the atlas lacks; naming ``eps`` when the atlas has
        no real cell at (``temperature``, ``eps``).

    Examples
    --------
    >>> from analysis.atlas import lowest_rank_layers
    >>> from analysis.datasets import example_atlas
    >>> atlas = example_atlas()  # org/a: 2 layers, org/b: 4 layers, 2 heads each
    >>> top = lowest_rank_layers(atlas, eps=0.1)
    >>> top.loc[top["rank"] == 1, ["checkpoint", "length", "layer", "depth", "median_lower"]]
      checkpoint  length  layer  depth  median_lower
    0      org/a      16      1   1.00           2.0
    2      org/b      16      2   0.67           1.5
    >>> lowest_rank_layers(atlas, eps=0.3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: eps: expected an (temperature, eps) of the atlas's real cells, among [(1.0, 0.1)], got (1.0, 0.3)
    """
    by = list(by)
    missing = [c for c in by if c not in frame.columns]
    if missing:
        raise ParameterError("by", "atlas columns", missing)
    sel = _select(frame, eps, temperature).assign(
        log2_lower=lambda f: np.log2(f["lower"].clip(lower=1).astype(float)),
        is_closed=lambda f: f["lower"] == f["upper"],
    )
    out = (
        sel.groupby([*by, "layer"], sort=True)
        .agg(
            n_layers=("n_layers", "max"),
            heads=("head_id", "nunique"),
            cells=("cell_key", "size"),
            median_lower=("lower", "median"),
            median_log2_lower=("log2_lower", "median"),
            share_closed=("is_closed", "mean"),
        )
        .reset_index()
    )
    out.insert(len(by) + 2, "depth", relative_depth(out["layer"], out["n_layers"]).round(2))
    out["rank"] = (
        out.groupby(by)["median_log2_lower"].rank(method="min", ascending=True).astype(int)
    )
    return out.sort_values([*by, "rank", "layer"]).reset_index(drop=True)


def depth_grid(
    frame: pd.DataFrame, *, eps: float, temperature: float = 1.0, bins: int | None = None
) -> pd.DataFrame:
    """The median log2 lower end by relative layer depth (rows) x (checkpoint, length).

    The table :func:`layer_depth_heatmap` draws: one row per depth bin of [0, 1], one column
    per checkpoint and length (``"<model>\\nL=<length>"``), ordered by checkpoint and then
    by length as a number; NaN where a checkpoint has no layer in a bin.

    Parameters
    ----------
    frame : DataFrame
        An atlas; its real cells at (``temperature``, ``eps``) are used.
    eps, temperature : float, keyword-only
        As in :func:`lowest_rank_layers`.
    bins : int, optional, keyword-only
        Depth bins of [0, 1] (default: the most layers of any checkpoint, so a single
        checkpoint gets one row per layer).

    Returns
    -------
    DataFrame

    Examples
    --------
    >>> from analysis.datasets import example_atlas
    >>> from analysis.atlas.query import depth_grid
    >>> depth_grid(example_atlas(), eps=0.1).shape[0] >= 1
    True
    """
    sel = _select(frame, eps, temperature)
    bins = int(bins or sel["n_layers"].max())
    if bins < 1:
        raise ParameterError("bins", "an int >= 1", bins)
    depth = relative_depth(sel["layer"], sel["n_layers"])
    idx = np.minimum((depth * bins).astype(int), bins - 1)
    edges = np.linspace(0.0, 1.0, bins + 1)
    names = [f"{edges[i]:.2f}-{edges[i + 1]:.2f}" for i in range(bins)]
    data = sel.assign(
        depth_bin=pd.Categorical([names[i] for i in idx], categories=names, ordered=True),
        column=[
            f"{c.rsplit('/', 1)[-1]}\nL={n}"
            for c, n in zip(sel["checkpoint"], sel["length"], strict=True)
        ],
        log2_lower=np.log2(sel["lower"].clip(lower=1).astype(float)),
    )
    grid = data.pivot_table(
        index="depth_bin", columns="column", values="log2_lower", aggfunc="median", observed=False
    )
    # columns by checkpoint, then by length as a number (a string sort puts L=128 before L=64)
    order = (
        data[["checkpoint", "length", "column"]]
        .drop_duplicates("column")
        .sort_values(["checkpoint", "length"], kind="stable")["column"]
    )
    return grid[list(order)]


def layer_depth_heatmap(
    frame: pd.DataFrame,
    path: str | os.PathLike,
    *,
    eps: float,
    temperature: float = 1.0,
    bins: int | None = None,
    dpi: int = 110,
) -> Path:
    """A heatmap of the median log2 lower end by relative layer depth x (checkpoint, length).

    Parameters
    ----------
    frame : DataFrame
        An atlas; its real cells at (``temperature``, ``eps``) are drawn.
    path : path
        The image file (its suffix picks the format: ``.png``, ``.pdf``, ``.svg``),
        written atomically.
    eps, temperature : float, keyword-only
        As in :func:`lowest_rank_layers`.
    bins : int, optional, keyword-only
        Depth bins of [0, 1] (default: the most layers of any checkpoint, so a single
        checkpoint gets one row per layer).
    dpi : int, default 110, keyword-only

    Returns
    -------
    Path

    Examples
    --------
    >>> from analysis.atlas import layer_depth_heatmap
    >>> from analysis.datasets import example_atlas
    >>> path = layer_depth_heatmap(example_atlas(), "figures/depth.png", eps=0.1)
    >>> path.name, path.stat().st_size > 1000
    ('depth.png', True)
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    import seaborn as sns

    from analysis.atomic import atomic_write

    grid = depth_grid(frame, eps=eps, temperature=temperature, bins=bins)
    fig, ax = plt.subplots(figsize=(2.2 + 1.9 * grid.shape[1], 1.2 + 0.45 * grid.shape[0]))
    try:
        sns.heatmap(
            grid,
            annot=True,
            fmt=".2f",
            cmap="viridis",
            ax=ax,
            cbar_kws={"label": "median log2 lower end"},
        )
        ax.set_xlabel("checkpoint, length")
        ax.set_ylabel("relative layer depth")
        ax.set_title(f"Certified lower ends, t = {temperature:g}, eps = {eps:g}")
        fig.tight_layout()
        path = Path(path)
        fmt = path.suffix.lstrip(".") or "png"
        with atomic_write(path) as fh:
            fig.savefig(fh, format=fmt, dpi=dpi)
    finally:
        plt.close(fig)
    return path
