"""Where the four-family study's descriptor stage spends its time, and why.

The descriptor stage of ``make study`` (``preregistration/offline-families.toml``) is the
second-largest stage after the brackets. This experiment samples ``--per-group`` stored
matrices of every (checkpoint, length) of a study store, describes each exactly as the
stage does (:func:`analysis.study.describe.describe_frame`: one process, one thread, the
design's eps, temperatures and blocks), and records every factor-radius solve the
intrinsic block makes (rank, iterations, seconds, whether it stopped at ``max_iter``).
It projects the stage's CPU seconds from the sample (group mean x group size).

With ``--stall`` it then takes every solve of the sample that stopped at ``max_iter`` and
reads its upper value and certified lower bound at ``--checkpoints`` iterations along the
same iterates (a solve stopped at ``max_iter`` and resumed follows an uninterrupted one),
relative to the lower bound at the last checkpoint: how early the lower bound settles and
how slowly the attained (upper) value follows.

With ``--tolerances T1 T2 ...`` it instead describes each sampled matrix's intrinsic block
once per kappa tolerance (the block's ``KAPPA_TOL``; the first is the reference) and
reports CPU per matrix, the stage's projected CPU, and how far ``Pi`` moves and whether
``r_star`` or ``interaction_dim`` change against the reference: what the intrinsic block's
tolerance costs and buys (docs/results/families-study.md, "Amendment 1").

Run from the repository root after ``make study`` (or any run of the design)::

    python -m experiments.descriptor_cost --per-group 6 --stall
    python -m experiments.descriptor_cost --per-group 3 --seed 11 --tolerances 5e-7 1e-5 1e-4

Writes ``experiments/out/descriptor_cost_matrices.csv`` (one row per sampled matrix) and,
with ``--stall``, ``experiments/out/descriptor_cost_stall.csv`` (one row per hard solve and
checkpoint).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

import analysis.descriptors.intrinsic as intrinsic_module
from analysis.descriptors.kappa import DEFAULT_MAX_ITER, factor_radius
from analysis.prereg import load_design
from analysis.store.store import Store
from analysis.study.describe import describe_frame
from analysis.study.plan import plan_study
from experiments.common import OUT, ROOT, command_line

DESIGN = ROOT / "preregistration" / "offline-families.toml"
STORE = ROOT / "data" / "offline-families" / "store"
#: A dual weight counts as in the support above this share of the largest weight.
SUPPORT_REL = 1e-6


class SolveLog:
    """Wraps the intrinsic module's ``factor_radius`` and keeps each solve's record."""

    def __init__(self) -> None:
        self.rows: list[dict] = []
        self.hard: list[tuple[np.ndarray, np.ndarray, object]] = []

    def __call__(self, U: np.ndarray, W: np.ndarray, **kw):
        start = time.process_time()
        res = factor_radius(U, W, **kw)
        self.rows.append(
            {
                "rank": U.shape[1],
                "iterations": res.iterations,
                "cpu_s": time.process_time() - start,
                "screen": kw.get("resume") is None and kw.get("max_iter") != DEFAULT_MAX_ITER,
                # a resumed solve that still carries its state stopped at the cap
                "max_iter_hit": kw.get("resume") is not None and res.state is not None,
                "gap": res.gap,
            }
        )
        if self.rows[-1]["max_iter_hit"]:
            self.hard.append((U, W, res))
        return res


def grid(design_path: Path) -> tuple[tuple[float, ...], tuple[float, ...], tuple[str, ...]]:
    """The design's eps, temperatures and blocks, as the study's descriptor stage reads them."""
    plan = plan_study(load_design(design_path))
    return plan.eps, plan.temperatures, plan.blocks


def support(weights: np.ndarray, rel: float = SUPPORT_REL) -> int:
    """Rows whose dual weight is above ``rel`` times the largest."""
    return int(np.count_nonzero(weights > rel * weights.max()))


def stall_rows(hard: list[tuple], checkpoints: list[int]) -> list[dict]:
    rows = []
    for k, (U, W, final) in enumerate(hard):
        # The dual weights the stopped solve ended with: a key side (W) supported on fewer
        # rows than the rank makes B = W^T diag(mu) W singular at the optimum, so the
        # primal gauge P (a geometric mean of A^-1 and B) is only approached as a limit.
        supp_lam, supp_mu = support(final.state.best_lam), support(final.state.best_mu)
        res, seen = None, []
        for c in checkpoints:
            res = factor_radius(U, W, max_iter=c, resume=res)
            seen.append((c, res.value, res.lower))
        final_lower = seen[-1][2]
        for c, value, lower in seen:
            rows.append(
                {
                    "solve": k,
                    "rank": U.shape[1],
                    "support_lam": supp_lam,
                    "support_mu": supp_mu,
                    "iterations": c,
                    "upper_rel": value / final_lower - 1.0,
                    "lower_rel": lower / final_lower - 1.0,
                }
            )
    return rows


def sampled_matrices(
    store: Store, per_group: int, seed: int
) -> Iterator[tuple[str, int, int, Any]]:
    """``(checkpoint, length, group size, record)`` for ``per_group`` stored matrices per
    (checkpoint, length), drawn without replacement by ``default_rng(seed)``, group by group
    in sorted order (the same sample for the same store, arguments and seed)."""
    rng = np.random.default_rng(seed)
    recs = pd.DataFrame([r.__dict__ for r in store.matrices()])
    for (ckpt, length), g in recs.groupby(["checkpoint", "length"]):
        for i in sorted(rng.choice(len(g), size=min(per_group, len(g)), replace=False)):
            yield ckpt, int(length), len(g), g.iloc[i]


def add_sample_arguments(ap: argparse.ArgumentParser, *, per_group: int, seed: int) -> None:
    """The options of :func:`sampled_matrices` (``--design``, ``--store``, ``--per-group``,
    ``--seed``) with this script's defaults for the last two."""
    ap.add_argument("--design", type=Path, default=DESIGN)
    ap.add_argument("--store", type=Path, default=STORE)
    ap.add_argument(
        "--per-group", type=int, default=per_group, help="matrices per checkpoint and N"
    )
    ap.add_argument("--seed", type=int, default=seed)


def tolerance_sweep(store: Store, args: argparse.Namespace) -> None:
    """The intrinsic block at each of ``args.tolerances`` on the same sampled matrices."""
    eps, temps, _ = grid(args.design)
    keep = ("intrinsic__Pi", "intrinsic__r_star", "intrinsic__interaction_dim")
    rows = []
    for ckpt, length, group_size, rec in sampled_matrices(store, args.per_group, args.seed):
        arrays = store.arrays(rec.key)
        ref = None
        for tol in args.tolerances:
            intrinsic_module.KAPPA_TOL = tol  # read by the block at call time
            start = time.process_time()
            df = describe_frame(arrays, eps, temps, ["intrinsic"])
            cpu = time.process_time() - start
            cov = df[list(keep)]
            ref = cov if ref is None else ref
            pi, pi0 = cov[keep[0]].to_numpy(), ref[keep[0]].to_numpy()
            rel = np.abs(pi - pi0) / np.maximum(np.abs(pi0), 1e-9)
            rows.append(
                {
                    "checkpoint": ckpt,
                    "length": length,
                    "group_size": group_size,
                    "key": rec.key,
                    "tol": tol,
                    "cpu_s": cpu,
                    "pi_rel_max": float(np.nanmax(rel)) if np.isfinite(rel).any() else 0.0,
                    "r_star_changed": int((cov[keep[1]] != ref[keep[1]]).sum()),
                    "dim_changed": int((cov[keep[2]] != ref[keep[2]]).sum()),
                }
            )
        print(rows[-1], flush=True)
    df = pd.DataFrame(rows)
    OUT.mkdir(parents=True, exist_ok=True)
    df.to_csv(OUT / "descriptor_cost_tolerances.csv", index=False)
    by = df.groupby(["checkpoint", "length", "tol"])
    g = by.agg(cpu_s=("cpu_s", "mean"), heads=("group_size", "first")).reset_index()
    g["stage_cpu_s"] = g.cpu_s * g.heads
    summary = pd.DataFrame(
        {
            "stage_cpu_s": g.groupby("tol").stage_cpu_s.sum(),
            "pi_rel_max": df.groupby("tol").pi_rel_max.max(),
            "r_star_changed": df.groupby("tol").r_star_changed.sum(),
            "dim_changed": df.groupby("tol").dim_changed.sum(),
        }
    )
    summary["stage_s_on_2_workers"] = summary.stage_cpu_s / 2
    print(f"{df.key.nunique()} matrices, {len(temps) * len(eps)} cells each")
    print(summary.to_string(float_format=lambda v: f"{v:.3g}"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_sample_arguments(ap, per_group=6, seed=1)
    ap.add_argument("--stall", action="store_true", help="trace the max_iter solves")
    ap.add_argument("--checkpoints", type=int, nargs="+", default=[100, 200, 400, 800, 1600, 3000])
    ap.add_argument(
        "--tolerances", type=float, nargs="+", help="compare the intrinsic block's KAPPA_TOL"
    )
    args = ap.parse_args()
    print(command_line("experiments.descriptor_cost"), flush=True)
    torch.set_num_threads(1)
    if args.tolerances:
        with Store(args.store) as store:
            tolerance_sweep(store, args)
        return
    eps, temps, blocks = grid(args.design)
    log = SolveLog()
    intrinsic_module.factor_radius = log  # the block's own solves, recorded
    out = []
    with Store(args.store) as store:
        for ckpt, length, group_size, rec in sampled_matrices(store, args.per_group, args.seed):
            log.rows.clear()
            start = time.process_time()
            describe_frame(store.arrays(rec.key), eps, temps, blocks)
            cpu = time.process_time() - start
            solves = pd.DataFrame(log.rows)
            out.append(
                {
                    "checkpoint": ckpt,
                    "length": length,
                    "group_size": group_size,
                    "key": rec.key,
                    "cpu_s": cpu,
                    "kappa_cpu_s": float(solves.cpu_s.sum()) if len(solves) else 0.0,
                    "screen_cpu_s": float(solves[solves.screen].cpu_s.sum())
                    if len(solves)
                    else 0.0,
                    "solves": len(solves),
                    "max_iter_solves": int(solves.max_iter_hit.sum()) if len(solves) else 0,
                    "max_iter_cpu_s": float(solves[solves.max_iter_hit].cpu_s.sum())
                    if len(solves)
                    else 0.0,
                }
            )
            print(out[-1], flush=True)
    df = pd.DataFrame(out)
    OUT.mkdir(parents=True, exist_ok=True)
    df.to_csv(OUT / "descriptor_cost_matrices.csv", index=False)
    by = df.groupby(["checkpoint", "length"])
    summary = pd.DataFrame(
        {
            "heads": by.group_size.first(),
            "cpu_s_mean": by.cpu_s.mean(),
            "kappa_share": by.kappa_cpu_s.sum() / by.cpu_s.sum(),
            "max_iter_share": by.max_iter_cpu_s.sum() / by.cpu_s.sum(),
            "max_iter_solves_mean": by.max_iter_solves.mean(),
        }
    )
    summary["stage_cpu_s"] = summary.cpu_s_mean * summary.heads
    print(summary.to_string(float_format=lambda v: f"{v:.3g}"))
    total = float(summary.stage_cpu_s.sum())
    # The sample's share weighted like the stage: each group's share times its CPU.
    share = float((summary.max_iter_share * summary.stage_cpu_s).sum() / total)
    print(
        f"projected stage CPU: {total:.0f} s ({total / 2:.0f} s on 2 workers); "
        f"share of it in solves stopped at max_iter: {share:.2f}"
    )
    if args.stall and log.hard:
        st = pd.DataFrame(stall_rows(log.hard, sorted(args.checkpoints)))
        st.to_csv(OUT / "descriptor_cost_stall.csv", index=False)
        med = st.groupby("iterations")[["upper_rel", "lower_rel"]].median()
        print(
            f"{st.solve.nunique()} solves stopped at max_iter; median relative to the final lower:"
        )
        print(med.to_string(float_format=lambda v: f"{v:.2e}"))
        one = st.drop_duplicates("solve")
        below = int((one.support_mu < one["rank"]).sum())
        print(
            f"support (weights > {SUPPORT_REL:g} x max) of the final dual weights: query side "
            f"median {one.support_lam.median():.0f}, key side median "
            f"{one.support_mu.median():.0f}, rank median {one['rank'].median():.0f}; "
            f"key side below the rank in {below} of {len(one)} solves"
        )


if __name__ == "__main__":
    main()
