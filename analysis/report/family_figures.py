"""Figures of a study over several checkpoints, drawn when its design asks for the
by-checkpoint effects (``[inference] by_checkpoint = true``): bracket width side by side
per checkpoint and length, and held-out predictions against the brackets per checkpoint.

Built on the shared helpers of :mod:`analysis.report.plotting`;
:func:`analysis.report.figures.figures_for` lists these in a report.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from analysis.report.plotting import (
    LEGEND_W,
    PANEL_H,
    PANEL_W,
    figure_style,
    footnote,
    ratio_ticks,
    seq_palette,
    short_checkpoint,
    width_boxes,
    width_cells,
)
from analysis.report.results import StudyResults
from analysis.report.tables import hypotheses

__all__ = ["BY_CHECKPOINT_FIGURES", "bracket_width_by_family", "predicted_vs_bracket"]


def bracket_width_by_family(results: StudyResults) -> Figure | None:
    """hi / lo side by side for every checkpoint and length N, a colour per eps.

    The families compared on one axis (temperatures pooled): one group of boxes per
    (checkpoint, N), ordered by checkpoint then N. Drawn only when the design asks for
    the by-checkpoint effects (:data:`BY_CHECKPOINT_FIGURES`).

    Examples
    --------
    Four real cells; the one with lo = 0 has no hi / lo, so three (checkpoint, N) groups:

    >>> from analysis.datasets import example_checkpoint_results
    >>> fig = bracket_width_by_family(example_checkpoint_results())
    >>> ax, = fig.axes
    >>> [t.get_text().replace("\\n", " ") for t in ax.get_xticklabels()], ax.get_ylabel()
    (['a N = 16', 'a N = 32', 'b N = 16'], 'hi / lo (log$_2$ scale)')
    """
    df, n_zero = width_cells(results)
    if df.empty:
        return None
    groups = sorted(df.groupby(["checkpoint", "length"]).groups)
    label = {g: f"{short_checkpoint(g[0])}\nN = {int(g[1])}" for g in groups}
    df["group"] = [label[(c, n)] for c, n in zip(df["checkpoint"], df["length"], strict=True)]
    order = [label[g] for g in groups]
    eps_order = [f"{v:g}" for v in sorted(df["eps"].unique())]
    pal = dict(zip(eps_order, seq_palette(df["eps"], "flare").values(), strict=True))
    with figure_style():
        fig = Figure(
            # about 1.9 in per (checkpoint, N) group: the checkpoint names are long
            figsize=(max(PANEL_W, 1.9 * len(order) + 1.0) + LEGEND_W, PANEL_H + 0.6),
            layout="constrained",
        )
        ax = fig.subplots()
        width_boxes(
            ax, df, x="group", order=order, hue="eps_label", hue_order=eps_order, palette=pal
        )
        ratio_ticks(ax, float(df["ratio"].max()))
        ax.set_xlabel("checkpoint and length N")
        ax.set_ylabel("hi / lo (log$_2$ scale)")
        handles = [Patch(color=pal[e], label=rf"$\varepsilon$ = {e}") for e in eps_order]
        fig.legend(handles=handles, loc="outside right center", frameon=False, fontsize="small")
        fig.suptitle("Width of the certified brackets by checkpoint and length (real heads)")
        heads = df.groupby("checkpoint")["head_id"].nunique()
        notes = [
            "Temperatures pooled; hi / lo = 1 is a closed bracket.",
            "Heads: "
            + ", ".join(f"{short_checkpoint(c)} {int(n)}" for c, n in heads.items())
            + ".",
            f"{n_zero} cell(s) with lo = 0 left out (hi / lo undefined)." if n_zero else "",
        ]
        footnote(fig, notes)
    return fig


def predicted_vs_bracket(results: StudyResults) -> Figure | None:
    """Held-out predictions against the certified brackets, a panel per checkpoint.

    Rows: the base and the rich model of the first pair of the Holm family (H1's M0 and
    M1 in the shipped designs), as fitted once on all training cells; columns: the
    checkpoints. Each held-out cell is a vertical segment [log2 lo, log2 hi] at its
    predicted log2 r, coloured by eps; it crosses the diagonal y = x when the prediction
    lies inside the bracket (interval squared loss 0). Drawn only when the design asks
    for the by-checkpoint effects and the held-out predictions are stored.

    Examples
    --------
    Two held-out cells predicted by M0 and M1; cell ``c``'s bracket is [2, 2] in log2,
    so M0's 1.0 misses it and M1's 2.0 lies inside:

    >>> import pandas as pd
    >>> from analysis.report.design import ReportDesign
    >>> from analysis.datasets import example_checkpoint_results
    >>> pred = pd.DataFrame({"cell_key": ["a", "c"] * 2, "cluster": ["h1", "h2"] * 2,
    ...     "checkpoint": ["org/a", "org/b"] * 2, "model": ["M0", "M0", "M1", "M1"],
    ...     "y_hat": [2.0, 1.0, 1.5, 2.0], "y_lower": [1.0, 2.0, 1.0, 2.0],
    ...     "y_upper": [3.0, 2.0, 3.0, 2.0]})
    >>> d = ReportDesign(family=(("M0", "M1"),), by_checkpoint=True)
    >>> fig = predicted_vs_bracket(example_checkpoint_results(design=d, held_out_predictions=pred))
    >>> [ax.get_title().split("inside ")[1] for ax in fig.axes]  # rows M0, M1; columns a, b
    ['100%', '0%', '100%', '100%']
    >>> no = ReportDesign(family=(("M0", "M1"),))  # by_checkpoint not asked: not drawn
    >>> predicted_vs_bracket(example_checkpoint_results(design=no,
    ...                                                 held_out_predictions=pred)) is None
    True
    """
    pred = results.held_out_predictions
    if not results.by_checkpoint_asked or pred is None or pred.empty:
        return None
    fam = results.design.family
    if not fam:
        return None
    base, rich = str(fam[0][0]), str(fam[0][1])
    hyp = {h["pair"]: h["id"] for h in hypotheses(results.design)}.get(f"{base}<{rich}", "")
    models = [m for m in (base, rich) if m in set(pred["model"])]
    if not models:
        return None
    df = pred[pred["model"].isin(models)].copy()
    df = df.merge(results.brackets[["cell_key", "eps"]], on="cell_key", how="left")
    df["checkpoint"] = df["checkpoint"].astype(str)
    lower = df["y_lower"].astype(float)
    n_inf = int(df.loc[~np.isfinite(lower), "cell_key"].nunique())
    df["y_lo_plot"] = lower.where(np.isfinite(lower), 0.0)  # lo = 0 drawn at lo = 1
    df["inside"] = (df["y_hat"] >= lower) & (df["y_hat"] <= df["y_upper"])
    cks = sorted(df["checkpoint"].unique())
    eps_vals = sorted(df["eps"].dropna().unique())
    pal = seq_palette(eps_vals, "flare") if eps_vals else {}
    ends = np.concatenate([df["y_hat"], df["y_lo_plot"], df["y_upper"]]).astype(float)
    ends = ends[np.isfinite(ends)]
    lim = (float(ends.min()) - 0.3, float(ends.max()) + 0.3)
    role = {base: "base", rich: "rich"}
    with figure_style():
        fig = Figure(
            figsize=(PANEL_W * len(cks) + LEGEND_W, PANEL_H * len(models) + 0.4),
            layout="constrained",
        )
        axes = fig.subplots(len(models), len(cks), squeeze=False, sharex=True, sharey=True)
        for i, m in enumerate(models):
            for j, ck in enumerate(cks):
                ax = axes[i, j]
                sub = df[(df["model"] == m) & (df["checkpoint"] == ck)]
                ax.axline((0.0, 0.0), slope=1.0, color="0.2", ls="--", lw=0.9)
                for e, g in sub.groupby("eps", dropna=False):
                    ax.vlines(
                        g["y_hat"], g["y_lo_plot"], g["y_upper"], color=pal.get(e, "0.4"),
                        alpha=0.5, lw=1.0,
                    )  # fmt: skip
                ax.set_xlim(*lim)
                ax.set_ylim(*lim)
                heads = sub["cluster"].nunique()
                ax.set_title(
                    f"{short_checkpoint(ck)}: {m} ({role[m]}{' of ' + hyp if hyp else ''})\n"
                    f"{heads} held-out heads, {len(sub)} cells; inside {sub['inside'].mean():.0%}",
                    fontsize="medium",
                )
                if i == len(models) - 1:
                    ax.set_xlabel(r"predicted $\log_2 r_\varepsilon$")
                if j == 0:
                    ax.set_ylabel(r"certified bracket [$\log_2$ lo, $\log_2$ hi]")
        handles = [
            Line2D([], [], color=c, lw=1.5, label=rf"$\varepsilon$ = {e:g}") for e, c in pal.items()
        ] + [Line2D([], [], color="0.2", ls="--", lw=0.9, label="y = x")]
        fig.legend(handles=handles, loc="outside right center", frameon=False, fontsize="small")
        fig.suptitle("Held-out cells: predicted rank against the certified bracket, by checkpoint")
        footnote(
            fig,
            [
                "Fits on all training cells (no refit per checkpoint); inside = share of "
                "cells whose prediction lies in its bracket (interval squared loss 0).",
                f"{n_inf} cell(s) with lo = 0 drawn from log2 lo = 0." if n_inf else "",
            ],
        )
    return fig


#: name -> (function, caption), drawn only when the design asks for the by-checkpoint
#: effects (``[inference] by_checkpoint = true``); never listed as "not drawn" otherwise.
BY_CHECKPOINT_FIGURES = {
    "bracket_width_by_family": (
        bracket_width_by_family,
        "Width of the certified brackets (hi / lo) side by side for every checkpoint and "
        "length N, one colour per eps (temperatures pooled).",
    ),
    "predicted_vs_bracket": (
        predicted_vs_bracket,
        "Held-out cells of each checkpoint: the predicted log2 rank of the first Holm "
        "pair's base and rich models (fitted once on all training cells) against the "
        "certified bracket, from log2 lo to log2 hi; the dashed line is y = x.",
    ),
}
