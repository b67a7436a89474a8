"""Benchmark: intrinsic block version 1 against a later version on a mix of extracted heads.

Describes a seeded sample of heads from each ``attnrank extract`` file given (all four
built-in blocks, eps 0.05 / 0.1 / 0.2, t = 1 by default) once with the intrinsic block at
version 1 and once at the version ``--new`` names (default 3), interleaved head by head
(the order alternates), on one thread, and prints the CPU seconds
(``time.process_time``) per matrix of each (median, p90, max, total), the speedup, and
how far the new version's features are from version 1's:
the largest relative difference of every intrinsic covariate and diagnostic, how many
kappa solves of each version stop above the certified gap ``KAPPA_TOL``, and whether
every pair of certified kappa intervals ``[kappa_lower, kappa]`` overlaps.

Run from the repository root, on files written by ``attnrank extract ALIAS --corpus-seed 0
--length L --out DIR/ALIAS_LL.npz`` (docs/results/descriptors.md, "Intrinsic block
version 2", gives the loop)::

    python -m benchmarks.bench_descriptors_mix DIR/*.npz [--heads 3] [--seed 0]
        [--eps 0.05 0.1 0.2] [--temperatures 1] [--new 3] [--out DIR]

``--out`` (default ``benchmarks/out/descriptors_mix``) receives ``times.csv`` (one row per
head; the new version's columns are called ``cpu_v2`` whatever its number) and
``features.csv`` (both versions' tables, ``v1`` and ``v2`` likewise).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

_BLOCKS = ("baseline", "baseline_plus", "native", "intrinsic")


def _describe(data: dict, li: int, hi: int, blocks: list, args: argparse.Namespace):
    from analysis.descriptors.describe import describe_matrix

    bias = data.get("bias")
    c0 = time.process_time()
    df = describe_matrix(
        Q=data["Q"][li, hi],
        K=data["K"][li, hi],
        scale=data["scale"][li, hi],
        mask=data["mask"],
        eps=args.eps,
        temperatures=args.temperatures,
        blocks=blocks,
        bias=None if bias is None else bias[li, hi],
        diagnostics=True,
    )
    return time.process_time() - c0, df


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    """Largest relative difference where both are finite (0 where both are 0)."""
    both = np.isfinite(a) & np.isfinite(b)
    if not both.any():
        return 0.0
    a, b = a[both], b[both]
    den = np.maximum(np.abs(a), np.abs(b))
    rel = np.where(den > 0, np.abs(a - b) / np.where(den > 0, den, 1.0), 0.0)
    return float(rel.max())


def compare(v1, v2) -> dict[str, float]:
    """Per intrinsic column group: the largest relative difference; plus certificate counts."""
    from analysis.descriptors.intrinsic import KAPPA_TOL

    out: dict[str, float] = {}
    cols = [c for c in v1.columns if c.startswith("intrinsic__")]
    groups: dict[str, list[str]] = {}
    for c in cols:
        name = c.removeprefix("intrinsic__")
        key = name.rsplit("_r", 1)[0] + "_r*" if name.rsplit("_r", 1)[-1].isdigit() else name
        groups.setdefault(key, []).append(c)
    for key, cs in sorted(groups.items()):
        a, b = v1[cs].to_numpy(float).ravel(), v2[cs].to_numpy(float).ravel()
        out[f"maxrel {key}"] = _rel(a, b)
        out[f"finite differs {key}"] = int((np.isfinite(a) != np.isfinite(b)).sum())
    kc = [c for c in cols if c.startswith("intrinsic__kappa_r")]
    lc = [c.replace("kappa_r", "kappa_lower_r") for c in kc]
    gc = [c.replace("kappa_r", "kappa_gap_r") for c in kc]
    k1, k2 = v1[kc].to_numpy(float), v2[kc].to_numpy(float)
    l1, l2 = v1[lc].to_numpy(float), v2[lc].to_numpy(float)
    both = np.isfinite(k1) & np.isfinite(k2)
    slack = 1e-12 * np.abs(np.where(both, k1, 0.0))
    apart = both & ((l2 > k1 + slack) | (l1 > k2 + slack))
    out["kappa intervals that do not overlap"] = int(apart.sum())
    for name, df in (("v1", v1), ("v2", v2)):
        # one solve per matrix and rank: the per-r kappa columns repeat in its cells
        g = df.drop_duplicates(["file", "layer", "head"])[gc].to_numpy(float)
        g = g[np.isfinite(g)]
        out[f"{name} kappa solves"] = int(g.size)
        out[f"{name} kappa gap > KAPPA_TOL"] = int((g > KAPPA_TOL).sum())
        out[f"{name} kappa gap max"] = float(g.max()) if g.size else 0.0
    return out


def main(argv: list[str] | None = None) -> int:
    from benchmarks.common import OUT

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("npz", type=Path, nargs="+", help="`attnrank extract` files")
    ap.add_argument("--heads", type=int, default=3, help="seeded heads per file")
    ap.add_argument("--seed", type=int, default=0, help="seed of the head samples")
    ap.add_argument("--eps", type=float, nargs="+", default=[0.05, 0.1, 0.2])
    ap.add_argument("--temperatures", type=float, nargs="+", default=[1.0])
    ap.add_argument("--new", type=int, default=3, help="intrinsic version against version 1")
    ap.add_argument("--out", type=Path, default=OUT / "descriptors_mix")
    args = ap.parse_args(argv)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    args.out.mkdir(parents=True, exist_ok=True)

    import pandas as pd
    from threadpoolctl import threadpool_limits

    from analysis.descriptors import build_registry
    from analysis.descriptors.describe import load_npz

    blocks = {
        v: [build_registry(versions={"intrinsic": n}).get(b) for b in _BLOCKS]
        for v, n in ((1, 1), (2, args.new))
    }
    rows, tables = [], {1: [], 2: []}
    with threadpool_limits(1):
        try:
            import torch

            torch.set_num_threads(1)
        except ImportError:  # pragma: no cover - torch is a dependency
            pass
        for fi, path in enumerate(args.npz):
            data = load_npz(path)
            n_layer, n_head = data["Q"].shape[:2]
            heads = [(li, hi) for li in range(n_layer) for hi in range(n_head)]
            rng = np.random.default_rng([args.seed, fi])
            pick = rng.choice(len(heads), min(args.heads, len(heads)), replace=False)
            for k, i in enumerate(sorted(pick)):
                li, hi = heads[i]
                order = (1, 2) if (fi + k) % 2 == 0 else (2, 1)
                cpu = {}
                for v in order:
                    cpu[v], df = _describe(data, li, hi, blocks[v], args)
                    keys = pd.DataFrame(
                        {"file": path.stem, "layer": li, "head": hi}, index=df.index
                    )
                    tables[v].append(pd.concat([keys, df], axis=1))
                rows.append(
                    {"file": path.stem, "layer": li, "head": hi, "cpu_v1": cpu[1], "cpu_v2": cpu[2]}
                )
                print(
                    f"{path.stem} {li}:{hi} v1 {cpu[1]:.2f} s v2 {cpu[2]:.2f} s "
                    f"({cpu[1] / max(cpu[2], 1e-9):.1f}x)",
                    flush=True,
                )
    times = pd.DataFrame(rows)
    times.to_csv(args.out / "times.csv", index=False)
    v1 = pd.concat(tables[1], ignore_index=True)
    v2 = pd.concat(tables[2], ignore_index=True)
    pd.concat({"v1": v1, "v2": v2}, names=["version"]).to_csv(args.out / "features.csv")
    summary: dict[str, float] = {"matrices": len(times), "new version": args.new}
    for v in (1, 2):
        c = times[f"cpu_v{v}"].to_numpy()
        q = np.quantile(c, [0.5, 0.9, 1.0])
        summary.update(
            {
                f"v{v} cpu median": q[0],
                f"v{v} cpu p90": q[1],
                f"v{v} cpu max": q[2],
                f"v{v} cpu total": c.sum(),
                f"v{v} cpu mean": c.mean(),
            }
        )
    summary["speedup (total)"] = summary["v1 cpu total"] / summary["v2 cpu total"]
    summary["speedup (median)"] = summary["v1 cpu median"] / summary["v2 cpu median"]
    summary.update(compare(v1, v2))
    other = [c for c in v1.columns if c.split("__")[0] in _BLOCKS[:3]]
    same = v1[other].fillna(0.0).to_numpy() == v2[other].fillna(0.0).to_numpy()
    summary["other blocks bit-identical"] = bool(same.all())
    by_file = times.groupby("file")[["cpu_v1", "cpu_v2"]].sum()
    print(by_file.assign(speedup=by_file.cpu_v1 / by_file.cpu_v2).round(2).to_string())
    for k, val in summary.items():
        print(f"{k}: {val:.3g}" if isinstance(val, float) else f"{k}: {val}")
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
