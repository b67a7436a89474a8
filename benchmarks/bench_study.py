"""``make study`` from a fresh clone: wall time, stage times, and whether it reproduces the shipped tables.

By default the script clones this repository's HEAD into a new temporary folder, runs
``make install`` there (not timed), then ``make study`` (timed: wall clock around the
command, CPU seconds of the command and its children), reads the stage seconds the runner
stored (``data/offline-families/stages.json``), and compares every shipped table in
``docs/results/families-study/tables/`` with the clone's
``reports/offline-families/tables/`` line by line, dropping the ``# `` provenance lines.
The clone is kept (its path is printed) so that the run can be inspected or resumed.

``--clone DIR --no-run`` summarizes a fresh clone whose ``make study`` has already run
(the wall time is then not measured here: the stage seconds and their sum are reported).

Run from the repository root::

    python -m benchmarks.bench_study                       # about 75 min on 2 cores
    python -m benchmarks.bench_study --clone /tmp/fc --no-run

Writes ``benchmarks/out/bench_study.json`` and prints the stage table, the wall time and
one line per shipped table (same / differs / missing).
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


def table_lines(path: Path) -> list[str]:
    """A CSV table's lines without its ``# `` provenance lines."""
    return [ln for ln in path.read_text().splitlines() if not ln.startswith("#")]


def compare_tables(clone: Path) -> dict[str, str]:
    """``same``, ``differs`` or ``missing`` for each shipped table."""
    out = {}
    for shipped in sorted(SHIPPED.glob("*.csv")):
        mine = clone / "reports" / "offline-families" / "tables" / shipped.name
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
    args = ap.parse_args()
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
        print(f"clone: {clone} (make install done); running make study ...", flush=True)
        cpu0, start = children_cpu(), time.perf_counter()
        run(["make", "study"], clone, OUT / "bench_study_run.log")
        result["wall_s"] = time.perf_counter() - start
        result["cpu_s"] = children_cpu() - cpu0
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True, check=True
    )
    stages = json.loads((clone / "data" / "offline-families" / "stages.json").read_text())
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
        tables=compare_tables(clone),
    )
    (OUT / "bench_study.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"clone {clone} at {result['commit'][:7]}, {result['cpus']} CPUs")
    for s in STAGES:
        print(f"  {s:<12} {seconds[s]:8.0f} s")
    print(f"  {'sum':<12} {result['stage_sum_s']:8.0f} s = {result['stage_sum_s'] / 60:.1f} min")
    if "wall_s" in result:
        print(f"  make study wall {result['wall_s'] / 60:.1f} min, {result['cpu_s']:.0f} CPU-s")
    for name, verdict in result["tables"].items():
        print(f"  {name:<28} {verdict}")
    same = sum(v == "same" for v in result["tables"].values())
    print(f"{same} of {len(result['tables'])} shipped tables reproduced (provenance lines dropped)")


if __name__ == "__main__":
    main()
