"""Benchmark ``attnrank validate-comparison``: false-positive rate, power and runtime.

Usage, from the repository root::

    python -m benchmarks.bench_validate_comparison [--simulations 200] [--seed 0]
        [--widths FILE] [--grid] [--power-curve N] [--heads-curve N] [--figure-dir DIR]
        [--design FILE] [--native-head-share S]

``--design`` and ``--native-head-share`` apply to the headline run, e.g. the paper's grid:
``--design preregistration/paper-checkpoints.toml --native-head-share 0.77
--widths data/reference/minilm_bracket_widths.csv``.

``--power-curve N`` sweeps the effect share (0.05 .. 0.4) and the native head share
(0, 0.25, 0.5, 0.75) with N simulations per cell, ``--heads-curve N`` the number of
held-out heads (18, 36, 72; the training set grows with it at fraction 0.25) at the
default effect. Both write CSVs and ``power_curve.png`` under ``benchmarks/out/``
(``--figure-dir`` copies the CSVs and the figure there too, e.g. ``docs/figures``).

Without ``--widths`` it writes a STAND-IN width file (integer brackets drawn from a
plausible distribution: log2 rank uniform on [1.5, 4.5] shifted by eps; hi/lo
log-normal around 2.3 before integer rounding, as docs/method.md section 7 expects of a full
engine run; 2% closed) and says so in its output. Pass
``--widths data/reference/minilm_bracket_widths.csv`` (written by ``attnrank
reference-widths``) for the engine's widths.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.cli import main as cli_main
from benchmarks.common import OUT


def write_standin_widths(path: Path, *, seed: int = 0, per_eps: int = 432) -> None:
    """Plausible integer brackets (stand-in until the engine's widths exist)."""
    rng = np.random.default_rng(seed)
    rows = []
    for eps in (0.05, 0.1, 0.2):
        for _ in range(per_eps):
            r = 2 ** rng.uniform(1.5, 4.5) * (0.1 / eps) ** 0.4
            closed = rng.uniform() < 0.02
            ratio = 1.0 if closed else float(np.exp(rng.normal(np.log(2.3), 0.35)))
            a = rng.uniform()
            lo = max(1, int(np.floor(r / ratio**a)))
            hi = lo if closed else max(lo, int(np.ceil(r * ratio ** (1 - a))))
            rows.append((eps, lo, hi))
    pd.DataFrame(rows, columns=["eps", "lower", "upper"]).to_csv(path, index=False)


def run(args_list: list[str]) -> dict:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = cli_main(["validate-comparison", "--json", *args_list])
    if rc != 0:
        raise SystemExit(rc)
    return json.loads(buf.getvalue())


EFFECTS = (0.05, 0.1, 0.2, 0.3, 0.4)
HEAD_SHARES = (0.0, 0.25, 0.5, 0.75)
HELD_OUT = (18, 36, 72)


def _progress(desc: str, total: int):
    from tqdm import tqdm

    bar = tqdm(total=total, desc=desc, file=sys.stderr, mininterval=5)

    def step(done: int, _total: int) -> None:
        bar.update(done - bar.n)

    return bar, step


#: The shipped design whose sizes and covariate counts (from its lock) the curves use.
DESIGN = Path("preregistration/offline-minilm.toml")


def _design_sizes():
    from analysis.power import sizes_from_design

    return sizes_from_design(DESIGN)


def run_power_curve(widths: Path, n: int, seed: int, out: Path) -> pd.DataFrame:
    """Power against effect share and native head share (MiniLM sizes)."""
    from analysis.power import PowerSpec, load_widths, minimum_detectable_effect, power_curve

    w = load_widths(widths)
    bar, step = _progress("power curve", len(HEAD_SHARES) * (1 + len(EFFECTS)) * n)
    t0 = time.perf_counter()
    spec = PowerSpec(simulations=n, sizes=_design_sizes(), random_state=seed)
    curve = power_curve(w, spec, effects=EFFECTS, head_shares=HEAD_SHARES, progress=step)
    bar.close()
    curve.to_csv(out / "power_curve.csv", index=False)
    mde = minimum_detectable_effect(curve)
    mde.to_csv(out / "power_mde.csv", index=False)
    print(f"power curve: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return curve


def run_heads_curve(
    widths: Path,
    n: int,
    seed: int,
    out: Path,
    *,
    held_out: tuple[int, ...] = HELD_OUT,
    head_shares: tuple[float, ...] = (0.5, 0.75),
    name: str = "power_heads.csv",
) -> pd.DataFrame:
    """Power against the number of held-out heads (fraction 0.25, effect 0.1)."""
    import dataclasses

    from analysis.power import PowerSpec, load_widths, power_curve

    w = load_widths(widths)
    base = _design_sizes()
    frames = []
    for h in held_out:
        sizes = dataclasses.replace(
            base, name=f"MiniLM grid, {4 * h} heads", n_heads=4 * h, n_held_out=h, strata=()
        )
        bar, step = _progress(f"held-out {h}", 2 * len(head_shares) * n)  # null + 1 effect
        frames.append(
            power_curve(
                w,
                PowerSpec(simulations=n, sizes=sizes, random_state=seed),
                effects=(0.1,),
                head_shares=head_shares,
                progress=step,
            )
        )
        bar.close()
    curve = pd.concat(frames, ignore_index=True)
    curve.to_csv(out / name, index=False)
    return curve


def plot_curves(effect_curve: pd.DataFrame | None, heads_curve: pd.DataFrame | None, path: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    panels = [c for c in (effect_curve, heads_curve) if c is not None]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4), squeeze=False)
    sns.set_theme(style="whitegrid", context="paper")
    for ax, (curve, x, xlabel) in zip(
        axes[0],
        [
            t
            for t in (
                (effect_curve, "effect", "effect share (of the variance M0 leaves)"),
                (heads_curve, "n_held_out", "held-out heads (fraction 0.25; effect 0.1)"),
            )
            if t[0] is not None
        ],
        strict=True,
    ):
        d = curve.assign(head_share=curve["native_head_share"].map(lambda v: f"{v:g}"))
        pal = dict(
            zip(
                sorted(d["head_share"].unique(), key=float),
                sns.color_palette("viridis", d["head_share"].nunique()),
                strict=True,
            )
        )
        sns.lineplot(d, x=x, y="power", hue="head_share", marker="o", ax=ax, palette=pal)
        for share, g in d.groupby("head_share"):
            ax.plot(g[x], g["power_approx"], ls="--", lw=0.9, color=pal[share])
        for _, r in d.iterrows():
            ax.errorbar(r[x], r["power"], yerr=1.96 * r["power_se"], color="0.6", lw=0.8, zorder=0)
        ax.axhline(0.8, ls="--", color="0.3", lw=0.8)
        ax.axhline(0.05, ls=":", color="0.3", lw=0.8)
        ax.set_title(
            f"N = {int(curve['simulations'].iloc[0])} per point; null FPR "
            f"{curve['false_positive_rate'].min():.2f}-{curve['false_positive_rate'].max():.2f}"
            "\nsolid: simulated pipeline; dashed: normal approximation",
            fontsize=9,
        )
        ax.set_xlabel(xlabel)
        ax.set_ylim(0, 1)
        ax.legend(title="native head share", fontsize=8, title_fontsize=8)
    axes[0][0].set_ylabel("power (M0<M1 adds information)")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--simulations", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--widths")
    ap.add_argument(
        "--grid",
        action="store_true",
        help="also sweep residual SD and the native head share (N/4 each)",
    )
    ap.add_argument("--power-curve", type=int, metavar="N", help="effect x head-share sweep")
    ap.add_argument("--heads-curve", type=int, metavar="N", help="held-out heads sweep")
    ap.add_argument(
        "--held-out",
        type=int,
        nargs="+",
        default=list(HELD_OUT),
        help="held-out head counts of --heads-curve (18 36 72)",
    )
    ap.add_argument(
        "--heads-shares",
        type=float,
        nargs="+",
        default=[0.5, 0.75],
        help="native head shares of --heads-curve (0.5 0.75)",
    )
    ap.add_argument("--heads-out", default="power_heads.csv", help="CSV name of --heads-curve")
    ap.add_argument("--figure-dir", type=Path, help="also copy CSVs and the figure here")
    ap.add_argument("--skip-headline", action="store_true", help="only the curves")
    ap.add_argument(
        "--design",
        help=f"headline only: take the study sizes from this design (default {DESIGN})",
    )
    ap.add_argument(
        "--native-head-share",
        type=float,
        help="headline only: native head share (default: the command's, 0.5)",
    )
    ap.add_argument(
        "--replot", action="store_true", help="redraw power_curve.png from the CSVs in out/"
    )
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory()
    if args.widths:
        widths = Path(args.widths)
        note = f"widths from {widths}"
    else:
        widths = Path(tmp.name) / "standin_widths.csv"
        write_standin_widths(widths)
        note = (
            "STAND-IN widths (plausible integer brackets, hi/lo ~2.3 before rounding "
            "to integers); not the "
            "engine's: rerun with --widths data/reference/minilm_bracket_widths.csv"
        )
    print(note, file=sys.stderr)
    w = pd.read_csv(widths)
    ratio = w["upper"] / w["lower"]
    print(
        f"width file: {len(w)} brackets, median hi/lo {ratio.median():.2f}, "
        f"closed {np.mean(ratio == 1):.3f}",
        file=sys.stderr,
    )
    out_dir = OUT
    out_dir.mkdir(parents=True, exist_ok=True)
    if args.replot:
        ec, hc = (
            pd.read_csv(out_dir / f) if (out_dir / f).is_file() else None
            for f in ("power_curve.csv", "power_heads.csv")
        )
        plot_curves(ec, hc, out_dir / "power_curve.png")
        return 0
    if args.power_curve or args.heads_curve:
        ec = (
            run_power_curve(widths, args.power_curve, args.seed, out_dir)
            if args.power_curve
            else None
        )
        hc = (
            run_heads_curve(
                widths,
                args.heads_curve,
                args.seed,
                out_dir,
                held_out=tuple(args.held_out),
                head_shares=tuple(args.heads_shares),
                name=args.heads_out,
            )
            if args.heads_curve
            else None
        )
        if args.heads_out == "power_heads.csv":  # the figure shows the default sweeps only
            plot_curves(ec, hc, out_dir / "power_curve.png")
        cols = [
            "effect",
            "native_head_share",
            "n_held_out",
            "false_positive_rate",
            "power",
            "power_se",
            "mean_effect_null",
            "mean_effect_alternative",
            "sd_effect_alternative",
            "z_approx",
            "power_approx",
        ]
        for c in (ec, hc):
            if c is not None:
                print(c[cols].round(3).to_string(index=False))
        if ec is not None:
            print((out_dir / "power_mde.csv").read_text())
        if args.figure_dir:
            import shutil

            args.figure_dir.mkdir(parents=True, exist_ok=True)
            for f in ("power_curve.png", "power_curve.csv", "power_heads.csv", "power_mde.csv"):
                if (out_dir / f).is_file():
                    shutil.copy(out_dir / f, args.figure_dir / f)
    if args.skip_headline:
        return 0
    t0 = time.perf_counter()
    argv = ["--simulations", str(args.simulations), "--seed", str(args.seed)]
    argv += ["--widths", str(widths)]
    if args.design:
        argv += ["--design", args.design]
    if args.native_head_share is not None:
        argv += ["--native-head-share", str(args.native_head_share)]
    out = run(argv)
    out["wall_seconds"] = round(time.perf_counter() - t0, 1)
    out["widths_note"] = note
    print(json.dumps(out))
    if args.grid:
        n = max(2, args.simulations // 4)
        for rsd in (0.75, 1.0):
            for share in (0.0, 0.25, 0.5, 0.75):
                r = run(
                    [
                        "--simulations",
                        str(n),
                        "--seed",
                        str(args.seed),
                        "--widths",
                        str(widths),
                        "--residual-sd",
                        str(rsd),
                        "--native-head-share",
                        str(share),
                    ]
                )
                keep = ("false_positive_rate", "size_boundary", "power", "mde", "simulations")
                row = {k: r[k] for k in (*keep, "seconds")}
                row.update({k: r["assumptions"][k] for k in ("residual_sd", "native_head_share")})
                print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
