"""How steady a stage bar's ETA is: the old bars (items counted as equal units, tqdm's
default ``smoothing=0.3``) against the cost-weighted ones of :mod:`analysis.progress`
(issue 53 item 1), on the same completions.

The default study's design (``preregistration/offline-minilm.toml``) on a temporary copy
of the study root: its inputs extracted, then its brackets stage (real matrices at the
design's three temperatures, synthetic ones at t = 1) and its descriptor stage run as
``make run`` runs them (one shared pool of ``--workers`` processes, bars on), on every
``--stride``-th real matrix in the store's order (so both lengths stay interleaved as in
the study) and the first ``--synthetic`` synthetic ones. Every bar the stages build is
recorded: its items' estimated costs and the time each item completed.

Both bars are then replayed over those same completions (the same order, the same
instants, so the same load), with tqdm's clock set to each completion's time: the old bar
counts one unit per item with tqdm's defaults, the new one is
:class:`analysis.progress.CostBar` as the stage built it. At every completion after the
first 10% of a bar's items the predicted total time of the stage is read from the bar's
``format_dict`` at every redraw (elapsed + remaining, remaining = (total - n) / rate, the rate tqdm shows:
its smoothed ``rate``, else n / elapsed). Reported per bar: the spread of that prediction
(max / min, and max - min in minutes) and its largest error against the stage's actual
time, old and new, and how far the prediction travels (the sum of its moves: its range
when it only drifts one way as the load changes, far more when it swings).

Run from the repository root::

    python -m benchmarks.bench_eta                  # every 3rd real matrix, 2 workers
    python -m benchmarks.bench_eta --stride 1       # the whole stage (about 10 CPU-min)
    python -m benchmarks.bench_eta --replay benchmarks/out/bench_eta.json   # analyse again

Writes ``benchmarks/out/bench_eta.json`` (every bar's completions and both predictions).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import tempfile
import time
from pathlib import Path

from benchmarks.common import DEFAULT_DESIGN, OUT, command_line, extracted_default_study

DESIGN = DEFAULT_DESIGN


def _recording(records: list[dict]):
    """A CostBar that records its costs and the time of every completion."""
    from analysis.progress import CostBar

    class Recording(CostBar):
        def __init__(self, costs, **kw):
            kw["file"] = io.StringIO()  # the replay shows the bars; keep the log clean
            super().__init__(costs, **kw)
            self._t0 = time.perf_counter()
            self._rec = {
                "desc": kw["desc"],
                "costs": [float(c) for c in costs],
                "done": kw.get("done", 0),
                "done_cost": float(kw.get("done_cost", 0.0)),
                "times": [],
                "spent": [],
            }
            records.append(self._rec)

        def advance(self, cost, *, note=None):
            self._rec["times"].append(time.perf_counter() - self._t0)
            self._rec["spent"].append(float(cost))
            super().advance(cost, note=note)

        def close(self):
            self._rec.setdefault("closed", time.perf_counter() - self._t0)
            super().close()

    return Recording


def run_stages(root: Path, stride: int, synthetic: int, workers: int) -> list[dict]:
    """The brackets and descriptor stages of the chosen matrices, their bars recorded."""
    import analysis.store.run as run_module
    import analysis.study.describe as describe_module
    from analysis.store import RunSpec, Store
    from analysis.study.core import Study
    from analysis.study.stages import bracket_stage
    from analysis.worker_setup import shared_pool

    records: list[dict] = []
    bar = _recording(records)
    run_module.CostBar = describe_module.CostBar = bar
    study = Study.open(root / "preregistration" / DESIGN.name)
    real = [k for t in study.plan.extractions for k in study.extractions.keys(t.label)]
    real = real[::stride]
    synth = list(study.extractions.synthetic().values())[:synthetic]
    with shared_pool(None, workers) as (ex, n), Store(study.paths.store) as store:
        run = RunSpec(n, ex, None, True)
        bracket_stage(study, store, real, synth, engine=None, say=lambda _: None, run=run)
        describe_module.descriptor_stage(study, store, real, n, True, ex)
    return [r for r in records if r["times"]]


def _predict(fd: dict) -> float | None:
    """Elapsed + remaining as the bar shows it (None before it has a rate)."""
    rate = fd["rate"] if fd["rate"] else (fd["n"] - fd["initial"]) / fd["elapsed"]
    if not rate or fd["elapsed"] <= 0:
        return None
    return fd["elapsed"] + (fd["total"] - fd["n"]) / rate


def replay(rec: dict, *, new: bool) -> list[tuple]:
    """(time, predicted total, share of items done) of the old or the new bar over ``rec``
    at every redraw (at most every 0.1 s: of a burst of completions, the first is shown)."""
    from tqdm import tqdm

    from analysis.progress import CostBar

    clock = [0.0]
    if new:
        cb = CostBar(
            rec["costs"],
            desc=rec["desc"],
            unit="items",
            done=rec["done"],
            done_cost=rec["done_cost"],
            file=io.StringIO(),
        )
        bar = cb.bar
    else:  # the bars before issue 53 item 1: one unit per item, tqdm's defaults
        items = len(rec["costs"]) + rec["done"]
        bar = tqdm(total=items, initial=rec["done"], desc=rec["desc"], file=io.StringIO())
    bar._time = lambda: clock[0]
    bar.reset(total=bar.total)  # start_t and last_print_t on the replay's clock
    if new:
        bar.n = bar.last_print_n = rec["done_cost"]
    else:
        bar.n = bar.last_print_n = rec["done"]
    bar.initial = bar.n
    out = []
    for i, (t, cost) in enumerate(zip(rec["times"], rec["spent"], strict=True)):
        clock[0] = t
        if new:
            cb.advance(cost)
        else:
            bar.update(1)
        if bar.last_print_t == t:  # redrawn: what the reader sees (not each item of a burst)
            out.append((t, _predict(bar.format_dict), (i + 1) / len(rec["times"])))
    bar.close()
    return out


def spread(preds: list[tuple], actual: float, skip: float) -> dict:
    """Spread of the predictions shown once ``skip`` of the stage's items are done."""
    vals = [p for _, p, done in preds if p is not None and done >= skip]
    if not vals:
        return {}
    return {
        "samples": len(vals),
        "max_over_min": round(max(vals) / min(vals), 3),
        "range_min": round((max(vals) - min(vals)) / 60, 3),
        "min_s": round(min(vals), 1),
        "max_s": round(max(vals), 1),
        "worst_error_pct": round(100 * max(abs(v - actual) for v in vals) / actual, 1),
        # how far the prediction travels: its range when it only drifts one way (the
        # load changing), far more when it swings up and down
        "travel_min": round(sum(abs(b - a) for a, b in zip(vals, vals[1:], strict=False)) / 60, 3),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stride", type=int, default=3, help="every K-th real matrix (default 3)")
    p.add_argument("--synthetic", type=int, default=12, help="synthetic matrices (default 12)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--skip", type=float, default=0.1, help="ignore the first part (0.1)")
    p.add_argument(
        "--replay", type=Path, help="analyse the completions of an earlier run's JSON again"
    )
    args = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    print(command_line("benchmarks.bench_eta"), flush=True)
    load0 = os.getloadavg()
    start = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    if args.replay:
        earlier = json.loads(args.replay.read_text())
        records, start = earlier["records"], earlier["started"]
        load0, load1 = earlier["load"]
        print(f"replaying {earlier['command']} (started {start})")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            root = extracted_default_study(Path(tmp), folder="study")
            records = run_stages(root, args.stride, args.synthetic, args.workers)
    rows = []
    for rec in records:
        actual = rec.get("closed", rec["times"][-1])
        row = {"bar": rec["desc"], "items": len(rec["times"]), "actual_s": round(actual, 1)}
        for name, new in (("old", False), ("new", True)):
            preds = replay(rec, new=new)
            row[name] = spread(preds, actual, args.skip)
            rec[f"pred_{name}"] = preds
        rows.append(row)
        o, n = row["old"], row["new"]
        print(
            f"{row['bar']:<22} {row['items']:>4} items, {actual:7.1f} s; predicted total "
            f"max/min old {o.get('max_over_min')} new {n.get('max_over_min')}, range "
            f"old {o.get('range_min')} min new {n.get('range_min')} min, worst error "
            f"old {o.get('worst_error_pct')}% new {n.get('worst_error_pct')}%, travel "
            f"old {o.get('travel_min')} min new {n.get('travel_min')} min",
            flush=True,
        )
    if not args.replay:
        load1 = os.getloadavg()
    print(f"started {start}; load average {load0[0]:.1f} at start, {load1[0]:.1f} at end")
    OUT.mkdir(parents=True, exist_ok=True)
    summary = {"command": command_line("benchmarks.bench_eta"), "started": start}
    summary |= {"load": [load0, load1], "rows": rows, "records": records}
    name = "bench_eta_replay.json" if args.replay else "bench_eta.json"
    (OUT / name).write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
