"""The executor seam: a dask LocalCluster against the local process pool, and dask's
overhead per task.

1. **Brackets stage.** The default study's design (``preregistration/offline-minilm.toml``)
   on a temporary copy of the study root: its inputs extracted once, then its brackets
   stage (real matrices at every design temperature, synthetic ones at t = 1) run on two
   copies of that store, with ``--workers N`` and with ``--cluster local:N``. Prints the
   stage's wall seconds for each (the cluster's start-up apart) and whether the stored
   profiles are identical (decoded, every field but the profile's own wall-clock
   timings). ``--matrices K`` brackets only the first K real matrices (and
   ``--synthetic S`` synthetic ones) for a reduced run.
2. **Overhead per task.** Tiny no-op tasks: the median round trip of one task at a time
   through the local process pool and through the LocalCluster, against a direct call,
   and the throughput of ``--tasks`` no-op tasks fanned out as the package does
   (:meth:`analysis.executor.TaskPool.imap`).

Targets (issue 25): the LocalCluster within 15% of the process pool's wall time with
identical profiles; overhead <= 50 ms per task (median).

Run from the repository root::

    python -m benchmarks.bench_executor --workers 2              # the whole stage
    python -m benchmarks.bench_executor --matrices 24 --synthetic 4
    python -m benchmarks.bench_executor --skip-stage             # overhead only

One JSON line per run is appended to ``benchmarks/out/bench_executor.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
import zlib
from pathlib import Path

from benchmarks.common import OUT, ROOT, command_line

DESIGN = ROOT / "preregistration" / "offline-minilm.toml"


def _noop(x: int) -> int:
    return x


def _profiles(store) -> dict:
    out = {}
    for p in store.profiles():
        blob = store._conn.execute("SELECT profile FROM profiles WHERE id = ?", (p.id,))
        prof = json.loads(zlib.decompress(blob.fetchone()[0]))
        prof.get("stats", {}).pop("seconds", None)  # how long it took, not what it found
        out[(p.matrix_key, p.temperature, p.version)] = (p.eps_grid, p.brackets, prof)
    return out


def _prepared_root(tmp: Path) -> Path:
    """A study root holding the default design and its lock, with its inputs extracted."""
    from analysis.study import StudyOptions, run_study

    root = tmp / "extracted"
    (root / "preregistration").mkdir(parents=True)
    for suffix in (".toml", ".toml.lock"):
        shutil.copy2(
            DESIGN.with_suffix(suffix), root / "preregistration" / DESIGN.with_suffix(suffix).name
        )
    run_study(
        root / "preregistration" / DESIGN.name,
        say=lambda _: None,
        options=StudyOptions(stop_after="extract", progress=False),
    )
    return root


def _stage(
    root: Path, matrices: int | None, synthetic: int | None, **parallel
) -> tuple[float, dict, int]:
    """The brackets stage on the study at ``root``: wall seconds, profiles, count."""
    from analysis.store import RunSpec, Store
    from analysis.study.core import Study
    from analysis.study.stages import bracket_stage

    study = Study.open(root / "preregistration" / DESIGN.name)
    with Store(study.paths.store) as store:
        synth = list(study.extractions.synthetic().values())
        real = [k for t in study.plan.extractions for k in study.extractions.keys(t.label)]
        real = real[:matrices] if matrices is not None else real
        synth = synth[:synthetic] if synthetic is not None else synth
        start = time.perf_counter()
        n = bracket_stage(
            study,
            store,
            real,
            synth,
            engine=None,
            say=lambda _: None,
            run=RunSpec(progress=False, **parallel),
        )
        wall = time.perf_counter() - start
        return wall, _profiles(store), n


def _round_trips(submit, n: int) -> list[float]:
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        submit(_noop, i).result()
        times.append(time.perf_counter() - t0)
    return times


def overhead(workers: int, tasks: int, single: int) -> dict:
    """Median round trip of one no-op task (pool, LocalCluster, direct) and the fan-out
    throughput of ``tasks`` no-op tasks."""
    import concurrent.futures as cf
    import multiprocessing

    from analysis.executor import TaskPool, open_executor

    out: dict = {}
    t0 = time.perf_counter()
    for i in range(single):
        _noop(i)
    out["direct_ms"] = 1e3 * (time.perf_counter() - t0) / single
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        pool.submit(_noop, 0).result()  # started
        out["pool_round_trip_ms"] = 1e3 * statistics.median(_round_trips(pool.submit, single))
        t0 = time.perf_counter()
        list(TaskPool(pool).imap(_noop, ((i, (i,)) for i in range(tasks))))
        out["pool_fanout_ms_per_task"] = 1e3 * (time.perf_counter() - t0) / tasks
    t0 = time.perf_counter()
    with open_executor(cluster=f"local:{workers}", say=lambda _: None) as ex:
        out["cluster_start_s"] = time.perf_counter() - t0
        ex.submit(_noop, 0).result()
        out["cluster_round_trip_ms"] = 1e3 * statistics.median(_round_trips(ex.submit, single))
        t0 = time.perf_counter()
        list(TaskPool(ex).imap(_noop, ((i, (i,)) for i in range(tasks))))
        out["cluster_fanout_ms_per_task"] = 1e3 * (time.perf_counter() - t0) / tasks
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=2, help="N of --workers N and local:N")
    ap.add_argument("--matrices", type=int, help="only the first K real matrices")
    ap.add_argument("--synthetic", type=int, help="only the first S synthetic matrices")
    ap.add_argument("--tasks", type=int, default=1000, help="no-op tasks of the fan-out")
    ap.add_argument("--single", type=int, default=200, help="no-op round trips")
    ap.add_argument("--skip-stage", action="store_true", help="overhead only")
    ap.add_argument("--skip-overhead", action="store_true", help="brackets stage only")
    ap.add_argument(
        "--cluster-first", action="store_true", help="run the cluster's stage before the pool's"
    )
    args = ap.parse_args(argv)
    cmd = command_line("benchmarks.bench_executor")
    print(cmd)
    record: dict = {
        "command": cmd,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "load_before": os.getloadavg(),
        "cpus": os.cpu_count(),
    }
    if not args.skip_overhead:
        record["overhead"] = overhead(args.workers, args.tasks, args.single)
        o = record["overhead"]
        print(
            f"no-op task, median round trip: direct {o['direct_ms']:.4f} ms, process pool "
            f"{o['pool_round_trip_ms']:.2f} ms, LocalCluster {o['cluster_round_trip_ms']:.2f} ms "
            f"(cluster start {o['cluster_start_s']:.1f} s); fan-out of {args.tasks}: "
            f"{o['pool_fanout_ms_per_task']:.2f} / {o['cluster_fanout_ms_per_task']:.2f} ms per task"
        )
    if not args.skip_stage:
        from analysis.executor import open_executor

        with tempfile.TemporaryDirectory(prefix="bench_executor_") as tmp:
            tmp = Path(tmp)
            t0 = time.perf_counter()
            base = _prepared_root(tmp)
            record["extract_s"] = time.perf_counter() - t0
            roots = {}
            for name in ("pool", "cluster"):
                roots[name] = tmp / name
                shutil.copytree(base, roots[name])

            def pool_stage() -> tuple[float, dict, int]:
                return _stage(roots["pool"], args.matrices, args.synthetic, workers=args.workers)

            def cluster_stage() -> tuple[float, dict, int, float]:
                t0 = time.perf_counter()
                with open_executor(cluster=f"local:{args.workers}", say=lambda _: None) as ex:
                    start_s = time.perf_counter() - t0
                    return (
                        *_stage(roots["cluster"], args.matrices, args.synthetic, executor=ex),
                        start_s,
                    )

            if args.cluster_first:
                cl_s, cl_prof, n2, start_s = cluster_stage()
                pool_s, pool_prof, n = pool_stage()
            else:
                pool_s, pool_prof, n = pool_stage()
                cl_s, cl_prof, n2, start_s = cluster_stage()
            record["stage"] = {
                "profiles": n,
                "pool_s": pool_s,
                "cluster_s": cl_s,
                "cluster_start_s": start_s,
                "ratio": cl_s / pool_s,
                "identical": pool_prof == cl_prof and n == n2,
                "order": "cluster first" if args.cluster_first else "pool first",
            }
            s = record["stage"]
            print(
                f"brackets stage, {n} profiles: --workers {args.workers} {pool_s:.1f} s, "
                f"--cluster local:{args.workers} {cl_s:.1f} s (+{start_s:.1f} s start-up), "
                f"ratio {s['ratio']:.3f}; stored profiles identical: {s['identical']}"
            )
    record["load_after"] = os.getloadavg()
    print(f"load average before {record['load_before']}, after {record['load_after']}")
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "bench_executor.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
