"""Benchmark ``attnrank validate-comparison``: false-positive rate, power and runtime.

Usage::

    python benchmarks/bench_validate_comparison.py [--simulations 200] [--seed 0]
        [--widths FILE] [--grid]

Without ``--widths`` it writes a STAND-IN width file (integer brackets drawn from a
plausible distribution: log2 rank uniform on [1.5, 4.5] shifted by eps; hi/lo
log-normal around 2.3 before integer rounding, as METHOD.md section 7 expects of a full
engine run; 2% closed) and says so in its output. Replace it by
``data/reference/minilm_bracket_widths.csv`` once the engine benchmark has written it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's analysis

from analysis.cli import main as cli_main  # noqa: E402


def write_standin_widths(path: Path, *, seed: int = 0, per_eps: int = 432) -> None:
    """Plausible integer brackets (stand-in until the engine's widths exist)."""
    rng = np.random.default_rng(seed)
    rows = []
    for eps in (0.05, 0.1, 0.2):
        for _ in range(per_eps):
            r = 2 ** rng.uniform(1.5, 4.5) * (0.1 / eps) ** 0.4
            closed = rng.uniform() < 0.02
            ratio = 1.0 if closed else float(np.exp(rng.normal(np.log(2.3), 0.35)))
            a = rng.uniform()
            lo = max(1, int(np.floor(r / ratio**a)))
            hi = lo if closed else max(lo, int(np.ceil(r * ratio ** (1 - a))))
            rows.append((eps, lo, hi))
    pd.DataFrame(rows, columns=["eps", "lower", "upper"]).to_csv(path, index=False)


def run(args_list: list[str]) -> dict:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = cli_main(["validate-comparison", "--json", *args_list])
    if rc != 0:
        raise SystemExit(rc)
    return json.loads(buf.getvalue())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--simulations", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--widths")
    ap.add_argument(
        "--grid",
        action="store_true",
        help="also sweep residual SD and the native head share (N/4 each)",
    )
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory()
    if args.widths:
        widths = Path(args.widths)
        note = f"widths from {widths}"
    else:
        widths = Path(tmp.name) / "standin_widths.csv"
        write_standin_widths(widths)
        note = (
            "STAND-IN widths (plausible integer brackets, hi/lo ~2.3 before rounding "
            "to integers); not the "
            "engine's: rerun with --widths data/reference/minilm_bracket_widths.csv"
        )
    print(note, file=sys.stderr)
    w = pd.read_csv(widths)
    ratio = w["upper"] / w["lower"]
    print(
        f"width file: {len(w)} brackets, median hi/lo {ratio.median():.2f}, "
        f"closed {np.mean(ratio == 1):.3f}",
        file=sys.stderr,
    )
    t0 = time.perf_counter()
    out = run(
        ["--simulations", str(args.simulations), "--seed", str(args.seed), "--widths", str(widths)]
    )
    out["wall_seconds"] = round(time.perf_counter() - t0, 1)
    out["widths_note"] = note
    print(json.dumps(out))
    if args.grid:
        n = max(1, args.simulations // 4)
        for rsd in (0.75, 1.0):
            for share in (0.0, 0.25, 0.5, 0.75):
                r = run(
                    [
                        "--simulations",
                        str(n),
                        "--seed",
                        str(args.seed),
                        "--widths",
                        str(widths),
                        "--residual-sd",
                        str(rsd),
                        "--native-head-share",
                        str(share),
                    ]
                )
                print(
                    json.dumps(
                        {
                            k: r[k]
                            for k in (
                                "false_positive_rate",
                                "power",
                                "simulations",
                                "residual_sd",
                                "native_head_share",
                                "seconds",
                            )
                        }
                    )
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
