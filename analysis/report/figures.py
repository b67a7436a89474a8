"""Report figures (seaborn on matplotlib ``Figure`` objects; PNG and PDF).

Figures are built on :class:`matplotlib.figure.Figure` directly, never through
``pyplot``: nothing is registered with an interactive backend, nothing has to be closed,
and PNGs are rendered by Agg (PDFs by matplotlib's PDF backend). Styles come from
seaborn's ``whitegrid`` / ``paper`` settings inside an ``rc_context``, so global
matplotlib state is left as it was.

Every function takes a :class:`~analysis.report.results.StudyResults` and returns a
``Figure`` or None when the study holds nothing to draw (e.g. no synthetic cells). The
only numbers computed are descriptive (medians and quartiles over cells).

Log axes: certified lower ends ``lo = 0`` (no lower witness found) cannot sit on a log
axis; they are drawn at 1, which is a valid lower bound whenever eps < 1 (the zero matrix
has max-row-l1 error 1). Such cells are counted in the figure's footnote.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib as mpl
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from analysis.atomic import atomic_write
from analysis.report.family_figures import BY_CHECKPOINT_FIGURES
from analysis.report.forest import forest
from analysis.report.plotting import (
    LEGEND_W,
    NCOLS,
    PANEL_H,
    PANEL_W,
    figure_style,
    footnote,
    int_log2_axis,
    pad_log_limits,
    panel_grid,
    ratio_ticks,
    seq_palette,
    value_ticks,
    width_boxes,
    width_cells,
)
from analysis.report.results import StudyResults
from analysis.report.tables import real_cells, synthetic_cells
from analysis.validation import ParameterError

__all__ = [
    "DESCRIPTOR_FEATURES",
    "FIGURES",
    "FORMATS",
    "bracket_width",
    "descriptors_vs_midpoint",
    "figures_for",
    "forest",
    "rank_vs_eps",
    "rank_vs_temperature",
    "save_figure",
    "synthetic_rank_vs_beta",
]

#: Descriptor columns drawn against the bracket midpoint, with axis labels.
DESCRIPTOR_FEATURES: dict[str, str] = {
    "native__kappa": r"native $\kappa$",
    "intrinsic__Pi": r"intrinsic $\Pi$",
}
DPI = 150


def _panels(df: pd.DataFrame) -> list[tuple[str, int]]:
    """One panel per (checkpoint, length N): ranks grow with N, so lengths are not pooled."""
    return sorted(df.groupby(["checkpoint", "length"]).groups)


def _ncols(df: pd.DataFrame) -> int:
    """A row per checkpoint and a column per length when there are few lengths."""
    n = df["length"].nunique()
    return n if n <= 4 else NCOLS


def _panel_title(df: pd.DataFrame, checkpoint: str, length: int) -> str:
    fam = df["family"].iloc[0]
    heads = df["head_id"].nunique()
    return f"{checkpoint}, N = {int(length)}\n({fam}; {heads} heads, {len(df)} cells)"


def _q(x: pd.Series, p: float) -> float:
    return float(np.quantile(x.to_numpy(float), p)) if len(x) else float("nan")


def _bracket_lines(
    ax, df: pd.DataFrame, *, x: str, hue: str, palette: dict, dodge: float = 0.04
) -> None:
    """Median bracket band with median lo / hi lines and interquartile bars, per hue."""
    hues = sorted(df[hue].unique())
    offsets = (np.arange(len(hues)) - (len(hues) - 1) / 2) * dodge
    for off, h in zip(offsets, hues, strict=True):
        sub = df[df[hue] == h]
        g = sub.groupby(x)
        xs = np.array(sorted(g.groups), float)
        stat = pd.DataFrame(
            {
                "lo_med": g["lo_plot"].median(),
                "hi_med": g["hi"].median(),
                "lo_q1": g["lo_plot"].apply(_q, p=0.25),
                "lo_q3": g["lo_plot"].apply(_q, p=0.75),
                "hi_q1": g["hi"].apply(_q, p=0.25),
                "hi_q3": g["hi"].apply(_q, p=0.75),
            }
        ).loc[xs]
        xd = xs * 2.0**off  # dodge multiplicatively on a log axis
        c = palette[h]
        ax.fill_between(xd, stat.lo_med, stat.hi_med, color=c, alpha=0.15, lw=0)
        for end, ls, mk in (("hi", "-", "v"), ("lo", "--", "^")):
            med = stat[f"{end}_med"].to_numpy()
            err = np.vstack(
                [med - stat[f"{end}_q1"].to_numpy(), stat[f"{end}_q3"].to_numpy() - med]
            )
            ax.errorbar(
                xd, med, yerr=err, color=c, ls=ls, marker=mk, ms=4.5, lw=1.4, capsize=2,
                elinewidth=0.8,
            )  # fmt: skip


def _bracket_legend(fig: Figure, hue_name: str, palette: dict, fmt=lambda v: f"{v:g}") -> None:
    handles = [
        Patch(color=c, alpha=0.6, label=f"{hue_name} = {fmt(h)}") for h, c in palette.items()
    ]
    handles += [
        Line2D([], [], color="0.2", ls="-", marker="v", label="median upper end hi"),
        Line2D([], [], color="0.2", ls="--", marker="^", label="median lower end lo"),
        Patch(color="0.2", alpha=0.15, label="median bracket [lo, hi]"),
        Line2D(
            [], [], color="0.2", ls="none", marker="|", ms=10, label="bars: quartiles over cells"
        ),
    ]
    fig.legend(handles=handles, loc="outside right center", frameon=False, fontsize="small")


def _plot_cells(results: StudyResults) -> tuple[pd.DataFrame, int]:
    """Real cells ready for log axes (``lo_plot = max(lo, 1)``; ``hi = 0`` cells dropped)."""
    df = real_cells(results)
    df = df[df["hi"] > 0].copy()  # hi = 0 only when eps >= 1 (r_eps = 0): nothing to draw
    zero_lo = int((df["lo"] <= 0).sum())
    df["lo_plot"] = df["lo"].clip(lower=1).astype(float)
    df["hi"] = df["hi"].astype(float)
    return df, zero_lo


def _zero_note(n: int) -> str:
    return f"{n} cell(s) with lo = 0 drawn at lo = 1 (a valid bound for eps < 1)." if n else ""


def _rank_panels(
    df: pd.DataFrame,
    *,
    x: str,
    hue: str,
    palette: str,
    log_x: Callable[[Any], None],
    xlabel: str,
    legend: str,
    title: str,
    notes: Sequence[str],
) -> Figure:
    """Rank brackets against ``x``, a panel per (checkpoint, length), a colour per ``hue``."""
    with figure_style():
        cks = _panels(df)
        ncols = _ncols(df)
        fig, axes = panel_grid(len(cks), ncols=ncols, sharey=True)
        pal = seq_palette(df[hue], palette)
        for k, (ax, ck) in enumerate(zip(axes, cks, strict=True)):
            sub = df[(df["checkpoint"] == ck[0]) & (df["length"] == ck[1])]
            _bracket_lines(ax, sub, x=x, hue=hue, palette=pal)
            log_x(ax)
            value_ticks(ax, sub[x])
            pad_log_limits(ax, sub[x])
            int_log2_axis(ax, "y")
            ax.set_xlabel(xlabel)
            if k % ncols == 0:
                ax.set_ylabel(r"certified rank $r_\varepsilon$ (log$_2$ scale)")
            ax.set_title(_panel_title(sub, *ck), fontsize="medium")
        _bracket_legend(fig, legend, pal)
        _rank_ticks(axes)
        fig.suptitle(title)
        footnote(fig, list(notes))
    return fig


def rank_vs_eps(results: StudyResults) -> Figure | None:
    """Rank bracket against eps, a panel per (checkpoint, length), a colour per temperature.

    Examples
    --------
    >>> from analysis.datasets import example_study_results
    >>> ax, = rank_vs_eps(example_study_results()).axes  # one panel; every cell drawn (lo = 0 from 1)
    >>> ax.get_xscale(), ax.get_title().split("\\n")
    ('log', ['org/a, N = 16', '(bert; 2 heads, 6 cells)'])
    """
    df, zero_lo = _plot_cells(results)
    if df.empty:
        return None
    return _rank_panels(
        df,
        x="eps",
        hue="temperature",
        palette="viridis",
        log_x=lambda ax: ax.set_xscale("log"),
        xlabel=r"tolerance $\varepsilon$ (log scale)",
        legend="temperature t",
        title=r"Certified rank brackets against $\varepsilon$ (real heads)",
        notes=[_zero_note(zero_lo)],
    )


def rank_vs_temperature(results: StudyResults) -> Figure | None:
    """Rank bracket against temperature, a panel per (checkpoint, length), a colour per eps.

    Examples
    --------
    >>> from analysis.datasets import example_study_results
    >>> r = example_study_results()
    >>> ax, = rank_vs_temperature(r).axes
    >>> ax.get_xlabel(), ax.get_title().endswith("6 cells)")
    ('temperature t (log$_2$ scale)', True)
    >>> rank_vs_temperature(example_study_results(brackets=r.brackets[:0])) is None
    True
    """
    df, zero_lo = _plot_cells(results)
    if df.empty:
        return None
    notes = [_zero_note(zero_lo)]
    if df["temperature"].nunique() == 1:
        notes.append("The study has a single temperature; no trend can be read here.")
    return _rank_panels(
        df,
        x="temperature",
        hue="eps",
        palette="flare",
        log_x=lambda ax: int_log2_axis(ax, "x"),
        xlabel="temperature t (log$_2$ scale)",
        legend="eps",
        title="Certified rank brackets against temperature (real heads)",
        notes=notes,
    )


def _rank_ticks(axes) -> None:
    """Integer ticks 1, 2, 3, 4, 6, 8, 12, ... inside the current limits of log2 rank axes.

    Powers of two only when more than eight would show. Call after drawing.
    """
    for ax in np.atleast_1d(axes).ravel():
        if not ax.get_visible():
            continue
        lo, hi = ax.get_ylim()
        nice = sorted({m * 2**k for k in range(0, 20) for m in (1, 1.5)})
        ticks = [int(t) for t in nice if lo <= t <= hi and float(t).is_integer()]
        if len(ticks) > 8:
            ticks = [t for t in ticks if math.log2(t).is_integer()]
        ax.yaxis.set_major_locator(mpl.ticker.FixedLocator(ticks))
        ax.yaxis.set_minor_locator(mpl.ticker.NullLocator())


def bracket_width(results: StudyResults) -> Figure | None:
    """Distribution of hi / lo by eps and temperature, a panel per (checkpoint, length).

    Examples
    --------
    >>> from analysis.datasets import example_study_results
    >>> ax, = bracket_width(example_study_results()).axes  # the cell with lo = 0 has no hi / lo: 5 cells
    >>> ax.get_ylabel(), ax.get_title().endswith("5 cells)")
    ('hi / lo (log$_2$ scale)', True)
    """
    df, n_zero = width_cells(results)
    if df.empty:
        return None
    eps_order = [f"{v:g}" for v in sorted(df["eps"].unique())]
    t_order = [f"{v:g}" for v in sorted(df["temperature"].unique())]
    pal = dict(zip(t_order, seq_palette(df["temperature"], "viridis").values(), strict=True))
    with figure_style():
        cks = _panels(df)
        ncols = _ncols(df)
        fig, axes = panel_grid(len(cks), ncols=ncols, sharey=True)
        for k, (ax, ck) in enumerate(zip(axes, cks, strict=True)):
            sub = df[(df["checkpoint"] == ck[0]) & (df["length"] == ck[1])]
            width_boxes(
                ax, sub, x="eps_label", order=eps_order, hue="t_label", hue_order=t_order,
                palette=pal,
            )  # fmt: skip
            ratio_ticks(ax, float(df["ratio"].max()))
            ax.set_xlabel(r"tolerance $\varepsilon$")
            ax.set_ylabel("hi / lo (log$_2$ scale)" if k % ncols == 0 else "")
            ax.set_title(_panel_title(sub, *ck), fontsize="medium")
        handles = [Patch(color=pal[t], label=f"temperature t = {t}") for t in t_order]
        fig.legend(handles=handles, loc="outside right center", frameon=False, fontsize="small")
        fig.suptitle("Width of the certified brackets (real heads)")
        note = f"{n_zero} cell(s) with lo = 0 left out (hi / lo undefined)." if n_zero else ""
        footnote(fig, ["hi / lo = 1 is a closed bracket (lo = hi); 2 means hi is twice lo.", note])
    return fig


def descriptors_vs_midpoint(
    results: StudyResults, *, features: Sequence[str] = tuple(DESCRIPTOR_FEATURES)
) -> Figure | None:
    """Descriptors (native kappa, intrinsic Pi) against the bracket's geometric midpoint.

    One row per descriptor present in ``results.features``, one column per eps; training
    and held-out heads in different colours and markers; the vertical segment of each
    point is its certified bracket [lo, hi]. The midpoint is ``2^((log2 lo + log2 hi)/2)``,
    the midpoint of the log2 interval the comparisons model.

    Examples
    --------
    >>> from analysis.datasets import example_study_results
    >>> r = example_study_results()
    >>> fig = descriptors_vs_midpoint(r)  # one descriptor (kappa) x two eps
    >>> [ax.get_title()[-7:] for ax in fig.axes]
    ['$ = 0.1', '$ = 0.2']
    >>> descriptors_vs_midpoint(r, features=["Pi"]) is None  # no such column
    True
    """
    cells, zero_lo = _plot_cells(results)
    present = [f for f in features if f in results.features.columns]
    if cells.empty or not present:
        return None
    df = cells.merge(results.features[["cell_key", *present]], on="cell_key", how="left")
    df["mid"] = np.sqrt(df["lo_plot"] * df["hi"])
    df["split"] = np.where(df["held_out"].astype(bool), "held-out heads", "training heads")
    eps_vals = sorted(df["eps"].unique())
    pal = {
        "training heads": sns.color_palette("deep")[0],
        "held-out heads": sns.color_palette("deep")[3],
    }
    markers = {"training heads": "o", "held-out heads": "D"}
    notes = [
        "Midpoint = 2^((log2 lo + log2 hi) / 2), the centre of the log2 interval the "
        "comparisons model; native kappa = (scale / t) max|q| max|k|.",
        _zero_note(zero_lo),
    ]
    with figure_style():
        fig = Figure(
            figsize=(PANEL_W * len(eps_vals) + LEGEND_W, PANEL_H * len(present)),
            layout="constrained",
        )
        axes = fig.subplots(len(present), len(eps_vals), squeeze=False, sharex="row", sharey=True)
        for i, feat in enumerate(present):
            x = pd.to_numeric(df[feat], errors="coerce")
            ok = np.isfinite(x) & (x > 0)
            if (~ok).any():
                notes.append(f"{feat}: {int((~ok).sum())} cell(s) with a missing, infinite or "
                             "non-positive value not drawn.")  # fmt: skip
            for j, e in enumerate(eps_vals):
                ax = axes[i, j]
                sub = df[ok & (df["eps"] == e)]
                for split in ("training heads", "held-out heads"):
                    s = sub[sub["split"] == split]
                    if s.empty:
                        continue
                    ax.vlines(s[feat], s["lo_plot"], s["hi"], color=pal[split], alpha=0.25, lw=0.8)
                    ax.scatter(
                        s[feat], s["mid"], color=pal[split], marker=markers[split], s=14,
                        alpha=0.8, edgecolor="white", linewidth=0.3,
                    )  # fmt: skip
                ax.set_xscale("log")
                ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=12))
                ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
                ax.xaxis.set_minor_formatter(NullFormatter())
                int_log2_axis(ax, "y")
                ax.set_title(rf"$\varepsilon$ = {e:g}", fontsize="medium")
                ax.set_xlabel(DESCRIPTOR_FEATURES.get(feat, feat) + " (log scale)")
                if j == 0:
                    ax.set_ylabel("bracket midpoint (log$_2$ scale)\nsegment = [lo, hi]")
        handles = [
            Line2D([], [], color=pal[s], marker=markers[s], ls="none", label=s) for s in pal
        ] + [Line2D([], [], color="0.4", alpha=0.5, lw=1, label="certified bracket")]
        fig.legend(handles=handles, loc="outside right center", frameon=False, fontsize="small")
        _rank_ticks(axes)
        fig.suptitle(
            "Geometry descriptors against the certified rank (real heads, all temperatures)"
        )
        footnote(fig, notes)
    return fig


def synthetic_rank_vs_beta(results: StudyResults) -> Figure | None:
    """Exploratory: rank bracket against beta / t per d, for each synthetic family and n.

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.report.design import ReportDesign
    >>> b = pd.DataFrame({"cell_key": ["a", "b"], "source": "synthetic", "checkpoint": "ball",
    ...     "length": 8, "lo": [1, 3], "hi": [2, 4], "eps": 0.1, "temperature": 1.0, "d": 2.0,
    ...     "beta": [1.0, 4.0]})
    >>> fig = synthetic_rank_vs_beta(StudyResults("t", "T", ReportDesign(), b, pd.DataFrame()))
    >>> len(fig.axes) >= 1, fig.axes[0].get_xscale()
    (True, 'log')
    """
    syn = synthetic_cells(results)
    syn = syn[(syn["hi"] > 0) & syn["beta"].notna()].copy()
    if syn.empty:
        return None
    syn["lo_plot"] = syn["lo"].clip(lower=1).astype(float)
    syn["hi"] = syn["hi"].astype(float)
    syn["beta_eff"] = syn["beta"].astype(float) / syn["temperature"].astype(float)
    syn["d"] = syn["d"].astype(int)
    panels = sorted(syn.groupby(["checkpoint", "length"]).groups)
    eps_vals = sorted(syn["eps"].unique())
    pal = seq_palette(syn["d"], "mako")
    with figure_style():
        fig = Figure(
            figsize=(PANEL_W * len(panels) + LEGEND_W, PANEL_H * len(eps_vals)),
            layout="constrained",
        )
        axes = fig.subplots(len(eps_vals), len(panels), squeeze=False, sharey=True)
        for j, (fam, n) in enumerate(panels):
            for i, e in enumerate(eps_vals):
                ax = axes[i, j]
                sub = syn[(syn["checkpoint"] == fam) & (syn["length"] == n) & (syn["eps"] == e)]
                if sub.empty:
                    ax.set_visible(False)
                    continue
                _bracket_lines(ax, sub, x="beta_eff", hue="d", palette=pal, dodge=0.06)
                int_log2_axis(ax, "x")
                value_ticks(ax, sub["beta_eff"])
                pad_log_limits(ax, sub["beta_eff"])
                int_log2_axis(ax, "y")
                ax.set_title(rf"{fam}, n = {n}, $\varepsilon$ = {e:g}", fontsize="medium")
                ax.set_xlabel(r"inverse temperature $\beta / t$ (log$_2$ scale)")
                if j == 0:
                    ax.set_ylabel(r"certified rank $r_\varepsilon$ (log$_2$ scale)")
        _bracket_legend(fig, "d", pal, fmt=lambda v: f"{int(v)}")
        _rank_ticks(axes)
        fig.suptitle("Synthetic families (exploratory): certified rank against inverse temperature")
        footnote(fig, ["Medians and quartiles over seeds."])
    return fig


#: name -> (function, caption) in report order.
FIGURES = {
    "rank_vs_eps": (
        rank_vs_eps,
        "Certified rank brackets against eps, one panel per checkpoint and length N, one "
        "colour per temperature.",
    ),
    "bracket_width": (
        bracket_width,
        "How wide the certified brackets are (hi / lo), by eps and temperature, one panel "
        "per checkpoint and length N.",
    ),
    "rank_vs_temperature": (
        rank_vs_temperature,
        "Certified rank brackets against temperature, one panel per checkpoint and length "
        "N, one colour per eps.",
    ),
    "descriptors_vs_midpoint": (
        descriptors_vs_midpoint,
        "Native kappa and intrinsic Pi against the bracket midpoint; training and "
        "held-out heads in different colours.",
    ),
    "forest": (
        forest,
        "Effects of the nested comparisons with 95% CIs; filled markers add information "
        "by the pre-specified rule.",
    ),
    "synthetic_rank_vs_beta": (
        synthetic_rank_vs_beta,
        "Exploratory synthetic families: certified rank against beta, one colour per d.",
    ),
}


def figures_for(results: StudyResults) -> dict[str, tuple[Callable[[StudyResults], Any], str]]:
    """The figures a report of ``results`` draws: :data:`FIGURES`, then
    :data:`analysis.report.family_figures.BY_CHECKPOINT_FIGURES` when the design asks
    for the by-checkpoint effects.

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.report.design import ReportDesign
    >>> e = pd.DataFrame()
    >>> plain = figures_for(StudyResults("t", "T", ReportDesign(), e, e))
    >>> asked = figures_for(StudyResults("t", "T", ReportDesign(by_checkpoint=True), e, e))
    >>> "forest" in plain, sorted(set(asked) - set(plain))
    (True, ['bracket_width_by_family', 'predicted_vs_bracket'])
    """
    out = dict(FIGURES)
    if results.by_checkpoint_asked:
        out.update(BY_CHECKPOINT_FIGURES)
    return out


FORMATS: tuple[str, ...] = ("png", "pdf")


def save_figure(
    fig: Figure, stem: str | Path, *, formats: Sequence[str] = FORMATS
) -> dict[str, Path]:
    """Write ``stem.png`` (150 dpi, Agg) and ``stem.pdf`` atomically.

    Parameters
    ----------
    fig : Figure
    stem : str or Path
        Path without suffix.
    formats : sequence of {"png", "pdf"}, keyword-only

    Returns
    -------
    dict
        Format -> written path.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> fig = Figure()
    >>> _ = fig.subplots()
    >>> written = save_figure(fig, "saved-figure")
    >>> sorted(written), [p.name for p in written.values()], written["png"].stat().st_size > 0
    (['pdf', 'png'], ['saved-figure.png', 'saved-figure.pdf'], True)
    >>> save_figure(fig, "x", formats=["svg"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: formats: expected among png, pdf, got 'svg'
    """
    for f in formats:
        if f not in FORMATS:
            raise ParameterError("formats", "among " + ", ".join(FORMATS), f)
    stem = Path(stem)
    out = {}
    for ext in formats:
        path = stem.with_suffix("." + ext)
        with figure_style(), atomic_write(path) as fh:
            fig.savefig(fh, format=ext, dpi=DPI)
        out[ext] = path
    return out
