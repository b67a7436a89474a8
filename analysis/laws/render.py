"""Outputs of a laws run: tables, the figure, ``results.json``, and :func:`run_laws`.

:func:`run_laws` is the whole pipeline (sweep, fit, write): it brackets with
:func:`analysis.laws.sweep.run_sweep`, fits with :func:`analysis.laws.fit.fit_law` and
writes every output under one folder with atomic writes.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.atomic import atomic_write
from analysis.laws.fit import LawFit, fit_law
from analysis.laws.sweep import SweepConfig, run_sweep

__all__ = ["fits_frame", "local_frame", "markdown_table", "plot_law", "run_laws"]


def _uh(f: LawFit) -> dict[str, Any]:
    return f.extra["upper_half"]


def local_frame(fits: Sequence[LawFit]) -> pd.DataFrame:
    """Local slopes between consecutive betas, one row per (d, eps, pair).

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.laws import fit_law, local_frame
    >>> betas = [1.0, 3.0, 7.0, 15.0, 31.0, 63.0]  # r = 1 + beta exactly: every slope 1
    >>> r = [2, 4, 8, 16, 32, 64]
    >>> table = pd.DataFrame({"d": 3, "eps": 0.1, "n": 64, "seed": 0, "beta": betas,
    ...                       "lower": r, "upper": r})
    >>> frame = local_frame(fit_law(table, family="spherical", n_boot=0))
    >>> frame[["beta_from", "beta_to", "slope_mid"]].head(2)
       beta_from  beta_to  slope_mid
    0        1.0      3.0        1.0
    1        3.0      7.0        1.0
    """
    return pd.DataFrame(
        [{"d": f.d, "eps": f.eps, **row} for f in fits for row in f.extra["local_slopes"]]
    )


def fits_frame(fits: Sequence[LawFit]) -> pd.DataFrame:
    """The fits as a table, one row per (d, eps): slopes, sets, theory and verdicts (``fits.csv``).

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.laws import fit_law, fits_frame
    >>> rows = [(r - 1.0, r, r + 1) for r in (2, 3, 4, 6, 8, 16)]  # (beta, lower, upper)
    >>> table = pd.DataFrame(rows, columns=["beta", "lower", "upper"]).assign(d=3, eps=0.1)
    >>> fits = fit_law(table.assign(n=64, seed=0), family="spherical", n_boot=0)
    >>> frame = fits_frame(fits)
    >>> frame[["d", "beta_range", "slope", "theory", "within_tolerance"]].round(3)
       d beta_range  slope  theory  within_tolerance
    0  3       1-15    1.0     1.0              True
    """
    return pd.DataFrame([f.row() for f in fits])


def markdown_table(fits: Sequence[LawFit]) -> str:
    """The fits as a Markdown table (ours beside the paper's and the theory).

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.laws import fit_law, markdown_table
    >>> betas = [1.0, 2.0, 3.0, 5.0, 7.0, 15.0]
    >>> table = pd.DataFrame({"d": 3, "eps": 0.1, "n": 64, "seed": 0, "beta": betas,
    ...                       "lower": [2, 3, 4, 6, 8, 16], "upper": [3, 4, 5, 7, 9, 17]})
    >>> text = markdown_table(fit_law(table, family="spherical", n_boot=0))
    >>> text.splitlines()[0].startswith("| d | eps | n | beta | slope (interval ML) |")
    True
    >>> len(text.splitlines())  # header, rule, one row per (d, eps)
    3
    """
    ball = bool(fits) and fits[0].family == "ball"
    head = ["d", "eps", "n", "beta", "slope (interval ML)", "95% CI", "midpoint OLS"]
    head += ["identified set", "threading lines", "upper-half fit (post hoc)", "paper"]
    head += [] if ball else ["harmonic count (theory at these beta)"]
    head += ["theory", "|slope - theory|", "CI covers theory", "median hi/lo", "max hi/n"]
    head += ["n >= e^(beta/8)"] if ball else []
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for f in fits:
        ok = "ok" if f.within_tolerance else "MISSED"
        row = (
            [
                str(f.d),
                f"{f.eps:g}",
                str(f.n),
                f"{f.beta_range[0]:g}-{f.beta_range[1]:g}",
                f"{f.slope:.3f}" + (" (sigma -> 0)" if f.degenerate else ""),
                f"[{f.ci[0]:.3f}, {f.ci[1]:.3f}]",
                f"{f.slope_mid:.3f}",
                f"[{f.slope_set[0]:.2f}, {f.slope_set[1]:.2f}]",
                "none"
                if math.isnan(f.slope_threading[0])
                else f"[{f.slope_threading[0]:.2f}, {f.slope_threading[1]:.2f}]",
                "beta {}: {:.3f} [{:.2f}, {:.2f}]".format(
                    "-".join(f"{b:g}" for b in _uh(f)["beta_range"]), _uh(f)["slope"], *_uh(f)["ci"]
                ),
                "-" if f.paper is None else f"{f.paper:.3f}",
            ]
            + ([_harmonic_cell(f)] if not ball else [])
            + [
                f"{f.theory:g}",
                f"{abs(f.slope - f.theory):.3f} ({ok}, tol {f.tolerance:g})",
                "yes" if f.ci_covers_theory else "no",
                f"{f.median_width_ratio:.2f}",
                f"{f.max_upper_over_n:.2f}",
            ]
            + (["yes" if f.n_ok else "no"] if ball else [])
        )
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def _harmonic_cell(f: LawFit) -> str:
    h = f.extra.get("harmonic")
    if h is None:
        return "-"
    return "{:.3f}; upper half {:.3f}; inside {}/{} brackets".format(
        h["slope"], h["upper_half_slope"], h["inside"], h["n_matrices"]
    )


def plot_law(table: pd.DataFrame, fits: Sequence[LawFit], path_stem: Path) -> list[Path]:
    """Log-log figure: brackets as error bars, the interval-ML fit and the theory slope.

    One panel per d; colours per eps; spherical panels also mark the harmonic rank count
    (``x``, :mod:`analysis.laws.theory`) at each beta. The theory line has the theory slope
    and passes through the fitted line at the geometric centre of the beta range, so the
    two slopes can be compared by eye. Writes ``<stem>.png`` and ``<stem>.pdf`` atomically.

    Examples
    --------
    >>> from pathlib import Path
    >>> import pandas as pd
    >>> from analysis.laws import fit_law, plot_law
    >>> betas = [1.0, 2.0, 3.0, 5.0, 7.0, 15.0]
    >>> table = pd.DataFrame({"d": 3, "eps": 0.1, "n": 64, "seed": 0, "beta": betas,
    ...                       "lower": [2, 3, 4, 6, 8, 16], "upper": [3, 4, 5, 7, 9, 17]})
    >>> paths = plot_law(table, fit_law(table, family="spherical", n_boot=0), Path("law"))
    >>> [p.name for p in paths]
    ['law.png', 'law.pdf']
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    family = fits[0].family
    dims = sorted({f.d for f in fits})
    eps_all = sorted({f.eps for f in fits})
    colors = dict(zip(eps_all, sns.color_palette("deep", len(eps_all)), strict=True))
    sns.set_theme(style="whitegrid", context="paper")
    fig, axes = plt.subplots(1, len(dims), figsize=(4.0 * len(dims), 3.6), squeeze=False)
    xlabel = "1 + beta" if family == "spherical" else "beta"
    for ax, d in zip(axes[0], dims, strict=True):
        for f in (f for f in fits if f.d == d):
            g = table[(table["d"] == d) & (table["eps"] == f.eps)].sort_values(["beta", "seed"])
            xv = (1 + g["beta"].to_numpy()) if family == "spherical" else g["beta"].to_numpy()
            seeds = sorted(g["seed"].unique())
            jit = {s: 1.0 + 0.03 * (i - (len(seeds) - 1) / 2) for i, s in enumerate(seeds)}
            xj = xv * g["seed"].map(jit).to_numpy()
            lo = np.maximum(g["lower"].to_numpy(), 0.8)
            hi = g["upper"].to_numpy()
            c = colors[f.eps]
            ax.vlines(xj, lo, hi, color=c, lw=1.6, alpha=0.8)
            ax.plot(xj, lo, "_", color=c, ms=6)
            ax.plot(xj, hi, "_", color=c, ms=6)
            closed = lo == hi  # a closed bracket is a certified point: draw it as one
            ax.plot(xj[closed], hi[closed], "o", color=c, ms=3.5)
            xs = np.geomspace(xv.min(), xv.max(), 50)
            lx = np.log(xs)
            cx = float(np.mean(np.log(xv)))
            cy = f.intercept + f.slope * cx  # the ML line at the log-centre of the range
            label = (
                f"eps={f.eps:g}: interval ML {f.slope:.2f} [{f.ci[0]:.2f}, {f.ci[1]:.2f}]"
                f"\n  midpoint OLS {f.slope_mid:.2f}; brackets allow "
                f"[{f.slope_set[0]:.2f}, {f.slope_set[1]:.2f}]"
            )
            ax.plot(xs, np.exp(cy + f.slope * (lx - cx)), color=c, lw=1.4, label=label)
            if "harmonic" in f.extra:  # the theory's own count at these betas
                h = f.extra["harmonic"]
                hb = np.array([float(b) for b in h["counts"]])
                hr = np.array(list(h["counts"].values()), float)
                label = f"harmonic count (theory at these beta), slope {h['slope']:.2f}"
                ax.plot(1 + hb, hr, "x", color=c, ms=5, mew=1.2, label=label)
            label = f"theory slope {f.theory:g}" if f.eps == eps_all[0] else None
            ys = np.exp(cy + f.theory * (lx - cx))
            ax.plot(xs, ys, color="0.2", lw=1.0, ls="--", label=label)
        n = fits[0].n
        ax.set_xscale("log")
        ax.set_yscale("log")
        ticks = sorted(set((1 + table["beta"]) if family == "spherical" else table["beta"]))
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        if table.loc[table["d"] == d, "upper"].max() > n / 8:  # show n when it is in reach
            ax.axhline(n, color="0.5", lw=0.8, ls=":")
            ax.annotate(
                f"n = {n}", (ax.get_xlim()[1], n), fontsize=7, va="top", ha="right", color="0.4"
            )
        ax.set_title(f"{family}, d = {d}, n = {n}, {len(seeds)} seeds")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("certified bracket of r_eps")
        ax.legend(fontsize=6.5, loc="upper left", framealpha=0.9)
    fig.tight_layout()
    written = []
    for ext in ("png", "pdf"):
        p = path_stem.with_suffix("." + ext)
        with atomic_write(p, mode="wb") as fh:
            fig.savefig(fh, format=ext, dpi=150)
        written.append(p)
    plt.close(fig)
    return written


def _write_text(path: Path, text: str) -> None:
    with atomic_write(path, mode="w") as fh:
        fh.write(text)


def run_laws(
    config: SweepConfig,
    *,
    out: str | os.PathLike,
    workers: int = 1,
    progress: bool = True,
    n_boot: int = 499,
    tolerance: float | None = None,
    figure: bool = True,
    executor: Executor | None = None,
) -> dict[str, Any]:
    """Sweep, fit and write ``brackets.csv``, ``fits.csv``, ``fits.md``,
    ``local_slopes.csv``, ``results.json`` and ``law.png`` / ``law.pdf`` under ``out``.

    ``executor`` runs the sweep's matrices instead of ``workers`` processes
    (:func:`~analysis.laws.sweep.run_sweep`).

    Returns
    -------
    dict
        The ``--json`` object: ``family``, ``fits`` (one per (d, eps)), ``config`` and
        ``timing`` (wall seconds of this call; CPU seconds summed over the matrices
        computed now and over all matrices of the sweep).

    Examples
    --------
    >>> from pathlib import Path
    >>> from analysis.laws import default_config, make_config, run_laws
    >>> config = make_config(default_config("spherical"), dims=[3], betas=[1.0, 7.0], n=8,
    ...                      eps=[0.1], seeds=[0], effort="fast")
    >>> result = run_laws(config, out="laws", progress=False, n_boot=0, figure=False)
    >>> sorted(result), len(result["fits"])
    (['config', 'family', 'fits', 'timing'], 1)
    >>> sorted(p.name for p in Path("laws").iterdir())
    ['brackets.csv', 'brackets.jsonl', 'fits.csv', 'fits.md', 'local_slopes.csv', 'results.json']
    """
    out = Path(out)
    w0 = time.perf_counter()
    table = run_sweep(config, out=out, workers=workers, progress=progress, executor=executor)
    fits = fit_law(table, family=config.family, tolerance=tolerance, n_boot=n_boot)
    new = table[~table["cached"]]
    timing = {
        "wall_s": time.perf_counter() - w0,
        "matrices": int(len(table)),
        "computed": int(len(new)),
        "cpu_s_computed": float(new["cpu_s"].sum()),
        "cpu_s_all": float(table["cpu_s"].sum()),
        "cpu_s_per_matrix_median": float(table["cpu_s"].median()),
        "cpu_s_per_matrix_max": float(table["cpu_s"].max()),
        "workers": workers if executor is None else type(executor).__name__,
    }
    result = {
        "family": config.family,
        "fits": [f.to_json() for f in fits],
        "config": {
            "dims": list(config.dims),
            "betas": {str(d): list(b) for d, b in config.betas.items()},
            "n": config.n,
            "eps": list(config.eps),
            "seeds": list(config.seeds),
            "effort": config.effort,
            "design": config.design,
            "notes": list(config.notes),
        },
        "timing": timing,
    }
    cols = ["family", "d", "n", "beta", "seed", "eps", "effort", "lower", "upper", "cpu_s"]
    _write_text(out / "brackets.csv", table[cols].to_csv(index=False))
    _write_text(out / "fits.csv", fits_frame(fits).to_csv(index=False))
    notes = "".join(f"\nNote: {note}.\n" for note in config.notes)
    _write_text(out / "fits.md", markdown_table(fits) + notes)
    _write_text(out / "local_slopes.csv", local_frame(fits).to_csv(index=False))
    _write_text(out / "results.json", json.dumps(result, indent=1))
    if figure:
        plot_law(table, fits, out / "law")
    return result
