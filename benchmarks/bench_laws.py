"""Benchmark ``attnrank laws``: fitted slopes against theory, and the cost of the sweeps.

Usage, from the repository root::

    python -m benchmarks.bench_laws [--presets spherical-quick spherical ball-quick ball]
        [--workers 2] [--fresh] [--out benchmarks/out/laws]

Each preset runs ``run_laws`` into ``OUT/<preset>/`` (a re-run reuses the brackets
cached there unless ``--fresh``, so the times printed are only meaningful for a fresh
run: they say how many matrices were computed now). Prints, per preset: wall and
process CPU seconds (user + sys of this process and its workers), the summed per-matrix
CPU seconds, the median per-matrix CPU time, and the Markdown table of fits; writes
``OUT/summary.json``. The machine may be shared: per-matrix CPU time is the stable
number, wall time is not.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import time
from pathlib import Path

from analysis.laws import QUICK_TOLERANCE, default_config, make_config, run_laws
from benchmarks.common import OUT, command_line

PRESETS = {
    "spherical-quick": ("spherical", True),
    "spherical": ("spherical", False),
    "ball-quick": ("ball", True),
    "ball": ("ball", False),
}


def _cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", nargs="+", default=list(PRESETS), choices=list(PRESETS))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--fresh", action="store_true", help="delete cached brackets first")
    ap.add_argument("--out", type=Path, default=OUT / "laws")
    args = ap.parse_args()
    summary = {"command": command_line("benchmarks.bench_laws"), "presets": {}}
    for name in args.presets:
        family, quick = PRESETS[name]
        out = args.out / name
        if args.fresh and out.exists():
            shutil.rmtree(out)
        cfg = make_config(default_config(family, quick=quick))
        c0, w0 = _cpu(), time.perf_counter()
        res = run_laws(
            cfg,
            out=out,
            workers=args.workers,
            progress=True,
            tolerance=QUICK_TOLERANCE if quick else None,
        )
        wall, cpu = time.perf_counter() - w0, _cpu() - c0
        t = res["timing"]
        print(f"\n== {name}: {t['matrices']} matrices ({t['computed']} computed now)")
        print(
            f"wall {wall:.1f} s, process CPU {cpu:.1f} s (this process + workers), "
            f"per-matrix CPU: sum {t['cpu_s_computed']:.1f} s now / {t['cpu_s_all']:.1f} s "
            f"all, median {t['cpu_s_per_matrix_median']:.2f} s, max "
            f"{t['cpu_s_per_matrix_max']:.2f} s, workers {args.workers}, cpus {os.cpu_count()}"
        )
        print((out / "fits.md").read_text())
        summary["presets"][name] = {"wall_s": wall, "process_cpu_s": cpu, **res}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(f"wrote {args.out / 'summary.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
