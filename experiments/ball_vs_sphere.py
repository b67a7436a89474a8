"""Full ball against sphere at equal (d, beta, n, eps, seed): does the ball grow faster?

The full-ball law (``r ~ beta^(d/2)``) is half a power above the spherical one
(``beta^((d-1)/2)``), so on a grid where both laws hold the ratio ``r_ball / r_sphere``
grows like ``beta^(1/2)``. This experiment runs ``run_laws`` for both families on the ball's
default beta grid with the same seeds (a ball matrix and its sphere partner share the
point directions; the ball only draws radii on top) and reports, per (d, beta), both
certified brackets, the certified range of the ratio ``[lo_ball / hi_sphere,
hi_ball / lo_sphere]``, the ratio of bracket midpoints, and the slope of the log ratio
against ``log beta`` (midpoints, OLS), against the 0.5 the two laws predict together.

Usage, from the repository root::

    python -m experiments.ball_vs_sphere [--dims 2 3 4] [--seeds 0] [--workers 2]
        [--effort default] [--out experiments/out/ball_vs_sphere]

Brackets are cached under ``OUT/<family>-d<d>/`` (``run_laws``), so a re-run only refits.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.laws import DEFAULT_BETAS, default_config, make_config, run_laws
from experiments.common import OUT, command_line


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", type=int, nargs="+", default=[2, 3, 4])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--eps", type=float, default=0.1)
    ap.add_argument("--effort", default="default")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=OUT / "ball_vs_sphere")
    args = ap.parse_args()
    print("command:", command_line("experiments.ball_vs_sphere"))
    t0 = time.perf_counter()
    frames = []
    for d in args.dims:
        for family in ("ball", "spherical"):
            cfg = make_config(
                default_config(family),
                dims=[d],
                betas=DEFAULT_BETAS["ball"][d],
                n=args.n,
                eps=[args.eps],
                seeds=args.seeds,
                effort=args.effort,
            )
            out = args.out / f"{family}-d{d}"
            run_laws(cfg, out=out, workers=args.workers, progress=False, figure=False)
            frames.append(pd.read_csv(out / "brackets.csv"))
    df = pd.concat(frames)
    key = ["d", "beta", "seed"]
    cols = [*key, "lower", "upper"]
    both = df.loc[df["family"] == "ball", cols].merge(
        df.loc[df["family"] == "spherical", cols], on=key, suffixes=("_ball", "_sphere")
    )
    both["ratio_min"] = both["lower_ball"] / both["upper_sphere"]
    both["ratio_max"] = both["upper_ball"] / both["lower_sphere"].clip(lower=1)
    both["ratio_mid"] = (both["lower_ball"] + both["upper_ball"]) / (
        both["lower_sphere"] + both["upper_sphere"]
    )
    args.out.mkdir(parents=True, exist_ok=True)
    both.to_csv(args.out / "pairs.csv", index=False)
    print(both.round(3).to_string(index=False))
    slopes = {}
    for d, g in both.groupby("d"):
        x, y = np.log(g["beta"]), np.log(g["ratio_mid"])
        slopes[int(d)] = float(np.polyfit(x, y, 1)[0])
    summary = {
        "wall_s": time.perf_counter() - t0,
        "ratio_midpoint_slope": slopes,
        "predicted_by_the_two_laws": 0.5,
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
