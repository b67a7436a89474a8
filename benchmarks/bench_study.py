"""``make study`` or ``make run`` from a fresh clone: wall time, stage times, shipped tables.

By default (``--target study``) the script clones this repository's HEAD into a new temporary folder, runs
``make install`` there (not timed), then ``make study`` (timed: wall clock around the
command, CPU seconds of the command and its children), reads the stage seconds the runner
stored (``data/offline-families/stages.json``), and compares every shipped table in
``docs/results/families-study/tables/`` with the clone's
``reports/offline-families/tables/`` line by line, dropping the ``# `` provenance lines.
The clone is kept (its path is printed) so that the run can be inspected or resumed.

``--target run`` times ``make run`` (the embedded MiniLM study, whose power is read from
``preregistration/offline-minilm.power.json`` and never simulated) the same way, then runs
``make run`` a second time: that run must only re-render the report (its stage seconds are
reported), and neither run may change a tracked file of the clone (``git status``).

``--clone DIR --no-run`` summarizes a fresh clone whose ``make study`` (or ``make run``)
has already run (the wall time is then not measured here: the stage seconds and their sum
are reported).

Run from the repository root::

    python -m benchmarks.bench_study                       # about 75 min on 2 cores
    python -m benchmarks.bench_study --target run          # under 10 min on 2 idle cores
    python -m benchmarks.bench_study --clone DIR --no-run

Writes ``benchmarks/out/bench_study.json`` (``bench_run.json`` for ``--target run``) and
prints the stage table, the wall time and one line per shipped table (same / differs /
missing).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.common import OUT, ROOT, command_line

SHIPPED = ROOT / "docs" / "results" / "families-study" / "tables"
STAGES = ("extract", "brackets", "descriptors", "compare", "power", "report")
#: make target -> the study it runs (its design's stem) and its shipped tables (or None).
TARGETS = {"study": ("offline-families", SHIPPED), "run": ("offline-minilm", None)}


def table_lines(path: Path) -> list[str]:
    """A CSV table's lines without its ``# `` provenance lines."""
    return [ln for ln in path.read_text().splitlines() if not ln.startswith("#")]


def compare_tables(
    clone: Path, stem: str = "offline-families", where: Path = SHIPPED
) -> dict[str, str]:
    """``same``, ``differs`` or ``missing`` for each shipped table."""
    out = {}
    for shipped in sorted(where.glob("*.csv")):
        mine = clone / "reports" / stem / "tables" / shipped.name
        if not mine.is_file():
            out[shipped.name] = "missing"
        else:
            out[shipped.name] = "same" if table_lines(mine) == table_lines(shipped) else "differs"
    return out


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(cmd: list[str], cwd: Path, log: Path) -> None:
    with log.open("w") as fh:
        proc = subprocess.run(cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"`{' '.join(cmd)}` failed in {cwd} (exit {proc.returncode}); see {log}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clone", type=Path, help="the fresh clone (default: a new temporary one)")
    ap.add_argument("--no-run", action="store_true", help="summarize the clone's stored run")
    ap.add_argument(
        "--target", choices=sorted(TARGETS), default="study", help="the make target to time"
    )
    args = ap.parse_args()
    stem, shipped = TARGETS[args.target]
    print(command_line("benchmarks.bench_study"), flush=True)
    if args.no_run and args.clone is None:
        raise SystemExit("--no-run needs --clone DIR (the clone whose run to summarize)")
    OUT.mkdir(parents=True, exist_ok=True)
    result: dict = {}
    if args.no_run:
        clone = args.clone.resolve()
    else:
        clone = (args.clone or Path(tempfile.mkdtemp(prefix="attnrank-study-"))).resolve()
        if clone.exists() and any(clone.iterdir()):
            raise SystemExit(f"--clone {clone}: not empty; a fresh clone needs an empty folder")
        run(["git", "clone", "-q", str(ROOT), str(clone)], ROOT, OUT / "bench_study_clone.log")
        run(["make", "install"], clone, OUT / "bench_study_install.log")
        print(f"clone: {clone} (make install done); running make {args.target} ...", flush=True)
        cpu0, start = children_cpu(), time.perf_counter()
        run(["make", args.target], clone, OUT / f"bench_{args.target}_run.log")
        result["wall_s"] = time.perf_counter() - start
        result["cpu_s"] = children_cpu() - cpu0
        if args.target == "run":  # a second run must only re-render the report
            first = json.loads((clone / "data" / stem / "stages.json").read_text())
            start = time.perf_counter()
            run(["make", "run"], clone, OUT / "bench_run_second.log")
            result["second_wall_s"] = time.perf_counter() - start
            second = json.loads((clone / "data" / stem / "stages.json").read_text())
            result["second_stage_s"] = {
                s: second["total_seconds"].get(s, 0.0) - first["total_seconds"].get(s, 0.0)
                for s in STAGES
            }
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True, check=True
    )
    stages = json.loads((clone / "data" / stem / "stages.json").read_text())
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=clone,
        capture_output=True,
        text=True,
        check=True,
    )
    if stages.get("runs") != 1:
        print(
            f"note: the clone's store holds {stages.get('runs')} runs; stage times are the last run's"
        )
    seconds = {s: float(stages["last_run_seconds"].get(s, 0.0)) for s in STAGES}
    result.update(
        clone=str(clone),
        commit=head.stdout.strip(),
        cpus=os.cpu_count(),
        stage_s=seconds,
        stage_sum_s=sum(seconds.values()),
        tables=compare_tables(clone, stem, shipped) if shipped is not None else {},
        tracked_files_changed=status.stdout.split("\n")[:-1],
    )
    (OUT / f"bench_{args.target}.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"clone {clone} at {result['commit'][:7]}, {result['cpus']} CPUs")
    for s in STAGES:
        print(f"  {s:<12} {seconds[s]:8.0f} s")
    print(f"  {'sum':<12} {result['stage_sum_s']:8.0f} s = {result['stage_sum_s'] / 60:.1f} min")
    if "wall_s" in result:
        print(
            f"  make {args.target} wall {result['wall_s'] / 60:.1f} min, "
            f"{result['cpu_s']:.0f} CPU-s"
        )
    if "second_wall_s" in result:
        again = ", ".join(f"{s} {v:.1f} s" for s, v in result["second_stage_s"].items() if v)
        print(f"  second make run wall {result['second_wall_s']:.0f} s: {again}")
    changed = result["tracked_files_changed"]
    print(f"  tracked files changed by the run: {', '.join(changed) if changed else 'none'}")
    for name, verdict in result["tables"].items():
        print(f"  {name:<28} {verdict}")
    if shipped is not None:
        same = sum(v == "same" for v in result["tables"].values())
        print(
            f"{same} of {len(result['tables'])} shipped tables reproduced "
            "(provenance lines dropped)"
        )


if __name__ == "__main__":
    main()
