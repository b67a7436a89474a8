"""The bracket search on a GPU: the 72 MiniLM heads x 5 temperatures at N = 256 in batches.

Builds ``A_t`` for every head of the benchmark's text at ``--length`` (``softmax64`` from
the extraction's Q and K) at each of ``--temperatures``, then profiles them with
:func:`analysis.brackets.profile_matrices` in batches of ``--batch`` matrices with the
optimizers on ``--device``; every candidate is certified on the CPU in float64 as always,
and every stored witness is re-verified after the run. Prints the wall time of the whole
set (the issue's target: 72 heads x 5 temperatures at N = 256 in <= 60 s on one GPU), the
median hi/lo per eps, and the same on the CPU for ``--cpu-heads`` heads as a reference.

Run from the repository root on a machine with a GPU::

    python -m benchmarks.bench_device --device cuda [--length 256] [--batch 360]
    python -m benchmarks.bench_device --device cpu --heads 2 --temperatures 1   # a check

One JSON line per run is appended to ``benchmarks/out/bench_device.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from analysis.brackets import profile_matrices
from analysis.validation import check_device
from benchmarks.bench_temperatures import heads_at
from benchmarks.common import EPS, OUT, command_line


def _run(A: np.ndarray, batch: int, device: str, effort: str) -> tuple[float, list]:
    profs = []
    t0 = time.perf_counter()
    for s in range(0, len(A), batch):
        profs += profile_matrices(A[s : s + batch], eps=EPS, effort=effort, device=device)
    return time.perf_counter() - t0, profs


def _hi_lo(profs) -> dict[str, float]:
    out = {}
    for e in EPS:
        r = [hi / max(lo, 1) for lo, hi in (p.bracket(e) for p in profs)]
        out[f"{e:g}"] = float(np.median(r))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--length", type=int, default=256)
    ap.add_argument("--temperatures", type=float, nargs="+", default=[0.5, 0.75, 1.0, 1.5, 2.0])
    ap.add_argument("--heads", type=int, default=72, help="the first H heads")
    ap.add_argument("--batch", type=int, default=360, help="matrices per batch")
    ap.add_argument("--effort", default="default")
    ap.add_argument("--cpu-heads", type=int, default=0, help="also time H heads on the CPU")
    args = ap.parse_args()
    print(command_line("benchmarks.bench_device"), flush=True)
    device = str(check_device(args.device))
    import torch

    torch.set_num_threads(1)
    A = heads_at(args.length, list(args.temperatures))[: args.heads]  # [H, T, L, L]
    flat = A.reshape(-1, args.length, args.length)
    if device.startswith("cuda"):  # first-call start-up (context, kernels) not in the time
        profile_matrices(flat[:2], eps=EPS, effort="fast", device=device)
        torch.cuda.synchronize()
    wall, profs = _run(flat, args.batch, device, args.effort)
    bad = sum(1 for a, p in zip(flat, profs, strict=True) if p.reverify(a))
    rec = {
        "command": command_line("benchmarks.bench_device"),
        "device": device,
        "device_name": torch.cuda.get_device_name(device) if device.startswith("cuda") else "cpu",
        "matrices": len(flat),
        "length": args.length,
        "batch": args.batch,
        "wall_s": wall,
        "median_hi_lo": _hi_lo(profs),
        "failed_reverify": bad,
    }
    if args.cpu_heads:
        sub = A[: args.cpu_heads].reshape(-1, args.length, args.length)
        cpu_wall, cpu_profs = _run(sub, len(args.temperatures), "cpu", args.effort)
        rec["cpu_reference"] = {
            "matrices": len(sub),
            "wall_s": cpu_wall,
            "per_matrix_s": cpu_wall / len(sub),
            "median_hi_lo": _hi_lo(cpu_profs),
        }
    print(json.dumps(rec, indent=2))
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "bench_device.jsonl", "a") as fh:
        fh.write(json.dumps(rec) + "\n")
    if bad:
        raise SystemExit(f"{bad} profiles failed re-verification")


if __name__ == "__main__":
    main()
