"""Where the CPU of one simulated study of the replication's power file goes, and a cheaper
counted study that decides the same.

The power file (``attnrank validate-comparison --write-power-file``, method 3) runs, per
hypothesis and scenario, about 40N calibration studies
(:func:`analysis.power.simulate.one_study`: simulate, compare, fits fixed) and 5N counted
studies (:func:`analysis.power.decisions.decided_study`: the same plus the SESOI tests);
docs/guide/replication.md, "Budget on 2 cores". On one simulated study of the
replication's size (``preregistration/replication.toml``: 420 heads, 210 held out, 7,560
cells; the registry's block column counts; the reference widths; share 0.05), one thread,
this prints

1. ``--profile K``: CPU seconds (``time.process_time``) and a cProfile breakdown of K
   calibration and K counted studies (after one warm-up study of each);
2. ``--workers-check M``: wall seconds of M calibration studies through
   :class:`analysis.power.simulate.StudyRunner` with 1 and with 2 worker processes;
3. ``--check K``: K counted studies as the package runs them and with the prototype (the
   bootstrap draws memoised in this process: a counted study draws the same B resamples
   of the held-out units from the same seed 1 + 4 x 3 times, once in the comparison and
   twice per SESOI factor and family pair; the prototype draws them once and restores the
   generator's state after each reuse, so every number is the same, bit for bit), their
   CPU and whether every field is identical;
4. ``--warm K``: K calibration studies at share 0.06, cold (the package) and with every
   interval fit started from the same seed's fit at share 0.05 (a design option, not
   exact: the fits then stop elsewhere within the optimizer's tolerance), their CPU, BFGS
   iterations and largest differences;
5. the projected power-file wall time on 2 cores at N = 40 and N = 100 from the measured
   per-study CPU and the measured 2-worker speed-up.

Nothing under ``analysis/`` changes; the memo is a patch of this process only.

Usage, from the repository root::

    python -m experiments.power_cost [--profile 6] [--workers-check 24] [--check 4] [--warm 6]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "preregistration" / "replication.toml"
SHARE = 0.05
#: Per (hypothesis, scenario): calibration and counted studies in units of N (measured
#: by ``benchmarks.bench_replication_compare --count-studies 8``: 960 and 120 at N = 8
#: over three scenarios).
CALIBRATION_PER_N, COUNTED_PER_N = 40, 5
#: Hypotheses with a SESOI and scenarios of the replication's power file; the method-2
#: record (about 10N calibration studies a hypothesis) and at most 128 studies of the
#: scale calibration come on top (the guide's 435N).
HYPOTHESES, SCENARIOS, METHOD2_PER_N, SCALE_STUDIES = 3, 3, 10, 128
#: cProfile groups: label -> function name (cumulative time of its calls).
GROUPS = (
    ("simulate the table", "simulate_study"),
    ("covariates (prepare)", "_prepare"),
    ("  of which calibration / screen", "prepare_covariates"),
    ("  of which checkpoint effects", "add_checkpoint_effects"),
    ("fits (interval BFGS)", "fit_estimator"),
    ("bootstrap draws", "_draw_units"),
    ("SESOI tests (counted only)", "equivalence"),
)


def _setup():
    from analysis.power.inputs import sizes_from_design
    from analysis.power.widths import DEFAULT_WIDTHS, load_widths
    from analysis.prereg.design import load_design
    from analysis.study.core import block_facts

    features = block_facts(load_design(DESIGN))["features"]
    sizes = sizes_from_design(str(DESIGN), features=features, features_note="registry")
    return sizes, load_widths(ROOT / DEFAULT_WIDTHS)


def _sesoi(sizes) -> tuple:
    """A SESOI for every family pair (its value does not change the cost)."""
    return tuple((tuple(p), 0.005) for p in sizes.family)


def calibration_task(sizes, widths, seed):
    """The task tuple of one calibration study, as the power stage submits it."""
    from analysis.power.inputs import PowerAssumptions
    from analysis.power.simulate import one_study

    return (one_study, sizes, widths, SHARE, PowerAssumptions(), tuple(sizes.family[0]), seed)


def counted_task(sizes, widths, seed):
    """The task tuple of one counted study, as the power stage submits it."""
    from analysis.power.decisions import decided_study
    from analysis.power.inputs import PowerAssumptions

    return (
        decided_study,
        sizes,
        widths,
        SHARE,
        PowerAssumptions(),
        tuple(sizes.family[0]),
        seed,
        _sesoi(sizes),
    )


class DrawMemo:
    """Patch ``analysis.compare.bootstrap._draw_units`` (this process only) so that a call
    with the same generator state, units, strata and B returns the first call's codes,
    strata and counts (copies) and leaves the generator in the state the first call left
    it in: the same numbers as drawing again."""

    def __init__(self, size: int = 4) -> None:
        self.size, self.cache, self.hits, self.calls = size, {}, 0, 0

    def __enter__(self) -> DrawMemo:
        import analysis.compare.bootstrap as bs

        self._bs, self._orig = bs, bs._draw_units

        def memo(units, strata, n_boot, rng):
            self.calls += 1
            key = (
                repr(rng.bit_generator.state),
                int(n_boot),
                np.asarray(units).tobytes(),
                None if strata is None else np.asarray(strata).tobytes(),
            )
            hit = self.cache.get(key)
            if hit is None:
                out = self._orig(units, strata, n_boot, rng)
                if len(self.cache) >= self.size:
                    self.cache.pop(next(iter(self.cache)))
                hit = self.cache[key] = (out, rng.bit_generator.state)
            else:
                self.hits += 1
                rng.bit_generator.state = hit[1]
            return tuple(a.copy() for a in hit[0])

        bs._draw_units = memo
        return self

    def __exit__(self, *exc: object) -> None:
        self._bs._draw_units = self._orig


def _cpu(tasks) -> tuple[float, list[dict]]:
    t0 = time.process_time()
    out = [t[0](*t[1:]) for t in tasks]
    return (time.process_time() - t0) / len(tasks), out


def profile(sizes, widths, k: int) -> dict[str, float]:
    """CPU per calibration and counted study, and the cProfile groups of each."""
    seeds = np.random.SeedSequence(11).spawn(k + 1)
    per = {}
    for name, make in (("calibration", calibration_task), ("counted", counted_task)):
        _cpu([make(sizes, widths, seeds[0])])  # warm-up: imports, caches
        cpu, _ = _cpu([make(sizes, widths, s) for s in seeds[1:]])  # unprofiled
        pr = cProfile.Profile()
        pr.enable()
        _cpu([make(sizes, widths, s) for s in seeds[1:]])
        pr.disable()
        per[name] = cpu
        stats = pstats.Stats(pr, stream=io.StringIO()).stats
        cum: dict[str, float] = {}
        for (_, _, fn), (_, _, _, ct, _) in stats.items():
            cum[fn] = max(cum.get(fn, 0.0), ct)
        total = sum(v[2] for v in stats.values())  # tottime: the profiled CPU
        print(f"{name} study: {cpu:.3f} CPU-s (mean of {k}, unprofiled); share of profiled time:")
        for label, fn in GROUPS:
            if fn in cum:
                print(f"  {label:34s} {cum[fn] / k:.3f} s  {100 * cum[fn] / total:4.0f}%")
    return per


def workers_check(sizes, widths, m: int) -> float:
    """Wall seconds of ``m`` calibration studies with 1 and 2 workers, timed after a warm-up
    batch of 4 in the same pool (its start and the workers' imports happen once per power
    file); the steady speed-up, and the pool's start as measured."""
    from analysis.power.simulate import StudyRunner

    seeds = np.random.SeedSequence(12).spawn(m + 4)
    tasks = [calibration_task(sizes, widths, s) for s in seeds]
    wall = {}
    for w in (1, 2):
        t0 = time.perf_counter()
        with StudyRunner(w) as runner:
            runner.run(tasks[:4])
            t1 = time.perf_counter()
            runner.run(tasks[4:])
            wall[w] = time.perf_counter() - t1
        print(
            f"  {m} calibration studies, {w} worker(s): {wall[w]:.2f} s wall "
            f"({wall[w] / m:.3f} s a study; start + 4 warm-up studies {t1 - t0:.2f} s); "
            f"load {os.getloadavg()[0]:.2f}"
        )
    print(f"  steady speed-up on 2 workers: {wall[1] / wall[2]:.2f}x (projection: at most 2)")
    return min(wall[1] / wall[2], 2.0)


def check(sizes, widths, k: int) -> tuple[float, float]:
    """Counted studies as the package runs them and with :class:`DrawMemo`: CPU of each,
    and whether every returned field is identical."""
    seeds = np.random.SeedSequence(13).spawn(k)
    _cpu([counted_task(sizes, widths, seeds[0])])
    cpu_ref, ref = _cpu([counted_task(sizes, widths, s) for s in seeds])
    with DrawMemo() as memo:
        cpu_new, new = _cpu([counted_task(sizes, widths, s) for s in seeds])
    same = all(a == b for a, b in zip(ref, new, strict=True))
    worst = max(
        abs(a[f] - b[f])
        for a, b in zip(ref, new, strict=True)
        for f in a
        if isinstance(a[f], float)
    )
    print(
        f"  package: {cpu_ref:.3f} CPU-s a counted study; prototype: {cpu_new:.3f} "
        f"({memo.hits} of {memo.calls} draws reused)"
    )
    print(f"  {k} studies, every field identical: {same}; largest |difference| {worst:.3g}")
    for r in ref:
        print("   ", {f: (round(v, 6) if isinstance(v, float) else v) for f, v in r.items()})
    return cpu_ref, cpu_new


class WarmStart:
    """Patch (this process only) the interval fits' start: ``record`` keeps every fit's
    ``(coef, log sigma)`` in call order; ``replay`` starts each fit from the recorded one
    of the same position and shape (a design option: BFGS then stops at another point
    within ``gtol``, so the numbers are not the package's bit for bit)."""

    def __init__(self) -> None:
        self.saved: list[np.ndarray] = []
        self.mode = "off"
        self.queue: list[np.ndarray] = []
        self.iterations: dict[str, list[int]] = {"off": [], "record": [], "replay": []}
        self.used = 0

    def __enter__(self) -> WarmStart:
        import analysis.compare.estimators as est

        self._est, self._fit, self._start = (
            est,
            est.fit_interval,
            est.IntervalRegression.start_params_ols,
        )
        memo = self

        def fit(*a, **k):
            res = memo._fit(*a, **k)
            memo.iterations[memo.mode].append(res.iterations)
            if memo.mode == "record":
                memo.saved.append(np.append(res.coef, np.log(res.sigma)))
            return res

        def start(model):
            cold = memo._start(model)
            if memo.mode == "replay" and memo.queue:
                warm = memo.queue.pop(0)
                if warm.shape == cold.shape:
                    memo.used += 1
                    return warm.copy()
            return cold

        est.fit_interval, est.IntervalRegression.start_params_ols = fit, start
        return self

    def __exit__(self, *exc: object) -> None:
        self._est.fit_interval = self._fit
        self._est.IntervalRegression.start_params_ols = self._start


def warm_check(sizes, widths, k: int, shares: tuple[float, float] = (0.05, 0.06)) -> float:
    """Calibration studies of ``k`` seeds at ``shares[1]``, cold (the package) and warm
    started from the same seed's fits at ``shares[0]`` (common random numbers: the
    calibration curve runs every seed at each share it tries); CPU of each and the
    largest differences of the returned numbers; returns the warm / cold CPU ratio."""
    from analysis.power.inputs import PowerAssumptions
    from analysis.power.simulate import one_study

    seeds = np.random.SeedSequence(14).spawn(k)
    args = (sizes, widths)
    pair, a = tuple(sizes.family[0]), PowerAssumptions()
    one_study(*args, shares[1], a, pair, seeds[0])  # warm-up
    cold_cpu = warm_cpu = 0.0
    diffs: dict[str, float] = {}
    same = 0
    with WarmStart() as ws:
        for s in seeds:
            ws.mode, ws.saved = "record", []
            one_study(*args, shares[0], a, pair, s)
            ws.mode = "off"
            t0 = time.process_time()
            cold = one_study(*args, shares[1], a, pair, s)
            t1 = time.process_time()
            ws.mode, ws.queue = "replay", list(ws.saved)
            warm = one_study(*args, shares[1], a, pair, s)
            t2 = time.process_time()
            cold_cpu, warm_cpu = cold_cpu + t1 - t0, warm_cpu + t2 - t1
            same += cold["adds_information"] == warm["adds_information"]
            for f in ("effect", "ci_low", "ci_high", "p_holm"):
                diffs[f] = max(diffs.get(f, 0.0), abs(cold[f] - warm[f]))
    print(
        f"  share {shares[1]} after {shares[0]}: cold {cold_cpu / k:.3f} CPU-s, warm "
        f"{warm_cpu / k:.3f} CPU-s a calibration study; same decision {same} of {k}; "
        "largest |difference| " + ", ".join(f"{f} {v:.2g}" for f, v in diffs.items())
    )
    it = ws.iterations
    print(
        f"  BFGS iterations a fit: cold {np.mean(it['off']):.1f}, warm {np.mean(it['replay']):.1f}"
        f" ({ws.used} of {len(it['replay'])} fits warm started)"
    )
    return warm_cpu / cold_cpu


def project(cal: float, counted: float, speedup: float, n: int) -> float:
    """Wall hours on 2 cores of the power file at ``n`` from the per-study CPU."""
    k = HYPOTHESES * SCENARIOS
    cpu = (
        k * (CALIBRATION_PER_N * n * cal + COUNTED_PER_N * n * counted)
        + HYPOTHESES * METHOD2_PER_N * n * cal
        + SCALE_STUDIES * cal
    )
    return cpu / speedup / 3600


def main(argv: list[str] | None = None) -> None:
    """Profile, time 1 against 2 workers, check the prototype, project."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", type=int, default=6, help="studies profiled of each kind")
    ap.add_argument("--workers-check", type=int, default=24, help="studies timed per pool")
    ap.add_argument("--check", type=int, default=4, help="counted studies checked")
    ap.add_argument("--warm", type=int, default=6, help="seeds of the warm-start check")
    ap.add_argument(
        "--only-calibration",
        type=int,
        default=0,
        help="only time N calibration studies in batches of 20, one thread (run several at once "
        "for contention)",
    )
    args = ap.parse_args(argv)
    from experiments.common import command_line

    print(command_line("experiments.power_cost"))
    print(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), f"load {os.getloadavg()}")
    sizes, widths = _setup()
    if args.only_calibration:  # in batches of 20: does the cost drift in one process?
        import resource

        seeds = np.random.SeedSequence(15).spawn(args.only_calibration + 1)
        _cpu([calibration_task(sizes, widths, seeds[0])])
        t0, c0 = time.perf_counter(), time.process_time()
        for b in range(0, args.only_calibration, 20):
            cpu, _ = _cpu([calibration_task(sizes, widths, s) for s in seeds[1 + b : 21 + b]])
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
            print(f"  studies {b}-{b + 19}: {cpu:.3f} CPU-s a study, max RSS {rss} MB")
        n = args.only_calibration
        print(
            f"calibration study: {(time.process_time() - c0) / n:.3f} CPU-s, "
            f"{(time.perf_counter() - t0) / n:.3f} s wall (mean of {n}); load {os.getloadavg()}"
        )
        return
    per = profile(sizes, widths, args.profile)
    speedup = workers_check(sizes, widths, args.workers_check)
    ref, new = check(sizes, widths, args.check)
    ratio = warm_check(sizes, widths, args.warm) if args.warm else float("nan")
    for n in (40, 100):
        print(
            f"N = {n}: power file on 2 cores {project(per['calibration'], ref, speedup, n):.2f} h"
            f" as the package runs it, {project(per['calibration'], new, speedup, n):.2f} h "
            f"with the prototype's counted studies; "
            f"{project(ratio * per['calibration'], new, speedup, n):.2f} h adding warm starts (not exact)"
        )
    print(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
