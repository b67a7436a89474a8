"""What ``attnrank bracket FILE --workers 2 --witnesses --out OUT`` spends beyond the search.

Builds an ``.npy`` of MiniLM heads (:func:`benchmarks.common.minilm_attention`, the
benchmark's own text; heads ``offset``, ``offset + every``, ... : by default the 24 heads
1, 4, ..., 70, the issue's "24 other heads" beside ``bench_brackets_sample``'s 0, 3, ...),
runs the real command line as a subprocess, as a user would, and splits its wall time:

- ``startup``: interpreter start, ``import analysis.cli`` and the parser (a separate
  ``python -c`` of just that, median of three);
- ``search``: the engine's own time, the profiles' ``stats["seconds"]["total"]`` summed
  over the matrices and divided by the workers (what a perfectly balanced pool would take);
- ``imbalance``: the blocks of ``--batch`` matrices handed to the workers in index order,
  each taking its measured search time, finish later than the balanced ``search``: the
  difference (a pool's idle worker at the end);
- ``rest``: everything else (worker start, moving matrices and profiles between
  processes, the checkpoint, building and writing ``OUT.json``, progress output).

Then ``attnrank verify FILE OUT`` is timed too (a user's check; not part of the bracket
run). With ``--profile`` the bracket command runs under :mod:`cProfile` (its main process
only) and the table adds what the main process spent in imports, loading, the
checkpoint, encoding and writing ``OUT.json`` (before issue 37: ``result_json`` and
``write_json_atomic`` after the search; since: ``ResultWriter.add`` as each profile
arrives, ``ResultWriter.write`` at the end); cProfile slows the run a little, so its wall
time is not the plain one.

The target of issue 37: on 24 heads at N = 256, ``wall x workers / heads <= 8``
core-seconds per profile, at median hi/lo <= 2.3. Each run appends one line to
``benchmarks/out/bench_bracket_cli_runs.jsonl`` and keeps ``OUT.json`` in
``benchmarks/out/bracket_cli/``; ``--compare OTHER.json`` checks that every bracket is
the same as another run's.

Usage, from the repository root::

    python -m benchmarks.bench_bracket_cli [--heads 24] [--length 256] [--every 3]
        [--offset 1] [--workers 2] [--batch 4] [--profile] [--label before]
        [--compare OTHER.json]
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import pstats
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.common import EPS, OUT, ROOT, command_line

HERE = OUT / "bracket_cli"


def heads_file(length: int, heads: int, every: int, offset: int) -> Path:
    """``.npy`` of the chosen MiniLM heads at ``length`` (made once, then reused)."""
    path = HERE / f"minilm_L{length}_h{heads}_every{every}_off{offset}.npy"
    if not path.is_file():
        from benchmarks.common import minilm_attention

        A = minilm_attention(length)
        idx = list(range(offset, A.shape[0], every))[:heads]
        if len(idx) < heads:
            raise SystemExit(f"only {len(idx)} heads with --every {every} --offset {offset}")
        HERE.mkdir(parents=True, exist_ok=True)
        np.save(path, np.ascontiguousarray(A[idx]))
    return path


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


def startup_seconds(repeat: int = 3) -> float:
    """Median wall of a process that imports the command line and builds its parser."""
    code = "import analysis.cli as c; c.build_parser()"
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=_env(), cwd=ROOT)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def balanced_makespan(block_seconds: list[float], workers: int) -> float:
    """When the last of the blocks, handed in order to the first free of ``workers``, ends."""
    free = [0.0] * workers
    for s in block_seconds:
        heapq.heapreplace(free, free[0] + s)
    return max(free)


def median_hi_lo(result: dict) -> tuple[float, dict[str, float]]:
    """Median hi / max(lo, 1) over every bracket, and per eps."""
    rows = [
        (b["eps"], b["upper"] / max(b["lower"], 1))
        for m in result["matrices"]
        for b in m["brackets"]
    ]
    by_eps = {
        f"{e:g}": statistics.median(r for x, r in rows if x == e)
        for e in sorted({x for x, _ in rows})
    }
    return statistics.median(r for _, r in rows), by_eps


def brackets_of(result: dict) -> list:
    return [
        (m["index"], b["eps"], b["lower"], b["upper"])
        for m in result["matrices"]
        for b in m["brackets"]
    ]


def _cum(stats: pstats.Stats, file_part: str, name: str) -> float:
    """Cumulative seconds of the functions called ``name`` in files containing ``file_part``
    (recursive calls counted once, as cProfile's cumtime does)."""
    total = 0.0
    for (fname, _, func), (_, _, _, ct, _) in stats.stats.items():  # type: ignore[attr-defined]
        if func == name and file_part in fname:
            total += ct
    return total


def main_process_split(path: Path) -> dict[str, float]:
    """Seconds of the bracket command's main process, from its cProfile output."""
    st = pstats.Stats(str(path))
    return {
        "imports (main process)": _cum(st, "importlib._bootstrap", "_find_and_load"),
        "load_matrices": _cum(st, "cli/inputs.py", "load_matrices"),
        "profile_file": _cum(st, "brackets/io.py", "profile_file"),
        "  of which checkpoint lines": _cum(st, "atomic.py", "append"),
        "  of which encoding OUT.json's matrices (as they arrive)": _cum(
            st, "brackets/io.py", "add"
        ),
        "result_json (at the end)": _cum(st, "brackets/io.py", "result_json"),
        "write OUT.json (at the end)": _cum(st, "brackets/io.py", "write_json_atomic")
        + _cum(st, "brackets/io.py", "write"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--heads", type=int, default=24)
    ap.add_argument("--length", type=int, default=256)
    ap.add_argument("--every", type=int, default=3, help="heads offset, offset + every, ...")
    ap.add_argument("--offset", type=int, default=1)
    ap.add_argument("--eps", type=float, nargs="+", default=list(EPS))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--batch", type=int, default=None, help="--batch of the command (default its own)"
    )
    ap.add_argument("--effort", default="default")
    ap.add_argument("--profile", action="store_true", help="cProfile the command's main process")
    ap.add_argument("--skip-verify", action="store_true")
    ap.add_argument("--label", default="", help="a word for the log line (before, after, ...)")
    ap.add_argument(
        "--compare", type=Path, help="another run's OUT.json: are the brackets the same?"
    )
    args = ap.parse_args()
    print("command:", command_line("benchmarks.bench_bracket_cli"), flush=True)

    npy = heads_file(args.length, args.heads, args.every, args.offset)
    tag = f"L{args.length}_h{args.heads}_w{args.workers}" + (f"_{args.label}" if args.label else "")
    out = HERE / f"{tag}.json"
    cli = [
        "bracket", str(npy), "--eps", *map(repr, args.eps), "--workers", str(args.workers),
        "--witnesses", "--out", str(out), "--effort", args.effort,
    ]  # fmt: skip
    if args.batch is not None:
        cli += ["--batch", str(args.batch)]
    prof = HERE / f"{tag}.prof"
    runner = ["-m", "cProfile", "-o", str(prof)] if args.profile else []
    cmd = [sys.executable, *runner, "-m", "analysis.cli", *cli]
    print("run:", shlex.join(["python", *cmd[1:]]), flush=True)

    load = os.getloadavg()[0]
    startup = startup_seconds()
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=_env(), cwd=ROOT, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    result = json.loads(out.read_text())
    if not args.skip_verify:
        t0 = time.perf_counter()
        ver = subprocess.run(
            [sys.executable, "-m", "analysis.cli", "verify", str(npy), str(out)],
            env=_env(), cwd=ROOT, capture_output=True, text=True,
        )  # fmt: skip
        verify = time.perf_counter() - t0
        if ver.returncode != 0:
            raise SystemExit(f"verify failed ({ver.returncode}): {ver.stdout}{ver.stderr}")
    else:
        verify = float("nan")

    secs = [float(m["seconds"]) for m in result["matrices"]]
    batch = args.batch or _default_batch()
    blocks = [sum(secs[s : s + batch]) for s in range(0, len(secs), batch)]
    search = sum(secs) / args.workers
    makespan = balanced_makespan(blocks, args.workers) if len(blocks) > 1 else sum(secs)
    rest = wall - startup - makespan
    med, by_eps = median_hi_lo(result)
    H = len(secs)
    per_profile = wall * args.workers / H
    rows = [
        ("wall, whole command", wall),
        ("startup: interpreter + imports + parser", startup),
        ("search (sum of profile seconds / workers)", search),
        ("imbalance (blocks in order on the pool)", makespan - search),
        ("rest (spawn, transfer, checkpoint, JSON, output)", rest),
        ("attnrank verify FILE OUT (separate)", verify),
    ]
    split = main_process_split(prof) if args.profile else {}
    print(f"\n{H} heads, N = {args.length}, {args.workers} workers, batch {batch}, {args.label}")
    print(f"{'part':52s} {'seconds':>9s} {'share':>7s}")
    for name, s in rows:
        print(f"{name:52s} {s:9.2f} {s / wall:7.1%}")
    if split:
        print("main process under cProfile:")
        for name, s in split.items():
            print(f"  {name:50s} {s:9.2f}")
    print(f"OUT.json {out.stat().st_size / 1e6:.1f} MB")
    print(
        f"core-seconds per profile (wall x {args.workers} / {H}): {per_profile:.2f}; "
        f"median hi/lo {med:.3f} ({', '.join(f'{e}: {r:.2f}' for e, r in by_eps.items())})"
    )
    same = None
    if args.compare is not None:
        other = json.loads(args.compare.read_text())
        same = brackets_of(other) == brackets_of(result)
        print(f"brackets identical to {args.compare}: {same}")
    log = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": command_line("benchmarks.bench_bracket_cli"),
        "label": args.label,
        "heads": H,
        "length": args.length,
        "workers": args.workers,
        "batch": batch,
        "profiled": args.profile,
        "load_before": load,
        **{name: s for name, s in rows},
        **split,
        "out_mb": out.stat().st_size / 1e6,
        "core_seconds_per_profile": per_profile,
        "median_hi_over_lo": med,
        "by_eps": by_eps,
        "same_brackets_as_compare": same,
    }
    with open(OUT / "bench_bracket_cli_runs.jsonl", "a") as f:
        f.write(json.dumps(log) + "\n")


def _default_batch() -> int:
    from analysis.executor import BATCH

    return BATCH


if __name__ == "__main__":
    main()
