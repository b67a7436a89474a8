"""``attnrank evidence``'s outputs: the forest plot, the random-effects summaries and the page.

:func:`write_evidence` reads :func:`analysis.report.evidence.evidence_table` and writes,
each file atomically, ``OUT/evidence.md`` and ``OUT/evidence/`` (``evidence.csv``,
``random_effects.csv``, ``forest.png``). The summaries are exploratory
(:mod:`analysis.compare.meta`): the studies share heads and models.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from analysis.atomic import atomic_write
from analysis.compare.meta import random_effects
from analysis.report.evidence import evidence_table, locked_without_tables
from analysis.report.plotting import figure_style
from analysis.report.tables import markdown_table

__all__ = ["SUMMARY_COLUMNS", "forest_figure", "summaries", "write_evidence"]

#: The columns of the random-effects summaries, one row per hypothesis.
SUMMARY_COLUMNS: tuple[str, ...] = (
    "hypothesis",
    "k",
    "estimate_share",
    "ci_low_share",
    "ci_high_share",
    "tau2",
    "i2",
    "q",
    "q_df",
    "q_p",
)
_TICKS = (-5, -1, -0.2, -0.1, 0, 0.1, 0.2, 1, 5)
_LABELS = {"H1": "H1 native geometry (M0<M1)", "H2": "H2 intrinsic descriptor (M0<M2)"}


def summaries(table: pd.DataFrame) -> pd.DataFrame:
    """The exploratory random-effects summary of each hypothesis's effect shares.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`~analysis.report.evidence.evidence_table`'s rows.

    Returns
    -------
    pandas.DataFrame
        :data:`SUMMARY_COLUMNS`; a hypothesis with fewer than two studies has ``k`` and
        NaN elsewhere.

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.report.evidence_page import summaries
    >>> t = pd.DataFrame({"hypothesis": ["H1", "H1", "H2"], "effect_share": [0.1, 0.1, 0.0],
    ...                   "ci_low_share": [0.0, 0.05, -0.1], "ci_high_share": [0.2, 0.15, 0.1]})
    >>> s = summaries(t)
    >>> s[["hypothesis", "k"]].values.tolist(), round(float(s.estimate_share[0]), 3), float(s.tau2[0])
    ([['H1', 2], ['H2', 1]], 0.1, 0.0)
    """
    rows = []
    for h in dict.fromkeys(table["hypothesis"]):
        g = table[table["hypothesis"] == h]
        row: dict[str, object] = {c: np.nan for c in SUMMARY_COLUMNS}
        row.update(hypothesis=h, k=len(g))
        if len(g) >= 2:
            r = random_effects(g["effect_share"], g["ci_low_share"], g["ci_high_share"])
            row.update(
                estimate_share=r.estimate,
                ci_low_share=r.ci_low,
                ci_high_share=r.ci_high,
                tau2=r.tau2,
                i2=r.i2,
                q=r.q,
                q_df=r.q_df,
                q_p=r.q_p,
            )
        rows.append(row)
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))


def forest_figure(table: pd.DataFrame, summary: pd.DataFrame) -> Figure:
    """One row per (study, hypothesis): effect share with its CI, +-SESOI share marked,
    and each hypothesis's random-effects summary as a diamond.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`~analysis.report.evidence.evidence_table`'s rows.
    summary : pandas.DataFrame
        :func:`summaries` of it.

    Returns
    -------
    matplotlib.figure.Figure
        One axis; x linear within +-20% of M0's loss, logarithmic beyond.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from analysis.report.evidence_page import forest_figure, summaries
    >>> t = pd.DataFrame({"study": ["a", "b"], "hypothesis": ["H1", "H1"],
    ...                   "effect_share": [0.1, -0.5], "ci_low_share": [0.0, -2.0],
    ...                   "ci_high_share": [0.2, 0.1], "sesoi_share": [np.nan, 0.2]})
    >>> fig = forest_figure(t, summaries(t))
    >>> [x.get_text() for x in fig.axes[0].get_yticklabels()]
    ['H1  a', 'H1  b', 'H1  random effects (exploratory)']
    """
    with figure_style():
        labels, ys, rows = [], [], []
        y = 0.0
        for h in dict.fromkeys(table["hypothesis"]):
            for _, r in table[table["hypothesis"] == h].iterrows():
                rows.append((y, r))
                labels.append(f"{h}  {r['study']}{_tag(r)}")
                ys.append(y)
                y += 1
            s = summary[summary["hypothesis"] == h]
            if len(s) and np.isfinite(s["estimate_share"].iloc[0]):
                rows.append((y, s.iloc[0]))
                labels.append(f"{h}  random effects (exploratory)")
                ys.append(y)
                y += 1
            y += 0.6
        fig = Figure(figsize=(8.5, 0.45 * len(ys) + 1.6))
        ax = fig.subplots()
        pal = sns.color_palette("deep")
        for yy, r in rows:
            if "estimate_share" in r.index:  # a summary row
                e, lo, hi = r["estimate_share"], r["ci_low_share"], r["ci_high_share"]
                ax.plot([lo, hi], [yy, yy], color="0.2", lw=1.4)
                ax.plot([e], [yy], marker="D", color="0.2", ms=8)
                continue
            color = pal[0] if r["hypothesis"] == "H1" else pal[2]
            ax.plot([r["ci_low_share"], r["ci_high_share"]], [yy, yy], color=color, lw=2)
            ax.plot([r["effect_share"]], [yy], marker="o", color=color, ms=6)
            if np.isfinite(r["sesoi_share"]):
                for x in (-r["sesoi_share"], r["sesoi_share"]):
                    ax.plot([x, x], [yy - 0.3, yy + 0.3], color="0.4", lw=1.2, ls="--")
        ax.axvline(0, color="0.3", lw=0.8)
        ax.set_xscale("symlog", linthresh=0.2)
        lo, hi = ax.get_xlim()
        ticks = [t for t in _TICKS if lo <= t <= hi]
        ax.set_xticks(ticks, [f"{100 * t:+.0f}%" if t else "0" for t in ticks])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_yticks(ys, labels)
        ax.invert_yaxis()
        ax.set_xlabel(
            "effect as a share of the study's held-out M0 loss, 95% CI\n(axis linear within +-20%, logarithmic beyond)\n"
            "> 0 helps; dashed: +-SESOI share where the design set one"
        )
        fig.tight_layout()
    return fig


def _tag(r: object) -> str:
    """`` (exploratory)`` for a hypothesis its study reports as exploratory, e.g. one
    amended after its outcomes existed; its decision is not a preregistered one."""
    kind = getattr(r, "kind", "")
    return " (exploratory)" if isinstance(kind, str) and kind.startswith("exploratory") else ""


def _pct(x: float) -> str:
    return "-" if not np.isfinite(x) else f"{100 * x:+.1f}%"


def _answer(table: pd.DataFrame, summary: pd.DataFrame) -> list[str]:
    """The page's first lines: what the locked studies say together, per hypothesis."""
    out = []
    for h in dict.fromkeys(table["hypothesis"]):
        g = table[table["hypothesis"] == h]
        own = "; ".join(f"{r.study}: {r.decision_own}{_tag(r)}" for r in g.itertuples())
        v3 = "; ".join(f"{r.study}: {r.decision_v3 or 'none stored'}" for r in g.itertuples())
        line = (
            f"- **{_LABELS.get(h, h)}**, {len(g)} locked "
            f"{'study' if len(g) == 1 else 'studies'}. As locked: {own}. "
            f"Under method 3's decision rules: {v3}."
        )
        s = summary[summary["hypothesis"] == h]
        if len(s) and np.isfinite(s["estimate_share"].iloc[0]):
            s = s.iloc[0]
            line += (
                f" Pooled (exploratory random effects): {_pct(s.estimate_share)} of M0's loss "
                f"[{_pct(s.ci_low_share)}, {_pct(s.ci_high_share)}], I^2 {s.i2:.0%}, "
                f"Q {s.q:.2f} on {int(s.q_df)} df (p {s.q_p:.2g})."
            )
        out.append(line + " " + _plain(g, s))
    return out


def _plain(g: pd.DataFrame, s: pd.Series | pd.DataFrame) -> str:
    """One sentence in plain words: do the studies agree under method 3, and does the
    pooled CI include 0."""
    words = [w for w in g["decision_v3"] if isinstance(w, str) and w]
    if not words:
        text = "No study has a method-3 decision stored."
    elif len(set(words)) == 1:
        text = f"In plain words: every study with a method-3 decision reads *{words[0]}*."
    else:
        counts = pd.Series(words).value_counts(sort=False)
        text = (
            "In plain words: the studies do not agree under method 3 ("
            + ", ".join(f"{n} x *{w}*" for w, n in counts.items())
            + ")."
        )
    if isinstance(s, pd.Series) and np.isfinite(s["ci_low_share"]):
        inside = s["ci_low_share"] <= 0 <= s["ci_high_share"]
        text += f" The pooled CI {'includes' if inside else 'excludes'} 0."
    return text


def _page(table: pd.DataFrame, summary: pd.DataFrame, missing: Sequence[tuple[str, str]]) -> str:
    shown = table.assign(
        effect_share=table["effect_share"].map(_pct),
        ci_share=[
            f"[{_pct(a)}, {_pct(b)}]"
            for a, b in zip(table.ci_low_share, table.ci_high_share, strict=True)
        ],
        sesoi_share=table["sesoi_share"].map(lambda x: "-" if not np.isfinite(x) else f"{x:.0%}"),
        method_own=table["method_own"].map(lambda m: f"v{m}"),
    )[
        [
            "study",
            "hypothesis",
            "kind",
            "n_heads_held_out",
            "base_loss",
            "effect",
            "effect_share",
            "ci_share",
            "sesoi_share",
            "p_holm",
            "method_own",
            "decision_own",
            "decision_v3",
            "v3_source",
        ]
    ]
    summ = summary.assign(
        estimate=summary["estimate_share"].map(_pct),
        ci=[
            f"[{_pct(a)}, {_pct(b)}]"
            for a, b in zip(summary.ci_low_share, summary.ci_high_share, strict=True)
        ],
    )[["hypothesis", "k", "estimate", "ci", "tau2", "i2", "q", "q_df", "q_p"]]
    lines = [
        "# Every locked study side by side: H1 and H2",
        "",
        "<!-- generated by `attnrank evidence`; edit analysis/report/evidence_page.py, not this page -->",
        "",
        "**What the locked studies say together** (primary metric, effect = M0's held-out loss "
        "minus the richer model's, as a share of M0's loss; > 0 means the block helps):",
        "",
        *_answer(table, summary),
        *(
            [
                "- Not in the table, though their outcomes exist: "
                + ", ".join(f"`{d}`" for d, why in missing if "outcomes recorded," in why)
                + " (no stored comparison table; see the last section)."
            ]
            if any("outcomes recorded," in why for _, why in missing)
            else []
        ),
        "",
        "Read each study's decision, not the pooled number. The pooled "
        "summaries are exploratory: the studies share checkpoints, heads and the package's "
        "code, so they are not independent samples, and their CIs are too narrow by an "
        "unknown amount; Q and I^2 say how much the studies disagree beyond their own CIs.",
        "",
        "![forest plot](evidence/forest.png)",
        "",
        markdown_table(shown),
        "",
        "**How the table is built.** Each study's stored `tables/comparisons.csv` (no study is "
        "re-run); the studies are every design in `preregistration/` with a lock whose "
        "comparison table ships under `docs/results/*/tables/` (a new locked study, such as "
        "the replication, appears once its tables are written there). Shares divide the "
        "effect, its CI's ends and the SESOI by `base_loss`, M0's held-out loss. "
        "`decision_own` is the decision under the study's own method (method 2 reads "
        "'equivalent within SESOI' as non-superiority, docs/prereg.md, \"Method 3\"). "
        "`decision_v3` is the locked numbers under method 3's decision rules, from, in this "
        "order: the study itself if it ran under method 3; its stored exploratory "
        're-analysis `tables/reanalysis_v3.csv`, variant "(a) v3 decisions"; for a '
        "hypothesis without a SESOI, method 3's rule (adds information / harms / "
        "inconclusive) applied to its stored CI and Holm p, which is all that rule reads; "
        "otherwise empty (a SESOI's two-sided TOST needs the bootstrap replicates, which "
        "the tables do not keep). Method 3's other rules (leave-one-head-out calibration, "
        "the refit bootstrap, the stratified split) change the numbers and are not applied "
        "here; see each study's page. `kind` is the hypothesis's kind as its study's report "
        "states it: one amended after its outcomes existed (MiniLM's offline-minilm) is "
        "exploratory, and its decision is not a preregistered one.",
        "",
        "## Random-effects summary (exploratory)",
        "",
        markdown_table(summ),
        "",
        "DerSimonian-Laird random effects over the studies' effect shares "
        '(`statsmodels.stats.meta_analysis.combine_effects`, `method_re="dl"`), each '
        "study's standard error read off its 95% CI as (high - low) / (2 x 1.96): exact "
        "for a symmetric normal CI, an approximation for these percentile bootstrap CIs, "
        "which are asymmetric. tau2 is the between-study variance (in squared shares), i2 "
        "Higgins' I^2, q Cochran's Q on q_df degrees of freedom with its chi-square p. "
        "With two or three studies tau2 and I^2 are very imprecise. **Not independent**: "
        "the studies share checkpoints (and so heads) and one analysis code; the summary is a description, no "
        "decision rests on it.",
    ]
    if missing:
        lines += ["", "## Locked designs not in the table", ""]
        lines += [f"- `{d}`: {why}." for d, why in missing]
        lines += [
            "",
            "A study listed here whose outcomes exist has its numbers quoted on its own page "
            "in docs/results/ but no stored comparison table to read (its run's tables are "
            "not in the repository), so it has no base loss to divide by and is left out "
            "rather than transcribed from prose.",
        ]
    lines += [
        "",
        "Regenerate (writes this page and `evidence/`; from the repository root):",
        "",
        "<!-- not run: rewrites this page and its files -->",
        "```bash",
        "attnrank evidence",
        "```",
        "",
    ]
    return "\n".join(lines)


def write_evidence(root: str | Path, out: str | Path | None = None) -> dict[str, Path]:
    """Write the evidence page and its files; return their paths.

    Parameters
    ----------
    root : str or Path
        The repository's folder (its ``preregistration/`` and ``docs/results/``).
    out : str or Path, optional
        The folder of ``evidence.md`` and ``evidence/`` (default ``root/docs/results``).

    Returns
    -------
    dict
        ``page``, ``table``, ``summary``, ``forest``: the paths written.

    Examples
    --------
    >>> from pathlib import Path
    >>> import analysis
    >>> from analysis.report.evidence_page import write_evidence
    >>> paths = write_evidence(Path(analysis.__file__).resolve().parents[1], "out")
    >>> sorted(p.relative_to("out").as_posix() for p in paths.values())
    ['evidence.md', 'evidence/evidence.csv', 'evidence/forest.png', 'evidence/random_effects.csv']
    """
    root = Path(root)
    out = Path(out) if out is not None else root / "docs" / "results"
    table = evidence_table(root)
    summary = summaries(table)
    missing = locked_without_tables(root)
    paths = {
        "page": out / "evidence.md",
        "table": out / "evidence" / "evidence.csv",
        "summary": out / "evidence" / "random_effects.csv",
        "forest": out / "evidence" / "forest.png",
    }
    with atomic_write(paths["table"], mode="w") as fh:
        table.to_csv(fh, index=False, lineterminator="\n")
    with atomic_write(paths["summary"], mode="w") as fh:
        summary.to_csv(fh, index=False, lineterminator="\n")
    fig = forest_figure(table, summary)
    with atomic_write(paths["forest"], mode="wb") as fh:
        fig.savefig(fh, format="png", dpi=120, metadata={"Software": None})
    with atomic_write(paths["page"], mode="w") as fh:
        fh.write(_page(table, summary, missing))
    return paths
