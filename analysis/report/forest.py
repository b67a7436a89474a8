"""The report's forest figure: every nested comparison's effect with its CI, per metric."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from analysis.compare.nested import FIT_FAILED
from analysis.report.plotting import figure_style, short_checkpoint
from analysis.report.results import StudyResults
from analysis.report.tables import hypotheses

__all__ = ["forest"]

_METRIC_TITLES = {
    "interval_sq_loss": "interval squared loss\n(effect = base - rich; > 0 helps)",
    "interval_loglik": "interval log-likelihood\n(effect = rich - base; > 0 helps)",
    "spearman_mid": "Spearman with midpoints\n(effect = rich - base; > 0 helps)",
}
#: Marker, colour and vertical offset of each estimator's rows.
_ESTIMATORS = {
    "interval (pre-specified)": ("o", sns.color_palette("deep")[0], 0.0),
    "OLS on midpoints (sensitivity)": ("s", "0.45", 0.22),
}
_STEP = 0.3  # between a pair's checkpoint rows


def _layout(
    results: StudyResults, df: pd.DataFrame, failed: pd.Series, n_cks: int
) -> tuple[list[str], list[str], dict[str, float], dict[str, str]]:
    """The pairs top to bottom (hypotheses in the Holm family first, sensitivity pairs
    after a gap), the sensitivity pairs, each pair's y and its tick label."""
    hyp = {h["pair"]: h for h in hypotheses(results.design)}
    family = results.design.family_pairs
    if not family:
        family = set(df.loc[df["p_holm"].notna(), "pair"])
    pairs = list(dict.fromkeys(df["pair"]))
    ordered = [p for p in hyp if p in pairs and p in family]
    ordered += [p for p in pairs if p in family and p not in ordered]
    sens = [p for p in pairs if p not in family]
    rows = ordered + sens
    block = 1.0 + _STEP * n_cks  # one pair: its overall rows, then its checkpoints
    ypos: dict[str, float] = {}
    y = 0.0
    for p in rows:
        if p in sens and not any(q in sens for q in ypos):
            y += 0.6
        ypos[p] = y
        y += block
    labels = {}
    for p in rows:
        h = hyp.get(p)
        tag = f"{h['id']} ({h['kind']})" if h else "sensitivity" if p in sens else ""
        labels[p] = f"{tag}\n{p}" if tag else p
        for est in df.loc[failed & (df["pair"] == p), "estimator"].unique():
            labels[p] += "\nFIT FAILED (" + est.split(" ")[0] + ")"
    return rows, sens, ypos, labels


def _ck_y(ypos: dict[str, float], pair: str, k: int) -> float:
    return ypos[pair] + 0.22 + _STEP * (k + 1)


def _panel(ax: Any, sub: pd.DataFrame, bc: pd.DataFrame | None, ypos: dict, cks: list) -> None:
    """One metric's effects: each estimator's rows, then the by-checkpoint rows."""
    for est, (mk, color, dy) in _ESTIMATORS.items():
        s = sub[sub["estimator"] == est]
        for r in s.itertuples(index=False):
            y = ypos[r.pair] + dy
            ax.hlines(y, r.ci_low, r.ci_high, color=color, lw=1.6)
            ax.plot(
                [r.effect], [y], marker="X" if r.status == FIT_FAILED else mk,
                ms=7, color=color,
                mfc=color if r.adds_information else "white", mew=1.5, ls="none",
            )  # fmt: skip
    if bc is None:
        return
    pal = _checkpoint_palette(cks)
    for r in bc.itertuples(index=False):
        if r.pair not in ypos:
            continue
        yk, color = _ck_y(ypos, r.pair, cks.index(str(r.checkpoint))), pal[str(r.checkpoint)]
        ax.hlines(yk, r.ci_low, r.ci_high, color=color, lw=1.1)
        ax.plot(
            [r.effect], [yk], marker="X" if r.status == FIT_FAILED else "D", ms=4.5,
            color=color, ls="none",
        )  # fmt: skip


def _checkpoint_palette(cks: list[str]) -> dict[str, Any]:
    return dict(zip(cks, sns.color_palette("colorblind", max(len(cks), 1)), strict=False))


def _legend(df: pd.DataFrame, failed: pd.Series, cks: list[str]) -> list[Line2D]:
    handles = []
    for est, (mk, color, _) in _ESTIMATORS.items():
        if (df["estimator"] == est).any():
            handles.append(Line2D([], [], marker=mk, color=color, ls="-", label=est))
    handles += [
        Line2D([], [], marker="o", color="0.2", ls="none", label="filled: adds information"),
        Line2D([], [], marker="o", color="0.2", mfc="white", ls="none", label="open: does not"),
    ]
    if cks:
        handles.append(
            Line2D([], [], marker="D", color="0.4", ms=4.5, ls="-", lw=1.1,
                   label="by checkpoint (secondary, no decision)")
        )  # fmt: skip
    if failed.any():
        handles.append(
            Line2D([], [], marker="X", color="0.2", mfc="white", ls="none",
                   label="cross: fit failed (no result)")
        )  # fmt: skip
    return handles


def forest(results: StudyResults) -> Figure | None:
    """Effects with 95% CIs per pair and metric; Holm decision marked; family vs sensitivity.

    The interval estimator (confirmatory) is drawn with circles; the OLS sensitivity
    refit, where present, with grey squares just below. Filled = adds information by the
    pre-specified rule; open = does not; a cross = a fit did not converge (``status``
    "fit failed"): drawn for completeness, not a result, and its label says so. When the
    design asks for the by-checkpoint effects and they are stored, each pair's rows are
    followed by one row per checkpoint (small diamonds, a colour per checkpoint): the same
    fits' effect on that checkpoint's held-out cells with its CI, secondary, no decision.

    Examples
    --------
    One pair compared on two metrics: a panel per metric, the pair on the y axis.

    >>> import pandas as pd
    >>> from analysis.report.design import ReportDesign
    >>> c = pd.DataFrame({"pair": "M0<M1", "metric": ["interval_sq_loss", "spearman_mid"],
    ...     "effect": [0.2, 0.05], "ci_low": [0.1, -0.01], "ci_high": [0.3, 0.1],
    ...     "p_value": [0.01, 0.2], "p_holm": [0.01, 0.2], "adds_information": [True, False]})
    >>> d, e = ReportDesign(family=(("M0", "M1"),)), pd.DataFrame()
    >>> fig = forest(StudyResults("t", "T", d, e, e, comparison=c))
    >>> len(fig.axes), [t.get_text() for t in fig.axes[0].get_yticklabels()]
    (2, ['M0<M1'])
    >>> forest(StudyResults("t", "T", d, e, e)) is None  # nothing compared yet
    True
    """
    frames = []
    if results.comparison is not None:
        frames.append(results.comparison.assign(estimator="interval (pre-specified)"))
    if results.comparison_ols is not None:
        frames.append(results.comparison_ols.assign(estimator="OLS on midpoints (sensitivity)"))
    if not frames:
        return None
    df = pd.concat(frames, ignore_index=True)
    if "status" not in df:  # a frame stored before fit diagnostics existed
        df["status"] = ""
    failed = df["status"] == FIT_FAILED
    bc = results.by_checkpoint  # the secondary rows, when asked for and stored
    if not results.by_checkpoint_asked or bc is None or bc.empty:
        bc = None
    cks = [] if bc is None else sorted(bc["checkpoint"].astype(str).unique())
    rows, sens, ypos, labels = _layout(results, df, failed, len(cks))
    block = 1.0 + _STEP * len(cks)
    metrics = list(dict.fromkeys(df["metric"]))
    primary = results.design.primary_metric
    if primary in metrics:
        metrics.remove(primary)
        metrics.insert(0, primary)
    with figure_style():
        fig = Figure(
            figsize=(3.6 * len(metrics) + 1.2, 0.75 * len(rows) * block + 1.8),
            layout="constrained",
        )
        axes = np.atleast_1d(fig.subplots(1, len(metrics), sharey=True, squeeze=False)).ravel()
        for ax, met in zip(axes, metrics, strict=True):
            ck_rows = None if bc is None else bc[bc["metric"] == met]
            _panel(ax, df[df["metric"] == met], ck_rows, ypos, cks)
            ax.axvline(0.0, color="0.2", ls="--", lw=0.9)
            ax.grid(axis="y", visible=False)
            if sens:
                ax.axhline(ypos[sens[0]] - 0.8, color="0.6", lw=0.8)
            ax.set_title(
                _METRIC_TITLES.get(met, met) + ("\nPRIMARY" if met == primary else ""),
                fontsize="medium",
            )
            ax.set_xlabel("effect with 95% cluster-bootstrap CI")
            ax.margins(x=0.15)
            # At most five ticks: effects of order 1e-3 print as long labels that crowd.
            ax.xaxis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 5, 10]))
        ax0 = axes[0]
        ticks = [(ypos[p] + 0.11, labels[p], p, None) for p in rows]
        ticks += [
            (_ck_y(ypos, p, k), short_checkpoint(c), p, c) for p in rows for k, c in enumerate(cks)
        ]
        ax0.set_yticks([t[0] for t in ticks], [t[1] for t in ticks])
        ax0.set_ylim(max(ypos.values()) + 0.8 + _STEP * len(cks), -0.6)
        pal = _checkpoint_palette(cks)
        for tick, (_, _, p, c) in zip(ax0.get_yticklabels(), ticks, strict=True):
            if c is not None:
                tick.set_color(pal[c])
                tick.set_fontsize("x-small")
            elif p in sens:
                tick.set_color("0.35")
                tick.set_style("italic")
        fig.legend(handles=_legend(df, failed, cks), loc="outside lower center", ncols=4,
                   frameon=False, fontsize="small")  # fmt: skip
        fig.suptitle(
            (
                "Nested comparisons on held-out heads (Holm family above the line; "
                "sensitivity pairs below, unadjusted)"
                if sens
                else "Nested comparisons on held-out heads (Holm family)"
            )
            + (
                "\nunder each pair: its effect within each checkpoint (secondary, outside "
                "the Holm family)"
                if cks
                else ""
            )
        )
    return fig
