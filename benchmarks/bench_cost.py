"""CPU per head of the paper-lengths study's cells: two configurations side by side.

Re-runs a seeded fraction of the cells of ``preregistration/paper-lengths.toml`` (every
planned input of each chosen head: 3 lengths x its inputs per length, t and eps as the
design says) under an *old* configuration (default: engine 5 and the design's descriptor
block versions) and a *new* one (default: engine 6 and ``intrinsic`` version 3), in one
process, on one thread, interleaved matrix by matrix, so that both see the same load.
Per matrix it times (``time.process_time``: CPU of this process, user + system) the bracket
profile (all eps at once, as the store computes it) and the descriptor blocks (all of the
design's blocks, all eps), and re-verifies every witness of both profiles against ``A``
(:meth:`analysis.brackets.Profile.from_dict`, outside the timing). Extraction (the forward
passes) is timed once per checkpoint and shared by both configurations.

Reported: CPU-s per head by stage and configuration (a head's matrices are the design's
inputs at every length), the median hi/lo per length and eps under each engine, the
descriptor values' largest relative difference between the two block versions, and the
projected wall time of a study of ``--project-heads`` heads with ``--project-inputs``
inputs per length on 2, 16 and 64 cores (CPU per head x heads / cores: the stages are
embarrassingly parallel over matrices; the projection assumes the executor's own cost is
negligible, which ``python -m benchmarks.bench_executor`` measures).

Run from the repository root::

    python -m benchmarks.bench_cost --fraction 0.25             # a seeded quarter of the heads
    python -m benchmarks.bench_cost --fraction 0.25 --shard 1/2  # half of it (then --shard 2/2)
    python -m benchmarks.bench_cost --from-json benchmarks/out/bench_cost.shard*of2.json
    python -m benchmarks.bench_cost --fraction 0.05 --seed 1    # a quick look
    python -m benchmarks.bench_cost --new-engine 5 --new-versions ""   # old against itself

Writes ``benchmarks/out/bench_cost.json`` (``bench_cost.shardKofN.json`` for a shard:
every matrix's times and brackets) and prints the tables; ``--from-json`` merges shards.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import OUT, ROOT, command_line

DESIGN = ROOT / "preregistration" / "paper-lengths.toml"


def _versions(text: str) -> tuple[tuple[str, int], ...]:
    """``"intrinsic=2,native=2"`` as sorted (block, version) pairs ("" -> none)."""
    pairs = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, _, number = item.partition("=")
        pairs.append((name.strip(), int(number)))
    return tuple(sorted(pairs))


def chosen_tasks(
    design_path: Path,
    fraction: float,
    seed: int,
    only: tuple[str, ...] = (),
    shard: tuple[int, int] = (0, 1),
) -> tuple[list, object, dict[str, int]]:
    """The design's extraction tasks, each restricted to a seeded fraction of its heads
    (at least one head per checkpoint), the plan and the design's heads per checkpoint;
    ``only``: checkpoints whose id contains one of these strings (all when empty);
    ``shard = (k, n)``: of each checkpoint's chosen heads, the k-th of every n (the same
    seeded choice whatever n, so n shards together are the unsharded sample)."""
    from analysis.prereg import load_design
    from analysis.study.plan import plan_study

    plan = plan_study(load_design(design_path))
    rng = np.random.default_rng(seed)
    picked: dict[str, tuple] = {}
    design_heads = {t.checkpoint: len(t.heads) for t in plan.extractions}
    for task in plan.extractions:
        if task.checkpoint not in picked:
            heads = list(task.heads)
            k = max(1, round(fraction * len(heads)))
            idx = sorted(rng.choice(len(heads), size=k, replace=False))
            picked[task.checkpoint] = tuple(heads[i] for i in idx)[shard[0] :: shard[1]]
    tasks = [
        dataclasses.replace(t, heads=picked[t.checkpoint])
        for t in plan.extractions
        if picked[t.checkpoint]
        and (not only or any(o.lower() in t.checkpoint.lower() for o in only))
    ]
    return tasks, plan, design_heads


def _profile(engine, A, plan) -> tuple[object, float]:
    start = time.process_time()
    prof = engine.profile_batch([A], [1.0], eps=plan.eps, effort=plan.effort, previous=[None])[0]
    return prof, time.process_time() - start


def _verified(prof, A) -> list[tuple[int, int]]:
    from analysis.brackets import Profile

    back = Profile.from_dict(json.loads(json.dumps(prof.to_dict())), A=A)
    return [tuple(b) for b in back.brackets(list(prof.eps_targets))]


def _describe(arrays, plan, versions) -> tuple[object, float]:
    from analysis.study.describe import describe_frame

    start = time.process_time()
    df = describe_frame(arrays, plan.eps, plan.temperatures, plan.blocks, (), versions)
    return df, time.process_time() - start


def _rel_diff(a, b) -> tuple[dict[str, float], int]:
    """Largest relative difference per covariate column, and the cells whose finiteness
    differs. Per-rank diagnostics (``*_rK``) are left out: a version may prune a rank the
    other solved."""
    cols = [c for c in a.columns if not re.search(r"_r\d+$", c) and c in b.columns]
    out, mismatched = {}, 0
    for c in cols:
        x, y = a[c].to_numpy(float), b[c].to_numpy(float)
        both = np.isfinite(x) & np.isfinite(y)
        mismatched += int((np.isfinite(x) != np.isfinite(y)).sum())
        d = np.abs(x[both] - y[both]) / np.maximum(np.abs(x[both]), 1e-300)
        out[c] = float(d.max()) if d.size else 0.0
    return out, mismatched


def run(args: argparse.Namespace) -> dict:
    import torch

    from analysis.brackets.engine import Engine
    from analysis.sources.checkpoints import load_checkpoint
    from analysis.store import Store
    from analysis.study.stages import extract_input

    torch.set_num_threads(1)
    tasks, plan, design_heads = chosen_tasks(
        args.design, args.fraction, args.seed, tuple(args.checkpoints), args.shard
    )

    def versions(text: str) -> tuple[tuple[str, int], ...]:  # the design's, then these
        return tuple(sorted({**dict(plan.versions), **dict(_versions(text))}.items()))

    configs = {
        "old": (Engine(args.old_engine), versions(args.old_versions)),
        "new": (Engine(args.new_engine), versions(args.new_versions)),
    }
    rows, extract_cpu, heads = [], {}, set()
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "store", create=True) as store:
        by_ckpt: dict[str, list] = {}
        for t in tasks:
            by_ckpt.setdefault(t.checkpoint, []).append(t)
        for ck, ck_tasks in by_ckpt.items():
            start = time.process_time()
            model = load_checkpoint(ck)
            keys = []
            for t in ck_tasks:
                keys += store.add_extraction(extract_input(model, t), heads=t.heads)
            del model
            extract_cpu[ck] = time.process_time() - start
            for key in keys:
                rec, arrays = store.matrix(key), store.arrays(key)
                head = (ck, rec.layer, rec.head)
                heads.add(head)
                row = {
                    "checkpoint": ck,
                    "layer": rec.layer,
                    "head": rec.head,
                    "N": arrays.A.shape[1],
                }
                frames = {}
                for name, (engine, versions) in configs.items():
                    prof, row[f"{name}_brackets_cpu"] = _profile(engine, arrays.A, plan)
                    row[f"{name}_brackets"] = _verified(prof, arrays.A)
                    frames[name], row[f"{name}_descriptors_cpu"] = _describe(arrays, plan, versions)
                diff, mismatched = _rel_diff(frames["old"], frames["new"])
                row["descriptor_rel_diff"], row["descriptor_nonfinite_mismatch"] = diff, mismatched
                # the solver's own gap differs by construction (a solve run further)
                row["descriptor_max_rel_diff"] = max(
                    (v for c, v in diff.items() if "_gap" not in c), default=0.0
                )
                rows.append(row)
                print(
                    f"{ck} L{rec.layer} H{rec.head} N={row['N']}: brackets "
                    f"{row['old_brackets_cpu']:.2f} / {row['new_brackets_cpu']:.2f} s, descriptors "
                    f"{row['old_descriptors_cpu']:.2f} / {row['new_descriptors_cpu']:.2f} s",
                    flush=True,
                )
    return {
        "rows": rows,
        "extract_cpu": extract_cpu,
        "design_heads": design_heads,
        "heads": len(heads),
        "eps": plan.eps,
    }


def summarize(result: dict, args: argparse.Namespace) -> dict:
    rows, n_heads = result["rows"], result["heads"]
    if "design_heads" not in result:  # a run stored before the field
        result["design_heads"] = chosen_tasks(args.design, 1.0, 0)[2]
    # a forward pass runs the whole model whichever heads it captures: the study's
    # extraction CPU per head is the checkpoints' extraction CPU over their design heads
    # (the arrays of the other heads are written too there; not counted here)
    extract = sum(result["extract_cpu"].values()) / sum(
        result["design_heads"][ck] for ck in result["extract_cpu"]
    )
    out = {"heads": n_heads, "matrices": len(rows), "extract_cpu_per_head": extract}
    for name in ("old", "new"):
        b = sum(r[f"{name}_brackets_cpu"] for r in rows) / n_heads
        d = sum(r[f"{name}_descriptors_cpu"] for r in rows) / n_heads
        out[name] = {"brackets": b, "descriptors": d, "total": extract + b + d}
        ratios: dict[str, list[float]] = {}
        for r in rows:
            for eps, (lo, hi) in zip(result["eps"], r[f"{name}_brackets"], strict=True):
                key = f"N~{_length_class(r['N'])}, eps {eps}"
                ratios.setdefault(key, []).append(hi / max(lo, 1))
        out[name]["median_hi_lo"] = {k: float(np.median(v)) for k, v in sorted(ratios.items())}
    out["descriptor_max_rel_diff"] = max(r["descriptor_max_rel_diff"] for r in rows)
    per_column: dict[str, float] = {}
    for r in rows:
        for c, v in r.get("descriptor_rel_diff", {}).items():
            per_column[c] = max(per_column.get(c, 0.0), v)
    out["descriptor_rel_diff_by_column"] = per_column
    out["descriptor_nonfinite_mismatch"] = sum(
        r.get("descriptor_nonfinite_mismatch", 0) for r in rows
    )
    per_matrix_inputs = len(rows) / n_heads  # the design's matrices per head
    scale = 3 * args.project_inputs / per_matrix_inputs
    out["projection"] = {
        name: {
            cores: out[name]["total"] * scale * args.project_heads / cores / 3600
            for cores in (2, 16, 64)
        }
        for name in ("old", "new")
    }
    return out


def _shard(text: str) -> tuple[int, int]:
    """``"2/3"`` -> ``(1, 3)``: the zero-based shard and the count."""
    k, sep, n = text.partition("/")
    if not (sep and k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        raise argparse.ArgumentTypeError(f"expected K/N with 1 <= K <= N, got {text!r}")
    return int(k) - 1, int(n)


def merge_shards(results: list[dict]) -> dict:
    """One run from the stored runs of its shards: the matrices of all, the heads summed,
    and each checkpoint's extraction CPU averaged (every shard ran the checkpoint's whole
    forward passes, whichever heads it kept)."""
    if len(results) == 1:
        return results[0]
    extract: dict[str, list[float]] = {}
    for r in results:
        for ck, cpu in r["extract_cpu"].items():
            extract.setdefault(ck, []).append(cpu)
    return {
        "rows": [row for r in results for row in r["rows"]],
        "extract_cpu": {ck: float(np.mean(v)) for ck, v in extract.items()},
        "design_heads": results[0]["design_heads"],
        "heads": sum(r["heads"] for r in results),
        "eps": results[0]["eps"],
    }


def _length_class(n: int) -> int:
    """64 / 128 / 256 for N = 64, 65 (a vision model's 1 + 64 patches), 128, 145, ..."""
    return min((64, 128, 256, 512), key=lambda c: abs(c - n))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--design", type=Path, default=DESIGN)
    parser.add_argument(
        "--fraction", type=float, default=0.25, help="share of each checkpoint's heads"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--checkpoints", nargs="*", default=[], help="only checkpoints whose id contains one"
    )
    parser.add_argument("--old-engine", type=int, default=5)
    parser.add_argument("--new-engine", type=int, default=6)
    parser.add_argument(
        "--old-versions", default="", help='block versions over the design\'s, e.g. "native=2"'
    )
    parser.add_argument("--new-versions", default="intrinsic=3", help="as --old-versions")
    parser.add_argument("--project-heads", type=int, default=432)
    parser.add_argument("--project-inputs", type=int, default=2, help="inputs per length")
    parser.add_argument(
        "--shard",
        type=_shard,
        default=(0, 1),
        metavar="K/N",
        help="run the K-th of N shards of the sample (K = 1..N), e.g. one per core; "
        "--from-json merges the shards' files",
    )
    parser.add_argument(
        "--from-json",
        type=Path,
        nargs="+",
        help="summarize stored runs (bench_cost*.json) again; several: the shards of one run",
    )
    args = parser.parse_args()
    if args.from_json is not None:
        stored = merge_shards([json.loads(p.read_text(encoding="utf-8")) for p in args.from_json])
        _print(summarize(stored, args), args)
        return
    if not 0 < args.fraction <= 1:
        parser.error(f"--fraction: expected a share in (0, 1], got {args.fraction}")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    wall = time.perf_counter()
    result = run(args)
    OUT.mkdir(parents=True, exist_ok=True)
    k, n = args.shard
    name = "bench_cost" if n == 1 else f"bench_cost.shard{k + 1}of{n}"
    raw = OUT / f"{name}.rows.json"  # kept even if the summary fails
    raw.write_text(json.dumps(result, indent=1, default=str) + "\n", encoding="utf-8")
    summary = summarize(result, args)
    summary["wall_seconds"] = time.perf_counter() - wall
    summary["command"] = command_line("benchmarks.bench_cost")
    summary["load_average"] = os.getloadavg()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.json").write_text(
        json.dumps({"summary": summary, **result}, indent=1, default=str) + "\n", encoding="utf-8"
    )
    _print(summary, args)


def _print(summary: dict, args: argparse.Namespace) -> None:
    print(
        f"\n{summary.get('command', '')}  ({summary['heads']} heads, {summary['matrices']} matrices)"
    )
    print("CPU-s per head      extract  brackets  descriptors  total")
    for name in ("old", "new"):
        s = summary[name]
        print(
            f"{name:>4}              {summary['extract_cpu_per_head']:7.2f}  {s['brackets']:8.2f}"
            f"  {s['descriptors']:11.2f}  {s['total']:6.2f}"
        )
    print("median hi/lo:", {n: summary[n]["median_hi_lo"] for n in ("old", "new")})
    print(
        "descriptor values: largest relative difference (solver gaps left out) "
        f"{summary['descriptor_max_rel_diff']:.2e}; by column:"
    )
    for c, v in summary.get("descriptor_rel_diff_by_column", {}).items():
        print(f"  {c}: {v:.2e}")
    print(
        f"projected wall hours ({args.project_heads} heads, {args.project_inputs} inputs/length):"
    )
    for name in ("old", "new"):
        print(
            f"  {name}: "
            + ", ".join(f"{c} cores {h:.2f} h" for c, h in summary["projection"][name].items())
        )


if __name__ == "__main__":
    main()
