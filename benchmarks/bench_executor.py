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

3. **System share** (``--cpu``, issue 51): the brackets and descriptor stages of the last
   ``--matrices`` real matrices (L = 64) and of ``--large`` synthetic matrices of
   ``--large-n`` points (``ball``, d = 3: the lengths of paper-lengths.toml, which the
   default design lacks; bracketed at t = 1) run serially, with ``--workers N`` and with
   ``--cluster local:N``, each on its own copy of the extracted store; the user and system
   CPU seconds of the whole process tree (this process, and every child reaped by the
   window's end: pool workers, the cluster's worker processes) and, for the cluster, each
   worker's own ``os.times`` (``client.run``), and whether the stored profiles and
   descriptor files are identical across the three. Target: system time < 5% of the CPU
   time under ``--workers N`` and ``--cluster local:N``.

Targets (issue 25): the LocalCluster within 15% of the process pool's wall time with
identical profiles; overhead <= 50 ms per task (median).

Run from the repository root::

    python -m benchmarks.bench_executor --workers 2              # the whole stage
    python -m benchmarks.bench_executor --matrices 24 --synthetic 4
    python -m benchmarks.bench_executor --skip-stage             # overhead only
    python -m benchmarks.bench_executor --cpu --matrices 4 --large 4   # system share (issue 51)

One JSON line per run is appended to ``benchmarks/out/bench_executor.jsonl``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import tempfile
import time
import zlib
from pathlib import Path

from benchmarks.common import DEFAULT_DESIGN, OUT, command_line, extracted_default_study

DESIGN = DEFAULT_DESIGN


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


def _cpu() -> tuple[float, ...]:
    """User and system CPU seconds and minor page faults of this process, then of its
    reaped descendants."""
    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return tuple(float(getattr(r, f)) for r in (own, kids) for f in _FIELDS)


_FIELDS = ("ru_utime", "ru_stime", "ru_minflt")


def _worker_times() -> tuple[float, float, int]:
    t = os.times()
    return t.user, t.system, resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _features(root: Path) -> dict:
    return {f.name: f.read_bytes() for f in sorted((root / "data").rglob("features/*.csv"))}


def _add_large(root: Path, count: int, n: int) -> list[str]:
    """Store ``count`` synthetic ``ball`` matrices of ``n`` points (d = 3, beta 4, seeds
    0, 1, ...) beside the design's; their keys."""
    from analysis.sources.synthetic import full_ball
    from analysis.store import Store
    from analysis.study.core import Study

    study = Study.open(root / "preregistration" / DESIGN.name)
    with Store(study.paths.store) as store:
        return [store.add_synthetic(full_ball(n, 3, 4.0, random_state=s)) for s in range(count)]


def cpu_share(base: Path, tmp: Path, matrices: int, workers: int, large: list[str]) -> dict:
    """Brackets + descriptor stages of the last ``matrices`` real matrices and of the
    ``large`` synthetic ones, serially, with
    ``workers`` processes (one pool for both stages, as :func:`analysis.study.run_study`
    uses) and on a LocalCluster: wall, user and system CPU seconds of the
    process tree (executor start and close included), and identical outputs."""
    from analysis.executor import open_executor
    from analysis.store import RunSpec, Store
    from analysis.study.core import Study
    from analysis.study.describe import descriptor_stage
    from analysis.study.stages import bracket_stage

    try:
        from analysis.worker_setup import shared_pool
    except ImportError:  # the code before issue 51
        shared_pool = None
    out: dict = {}
    outputs = {}
    for mode in ("serial", "workers", "cluster"):
        root = tmp / f"cpu-{mode}"
        shutil.copytree(base, root)
        study = Study.open(root / "preregistration" / DESIGN.name)
        real = [k for t in study.plan.extractions for k in study.extractions.keys(t.label)]
        real = real[-matrices:]  # the last input's heads: the design's longest (L = 64)
        c0, t0 = _cpu(), time.perf_counter()
        per_worker = None
        with contextlib.ExitStack() as stack:
            if mode == "cluster":
                ex = stack.enter_context(
                    open_executor(cluster=f"local:{workers}", say=lambda _: None)
                )
                client = ex._client
                before = client.run(_worker_times)
                par = {"executor": ex}
            elif mode == "workers" and shared_pool is not None:  # as run_study does
                ex, n = stack.enter_context(shared_pool(None, workers))
                par = {"executor": ex, "workers": n}
            else:  # before shared_pool: a pool per stage
                ex, par = None, {"workers": workers if mode == "workers" else 1}
            store = stack.enter_context(Store(study.paths.store))
            run = RunSpec(progress=False, **par)
            n = bracket_stage(study, store, real, large, engine=None, say=lambda _: None, run=run)
            d = descriptor_stage(study, store, real + large, run.workers, False, ex)
            if mode == "cluster":
                after = client.run(_worker_times)
                per_worker = {
                    w: [round(a - b, 2) for a, b in zip(after[w], before[w], strict=True)]
                    for w in after
                }
        d_own, d_kids = (
            dict(zip(_FIELDS, (a - b for a, b in zip(part, part0, strict=True)), strict=True))
            for part, part0 in ((_cpu()[:3], c0[:3]), (_cpu()[3:], c0[3:]))
        )
        user, system = (d_own[f] + d_kids[f] for f in _FIELDS[:2])
        wall = time.perf_counter() - t0
        out[mode] = {
            "profiles": n,
            "described": d,
            "wall_s": wall,
            "user_s": user,
            "system_s": system,
            "system_share": system / (user + system),
            "per_worker": per_worker,
            "self": d_own,
            "children": d_kids,
        }
        with Store(study.paths.store) as store:
            outputs[mode] = (_profiles(store), _features(root))
        print(
            f"{mode}: {n} profiles, {d} matrices described, wall {wall:.1f} s, user "
            f"{user:.1f} s, system {system:.1f} s: system share {100 * system / (user + system):.1f}%"
            + f"; this process {d_own}, reaped children {d_kids}"
            + (f"; workers (user, system, minflt) {per_worker}" if per_worker else "")
        )
    out["identical"] = outputs["serial"] == outputs["workers"] == outputs["cluster"]
    print(f"stored profiles and descriptor files identical: {out['identical']}")
    return out


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
    ap.add_argument("--large", type=int, default=4, help="--cpu: synthetic matrices added")
    ap.add_argument("--large-n", type=int, default=192, help="--cpu: their points")
    ap.add_argument("--synthetic", type=int, help="only the first S synthetic matrices")
    ap.add_argument("--tasks", type=int, default=1000, help="no-op tasks of the fan-out")
    ap.add_argument("--single", type=int, default=200, help="no-op round trips")
    ap.add_argument("--skip-stage", action="store_true", help="overhead only")
    ap.add_argument(
        "--cpu", action="store_true", help="system share of brackets + descriptors only"
    )
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
    if args.cpu:
        with tempfile.TemporaryDirectory(prefix="bench_executor_") as tmp:
            base = extracted_default_study(Path(tmp))
            large = _add_large(base, args.large, args.large_n)
            record["cpu"] = cpu_share(base, Path(tmp), args.matrices or 4, args.workers, large)
        args.skip_overhead = args.skip_stage = True
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
            base = extracted_default_study(tmp)
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
