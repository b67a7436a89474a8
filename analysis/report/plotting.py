"""Plotting helpers shared by the report's figures (:mod:`analysis.report.figures` and
:mod:`analysis.report.family_figures`).

Panel sizes, the seaborn style every figure is drawn in, axis helpers for log axes of
ranks and ratios, the footnote under a figure, colour palettes and the boxes of bracket
widths. Everything here draws on a :class:`matplotlib.figure.Figure` or
:class:`matplotlib.axes.Axes` that the caller owns; nothing goes through ``pyplot``, and
the style is applied inside an ``rc_context``, so global matplotlib state is left as it
was. The only numbers computed are descriptive (the ratio hi / lo of a bracket, the share
of closed brackets).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import matplotlib as mpl
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

from analysis.report.results import StudyResults
from analysis.report.tables import real_cells

__all__ = [
    "LEGEND_W",
    "NCOLS",
    "PANEL_H",
    "PANEL_W",
    "figure_style",
    "footnote",
    "int_log2_axis",
    "pad_log_limits",
    "panel_grid",
    "ratio_ticks",
    "seq_palette",
    "short_checkpoint",
    "value_ticks",
    "width_boxes",
    "width_cells",
]

#: Width and height of one panel, in inches.
PANEL_W, PANEL_H = 4.2, 3.3
#: Panels per row of a grid unless the caller says otherwise.
NCOLS = 3
#: Inches added on the right for the legend outside the panels.
LEGEND_W = 2.4


@contextmanager
def figure_style() -> Iterator[None]:
    """Seaborn's ``whitegrid`` / ``paper`` settings inside an ``rc_context``.

    Figures are built and saved inside this context; matplotlib's global settings are
    restored when it exits.

    Examples
    --------
    >>> import matplotlib as mpl
    >>> from analysis.report.plotting import figure_style
    >>> before = mpl.rcParams["pdf.fonttype"]
    >>> with figure_style():
    ...     inside = mpl.rcParams["pdf.fonttype"], mpl.rcParams["axes.grid"]
    >>> inside, mpl.rcParams["pdf.fonttype"] == before  # TrueType fonts inside only
    ((42, True), True)
    """
    rc = dict(sns.axes_style("whitegrid"))
    rc.update(sns.plotting_context("paper", font_scale=1.05))
    rc.update({"figure.dpi": 100, "pdf.fonttype": 42})
    with mpl.rc_context(rc):
        yield


def panel_grid(
    n: int, *, ncols: int = NCOLS, w: float = PANEL_W, h: float = PANEL_H, **kw: Any
) -> tuple[Figure, np.ndarray]:
    """A figure with ``n`` panels in rows of at most ``ncols``, room for a legend on the right.

    Parameters
    ----------
    n : int
        Number of panels drawn.
    ncols : int, keyword-only
        Panels per row (fewer when ``n`` is smaller).
    w, h : float, keyword-only
        Size of one panel in inches.
    **kw
        Passed to :meth:`matplotlib.figure.Figure.subplots` (e.g. ``sharey=True``).

    Returns
    -------
    fig : Figure
    axes : ndarray of Axes
        The first ``n`` axes, flattened; the unused ones of the last row are hidden.

    Examples
    --------
    Five panels fill two rows of three; the sixth cell is hidden:

    >>> from analysis.report.plotting import LEGEND_W, PANEL_H, PANEL_W, panel_grid
    >>> fig, axes = panel_grid(5)
    >>> len(axes), len(fig.axes), sum(ax.get_visible() for ax in fig.axes)
    (5, 6, 5)
    >>> tuple(fig.get_size_inches()) == (3 * PANEL_W + LEGEND_W, 2 * PANEL_H)
    True
    >>> fig, axes = panel_grid(2, ncols=4)  # two panels: one row of two
    >>> len(axes), bool(fig.get_size_inches()[0] == 2 * PANEL_W + LEGEND_W)
    (2, True)
    """
    ncols = max(1, min(ncols, n))
    nrows = math.ceil(n / ncols)
    fig = Figure(figsize=(w * ncols + LEGEND_W, h * nrows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False, **kw)).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def int_log2_axis(ax: Axes, axis: str = "y") -> None:
    """Log2 scale with plain-number ticks (1, 2, 4, ...) on the ``"x"`` or ``"y"`` axis.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> from analysis.report.plotting import int_log2_axis
    >>> ax = Figure().subplots()
    >>> int_log2_axis(ax, "x")
    >>> ax.get_xscale(), ax.xaxis.get_major_formatter()(8.0, 0), ax.get_yscale()
    ('log', '8', 'linear')
    """
    fmt = FuncFormatter(lambda v, _: f"{v:g}")
    if axis == "y":
        ax.set_yscale("log", base=2)
        ax.yaxis.set_major_formatter(fmt)
        ax.yaxis.set_minor_formatter(NullFormatter())
    else:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(fmt)
        ax.xaxis.set_minor_formatter(NullFormatter())


def value_ticks(ax: Axes, values: Sequence[float], axis: str = "x") -> None:
    """Major ticks at exactly the distinct ``values`` (plain numbers), no minor ticks.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> from analysis.report.plotting import value_ticks
    >>> ax = Figure().subplots()
    >>> value_ticks(ax, [0.2, 0.05, 0.1, 0.2])
    >>> [float(t) for t in ax.get_xticks()], ax.xaxis.get_major_formatter()(0.05, 0)
    ([0.05, 0.1, 0.2], '0.05')
    >>> len(ax.xaxis.get_minorticklocs())
    0
    """
    vals = sorted(set(float(v) for v in values))
    fmt = FuncFormatter(lambda v, _: f"{v:g}")
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(mpl.ticker.FixedLocator(vals))
    target.set_major_formatter(fmt)
    target.set_minor_formatter(NullFormatter())
    target.set_minor_locator(mpl.ticker.NullLocator())


def pad_log_limits(
    ax: Axes, values: Sequence[float], axis: str = "x", factor: float = 1.35
) -> None:
    """Limits of a log axis from the positive ``values``, widened by ``factor`` each side.

    Examples
    --------
    Zero and negative values are ignored; none positive leaves the limits as they were:

    >>> from matplotlib.figure import Figure
    >>> from analysis.report.plotting import pad_log_limits
    >>> ax = Figure().subplots()
    >>> pad_log_limits(ax, [0.0, 2.0, 8.0], axis="y", factor=2.0)
    >>> tuple(float(v) for v in ax.get_ylim())
    (1.0, 16.0)
    >>> pad_log_limits(ax, [0.0, -1.0], axis="y")
    >>> tuple(float(v) for v in ax.get_ylim())
    (1.0, 16.0)
    """
    vals = [float(v) for v in values if v > 0]
    if not vals:
        return
    lo, hi = min(vals) / factor, max(vals) * factor
    (ax.set_xlim if axis == "x" else ax.set_ylim)(lo, hi)


def ratio_ticks(ax: Axes, top: float) -> None:
    """Readable ticks for a log axis of ratios >= 1 (1, 1.25, 1.5, 2, 3, 4, ...).

    Examples
    --------
    Up to 8 ticks; beyond that only powers of two:

    >>> from matplotlib.figure import Figure
    >>> from analysis.report.plotting import ratio_ticks
    >>> ax = Figure().subplots()
    >>> ratio_ticks(ax, 3.0)
    >>> [float(t) for t in ax.get_yticks()]
    [1.0, 1.25, 1.5, 2.0, 3.0]
    >>> ratio_ticks(ax, 100.0)
    >>> [float(t) for t in ax.get_yticks()]
    [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
    """
    nice = [1, 1.25, 1.5, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128, 256, 512, 1024]
    ticks = [t for t in nice if t <= max(top, 1.0) * 1.05]
    if len(ticks) > 8:
        ticks = [t for t in ticks if math.log2(t).is_integer()]
    ax.yaxis.set_major_locator(mpl.ticker.FixedLocator(ticks))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_locator(mpl.ticker.NullLocator())


def footnote(fig: Figure, lines: Sequence[str]) -> None:
    """The non-empty ``lines`` under the figure, small and grey; nothing when all are empty.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> from analysis.report.plotting import footnote
    >>> fig = Figure()
    >>> footnote(fig, ["", ""])
    >>> fig.get_supxlabel()
    ''
    >>> footnote(fig, ["3 cells with lo = 0 left out", "", "effort fast"])
    >>> print(fig.get_supxlabel())
    3 cells with lo = 0 left out
    effort fast
    """
    lines = [x for x in lines if x]
    if lines:
        fig.supxlabel("\n".join(lines), fontsize="small", color="0.3", ha="center")


def seq_palette(values: Sequence[float], name: str) -> dict:
    """Distinct ``values`` (sorted) -> colours of the sequential seaborn palette ``name``.

    The palette's lightest colour is skipped, so that no value is drawn near-white.

    Examples
    --------
    >>> import seaborn as sns
    >>> from analysis.report.plotting import seq_palette
    >>> pal = seq_palette([2.0, 0.5, 1.0, 2.0], "Blues")
    >>> list(pal)
    [0.5, 1.0, 2.0]
    >>> list(pal.values()) == sns.color_palette("Blues", n_colors=4)[1:]
    True
    """
    vals = sorted(set(values))
    colors = sns.color_palette(name, n_colors=max(len(vals), 2) + 1)[1:]
    return {v: colors[i] for i, v in enumerate(vals)}


def short_checkpoint(checkpoint: str) -> str:
    """The checkpoint's name without its namespace (``all-MiniLM-L6-v2``).

    Examples
    --------
    >>> from analysis.report.plotting import short_checkpoint
    >>> short_checkpoint("sentence-transformers/all-MiniLM-L6-v2"), short_checkpoint("gpt2")
    ('all-MiniLM-L6-v2', 'gpt2')
    """
    return str(checkpoint).rsplit("/", 1)[-1]


def width_cells(results: StudyResults) -> tuple[pd.DataFrame, int]:
    """Real cells with ``lo > 0`` and their ``ratio = hi / lo``; the count left out.

    Parameters
    ----------
    results : StudyResults

    Returns
    -------
    cells : DataFrame
        The real cells with ``lo > 0``, with columns ``ratio`` and the labels
        ``eps_label`` and ``t_label`` (``f"{v:g}"`` of eps and of the temperature).
    n_zero : int
        Number of real cells with ``lo = 0`` (hi / lo undefined), left out.

    Examples
    --------
    Three real cells (one with lo = 0) and a synthetic one (lo = 0 too), which is never
    counted:

    >>> import pandas as pd
    >>> from analysis.report.plotting import width_cells
    >>> from analysis.report.results import StudyResults
    >>> brackets = pd.DataFrame({
    ...     "source": ["checkpoint"] * 3 + ["synthetic"], "lo": [2, 3, 0, 0],
    ...     "hi": [8, 3, 4, 2], "eps": [0.1, 0.05, 0.1, 0.1], "temperature": [1.0, 0.5, 1.0, 1.0],
    ... })
    >>> results = StudyResults("toy", "toy", {}, brackets, pd.DataFrame())
    >>> cells, n_zero = width_cells(results)
    >>> cells[["ratio", "eps_label", "t_label"]].to_dict("list"), n_zero
    ({'ratio': [4.0, 1.0], 'eps_label': ['0.1', '0.05'], 't_label': ['1', '0.5']}, 1)
    """
    real = real_cells(results)
    df = real[real["lo"] > 0].copy()
    df["ratio"] = df["hi"].astype(float) / df["lo"].astype(float)
    df["eps_label"] = df["eps"].map(lambda v: f"{v:g}")
    df["t_label"] = df["temperature"].map(lambda v: f"{v:g}")
    return df, int((real["lo"] <= 0).sum())


def width_boxes(
    ax: Axes,
    data: pd.DataFrame,
    *,
    x: str,
    order: Sequence[str],
    hue: str,
    hue_order: Sequence[str],
    palette: dict,
) -> None:
    """Boxes of hi / lo on a log2 axis, one per (x, hue), closed shares written under x.

    Parameters
    ----------
    ax : Axes
    data : DataFrame
        Cells with columns ``ratio``, ``closed``, ``x`` and ``hue`` (see
        :func:`width_cells`).
    x : str, keyword-only
        Column that places a box along the axis.
    order : sequence of str, keyword-only
        Its values in drawing order.
    hue : str, keyword-only
        Column that colours a box.
    hue_order : sequence of str, keyword-only
        Its values in drawing order.
    palette : dict, keyword-only
        ``hue`` value -> colour.

    Examples
    --------
    Two eps, one temperature: two boxes, each with its share of closed brackets (hi = lo)
    written under it:

    >>> import pandas as pd
    >>> from matplotlib.figure import Figure
    >>> from analysis.report.plotting import seq_palette, width_boxes
    >>> data = pd.DataFrame({
    ...     "eps_label": ["0.1"] * 4 + ["0.2"] * 2, "t_label": "1",
    ...     "ratio": [1.0, 1.0, 2.0, 4.0, 1.0, 1.5],
    ...     "closed": [True, True, False, False, True, False],
    ... })
    >>> ax = Figure().subplots()
    >>> width_boxes(
    ...     ax, data, x="eps_label", order=["0.1", "0.2"], hue="t_label", hue_order=["1"],
    ...     palette=seq_palette(["1"], "Blues"),
    ... )
    >>> [t.get_text() for t in ax.texts], ax.get_yscale()
    (['closed 50%', 'closed 50%'], 'log')
    """
    with warnings.catch_warnings():  # seaborn 0.13 passes bxp(vert=...) to mpl 3.11
        warnings.simplefilter("ignore", mpl.MatplotlibDeprecationWarning)
        sns.boxplot(
            data=data, x=x, y="ratio", hue=hue, order=order, hue_order=hue_order,
            palette=palette, ax=ax, log_scale=2, fliersize=2, linewidth=0.8, legend=False,
        )  # fmt: skip
    ax.set_ylim(bottom=0.9)
    closed = data.groupby(x)["closed"].mean().reindex(order)
    pooled = f" (all {hue.split('_')[0]})" if len(hue_order) > 1 else ""
    for i, share in enumerate(closed):
        ax.annotate(
            f"closed {share:.0%}{pooled}", (i, 1.0), xytext=(0, -11), textcoords="offset points",
            ha="center", va="top", fontsize="x-small", color="0.3", annotation_clip=False,
        )  # fmt: skip
