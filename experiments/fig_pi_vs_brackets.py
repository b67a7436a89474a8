"""Figure: the intrinsic profile descriptor Pi_eps against certified brackets (training heads).

Extracts MiniLM at one length from the corpus (seed 0), brackets every *training* head
of the shipped MiniLM study (held-out heads are read from its locked design and never
bracketed here), computes the intrinsic block and plots ``Pi_eps`` against
``log2 lo`` and ``log2 hi``. The constant C_r of the profile bound is unknown, so this is
a picture, not a test (docs/method.md section 4).

Usage, from the repository root::

    python -m experiments.fig_pi_vs_brackets [--length 128] [--workers 2] [--effort default]
"""

from __future__ import annotations

import argparse
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from analysis.attention import softmax64  # noqa: E402
from analysis.brackets.io import MatrixInput, profile_file  # noqa: E402
from analysis.cli import main as attnrank  # noqa: E402
from analysis.descriptors.describe import describe_file  # noqa: E402
from analysis.executor import RunSpec  # noqa: E402
from analysis.prereg.design import load_design  # noqa: E402
from experiments.common import OUT, ROOT, command_line  # noqa: E402

EPS = (0.05, 0.1, 0.2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--length", type=int, default=128)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--effort", default="default")
    args = ap.parse_args()
    print("command:", command_line("experiments.fig_pi_vs_brackets"))
    out = OUT
    out.mkdir(parents=True, exist_ok=True)
    npz = out / f"minilm_corpus0_L{args.length}.npz"
    if not npz.is_file():
        attnrank(
            [
                "extract",
                "minilm",
                "--corpus-seed",
                "0",
                "--length",
                str(args.length),
                "--out",
                str(npz),
            ]
        )
    held = set(load_design(ROOT / "preregistration" / "offline-minilm.toml").held_out)
    with np.load(npz, allow_pickle=False) as z:
        Q, K, scale, mask = z["Q"], z["K"], z["scale"], z["mask"]
    nl, nh = Q.shape[:2]
    train = [
        (layer, head)
        for layer in range(nl)
        for head in range(nh)
        if f"sentence-transformers/all-MiniLM-L6-v2:{layer}:{head}" not in held
    ]
    A = np.stack(
        [
            softmax64(Q[layer, head], K[layer, head], scale[layer, head], mask)
            for layer, head in train
        ]
    )
    data = MatrixInput(
        A, [x[0] for x in train], [x[1] for x in train], f"fig:{npz.name}", 1.0, False
    )
    t0 = time.perf_counter()
    profiles = profile_file(
        data, eps=EPS, effort=args.effort, execution=RunSpec(workers=args.workers)
    )
    t1 = time.perf_counter()
    desc = describe_file(npz, eps=EPS, blocks=["intrinsic"], progress=True)
    t2 = time.perf_counter()
    rows = []
    for (layer, head), prof in zip(train, profiles, strict=True):
        for e in EPS:
            lo, hi = prof.bracket(e)
            rows.append({"layer": layer, "head": head, "eps": e, "lo": lo, "hi": hi})
    br = pd.DataFrame(rows)
    df = br.merge(desc[["layer", "head", "eps", "intrinsic__Pi"]], on=["layer", "head", "eps"])
    df.to_csv(out / "pi_vs_brackets.csv", index=False)
    print(f"{len(train)} training heads; brackets {t1 - t0:.0f} s, intrinsic block {t2 - t1:.0f} s")
    for e, g in df.groupby("eps"):
        rho_lo = g["intrinsic__Pi"].corr(np.log2(g["lo"]), method="spearman")
        rho_hi = g["intrinsic__Pi"].corr(np.log2(g["hi"]), method="spearman")
        print(
            f"eps={e:g}: Spearman(Pi, log2 lo) = {rho_lo:.3f}, Spearman(Pi, log2 hi) = {rho_hi:.3f}"
        )

    sns.set_theme(style="whitegrid", context="talk", font_scale=0.7)
    fig, axes = plt.subplots(1, len(EPS), figsize=(4.2 * len(EPS), 4.2), sharey=True)
    for ax, e in zip(axes, EPS, strict=True):
        g = df[df["eps"] == e]
        x = g["intrinsic__Pi"].to_numpy()
        lo, hi = np.log2(g["lo"].to_numpy()), np.log2(g["hi"].to_numpy())
        ax.vlines(x, lo, hi, color="tab:blue", alpha=0.6, lw=1.5, label="certified bracket")
        ax.scatter(x, lo, s=10, color="tab:blue", marker="_")
        ax.scatter(x, hi, s=10, color="tab:blue", marker="_")
        ax.set_title(f"eps = {e:g}  ({len(g)} training heads)")
        ax.set_xlabel("intrinsic profile exponent Pi_eps (bits)")
    axes[0].set_ylabel("log2 r_eps (bracket [lo, hi])")
    axes[0].legend(loc="upper left", fontsize=8)
    fig.suptitle(
        f"MiniLM, L = {args.length}, t = 1: Pi_eps vs certified rank brackets "
        "(no inequality implied: C_r unknown)",
        fontsize=10,
    )
    fig.tight_layout()
    figdir = ROOT / "docs" / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    for ext in ("png", "pdf"):
        fig.savefig(figdir / f"pi_vs_brackets.{ext}", dpi=150)
    print(f"wrote {figdir / 'pi_vs_brackets.png'} and .pdf")


if __name__ == "__main__":
    main()
