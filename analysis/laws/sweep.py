"""The beta sweep: configurations, presets, beta grids, jobs, the resumable cache, brackets.

A :class:`SweepConfig` lists every (d, beta, seed, eps) matrix to bracket; :func:`run_sweep`
brackets them (in a process pool if asked) and appends each finished bracket to a JSON-lines
checkpoint, so an interrupted sweep resumes where it stopped.

Design of the default sweeps (and why)
--------------------------------------
- ``eps = 0.1``: the middle of the study's grid; brackets there are tighter than at 0.05.
- ``n = 512``: the fits are only meaningful where ``r`` is well below ``n`` (the law is
  ``min{n, ...}``). The default beta grids (below) keep the measured upper ends at or
  under about ``0.3 n`` (measured max hi/n: spherical 0.07 / 0.22 / 0.29, ball 0.10 /
  0.23 / 0.21 for d = 2 / 3 / 4). ``n = 256`` leaves less room; ``n = 1024`` costs
  several times more per matrix (pilot: n = 256 -> 512 already cost 3-10x at fast
  effort; the engine's dense stages are cubic) and would blow the 20-minute budget.
- Beta grids: powers of two from 1 (spherical) or 2 (ball) up to the largest power whose
  rank stayed ``<~ n / 4`` at ``n = 512`` in a pilot, per d (:data:`DEFAULT_BETAS`): wider
  for small d, where the rank grows slowly; for the ball also ``n >= e^(beta / 8)``, i.e.
  beta <= 49 at n = 512. They are chosen from where the rank sits relative to n, never
  from the fitted slopes. ``--betas`` overrides them for every d. Known limitation: the
  curve bends at small beta (measured local slopes fall from 1.4-1.7x theory at beta
  1 -> 2 to theory at the top of each grid), and n = 512 leaves d = 3, 4 little room
  above the bend; ``local_slopes.csv`` and the post-hoc upper-half fit show it.
- 3 seeds: each (beta, seed) draws an independent point cloud (seed derived from
  ``(family, d, n, beta, seed)``), so observations are independent.
- ``effort = "thorough"``: the ranks here (up to ~150) are far larger than on learned
  heads, and at the engine's default effort the lower ascent stops short at large sizes.
  Measured on the sweep's own matrices (n = 512, eps 0.1, seed 0): d = 4, beta = 8 goes
  from [42, 150] (default, 16 s) to [58, 138] (thorough, 32 s); d = 3, beta = 16 from
  [43, 100] to [62, 96] (43 s). More ascent steps than ``thorough`` gain little (3000
  lower steps: [60, 138], 49 s). ``--quick`` uses ``n = 256``, 2 seeds, ``default``
  effort and the even powers of each grid.
- ``--design asymptotic`` (spherical, one eps): the grids above start at beta = 1, in
  the kernel's Taylor regime, where the theory's own harmonic count is steeper than its
  asymptote. This design takes each d's grid from the theory alone, before any bracket
  (:func:`analysis.laws.theory.asymptotic_betas`; the rule: docs/guide/laws.md,
  "Defaults"). The default design stays the default; the two answer different questions
  (the curve on a fixed grid, the law where it applies).
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from analysis.atomic import JsonlCheckpoint
from analysis.attention import derive_seed
from analysis.brackets import EFFORTS, check_engine, profile_matrix
from analysis.executor import check_executor, task_pool
from analysis.laws.theory import FAMILIES, asymptotic_betas, asymptotic_onset, n_for_asymptotic_grid
from analysis.sources.synthetic import full_ball, spherical
from analysis.validation import ParameterError, check_choice, check_eps_grid, check_int

__all__ = [
    "ASYMPTOTIC_MIN_POINTS",
    "CHECKPOINT_NAME",
    "DEFAULT_BETAS",
    "DESIGNS",
    "SweepConfig",
    "bracket_job",
    "default_config",
    "job_key",
    "make_config",
    "read_checkpoint",
    "run_sweep",
]

#: Default beta grids per family and d (see the module docstring for the rule).
DEFAULT_BETAS: dict[str, dict[int, tuple[float, ...]]] = {
    "spherical": {
        2: (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0),
        3: (1.0, 2.0, 4.0, 8.0, 16.0),
        4: (1.0, 2.0, 4.0, 8.0),
    },
    "ball": {2: (2.0, 4.0, 8.0, 16.0, 32.0), 3: (2.0, 4.0, 8.0, 16.0), 4: (2.0, 4.0, 8.0)},
}
_GENERATORS = {"spherical": spherical, "ball": full_ball}
#: Beta-grid designs: ``default`` (:data:`DEFAULT_BETAS`) or, spherical only,
#: ``asymptotic`` (:func:`analysis.laws.theory.asymptotic_betas`: from where the theory's own
#: harmonic count has settled onto the asymptotic slope, while the count is <= n / 4).
DESIGNS: tuple[str, ...] = ("default", "asymptotic")
#: The asymptotic design needs this many betas per d (a slope over two octaves).
ASYMPTOTIC_MIN_POINTS = 3
CHECKPOINT_NAME = "brackets.jsonl"

# -- configuration -------------------------------------------------------------------


@dataclass(frozen=True)
class SweepConfig:
    """One sweep: every (d, beta, seed) matrix, bracketed at every eps.

    Attributes
    ----------
    family : {"spherical", "ball"}
    dims : tuple of int
        Dimensions d >= 2 (d = 1 has slope 0 or 1/2 and no interesting geometry).
    betas : dict d -> tuple of float
        Inverse temperatures per d (> 0).
    n : int
        Points per matrix (>= 8).
    eps : tuple of float
        Tolerances in (0, 1); one fit per (d, eps).
    seeds : tuple of int
        Non-negative; one independent point cloud per (d, beta, seed).
    effort : {"fast", "default", "thorough"}
    design : {"default", "asymptotic"}
        How the beta grids were chosen (:data:`DESIGNS`).
    notes : tuple of str
        What the design left out and why (printed by the CLI, kept in ``results.json``).
    engine : int or None
        Bracket engine version (:data:`analysis.brackets.ENGINE_VERSIONS`); None: the
        newest. Every job carries it, in its cache key too. Set it with
        :meth:`with_engine`.

    Examples
    --------
    >>> from analysis.laws import default_config, make_config
    >>> config = make_config(default_config("spherical"), dims=[3], betas=[1.0, 7.0], n=8,
    ...                      eps=[0.1], seeds=[0, 1], effort="fast")
    >>> len(config.jobs())  # one per (d, beta, seed, eps)
    4
    """

    family: str
    dims: tuple[int, ...]
    betas: dict[int, tuple[float, ...]]
    n: int
    eps: tuple[float, ...]
    seeds: tuple[int, ...]
    effort: str
    design: str = "default"
    notes: tuple[str, ...] = ()
    engine: int | None = None

    def with_engine(self, engine: int | None) -> SweepConfig:
        """This sweep with bracket engine ``engine`` (checked; None: the newest)."""
        return replace(self, engine=check_engine(engine))

    def jobs(self) -> list[dict[str, Any]]:
        """Every (d, beta, seed, eps) to bracket, with its cache key."""
        out = []
        engine = check_engine(self.engine)
        for d in self.dims:
            for beta in self.betas[d]:
                for seed in self.seeds:
                    for e in self.eps:
                        job = {
                            "family": self.family,
                            "d": d,
                            "n": self.n,
                            "beta": beta,
                            "seed": seed,
                            "eps": e,
                            "effort": self.effort,
                            "engine": engine,
                        }
                        job["key"] = job_key(job)
                        out.append(job)
        return out


def job_key(job: dict[str, Any]) -> str:
    """Cache key ``family:d:n:beta:seed:eps:effort:engine`` (floats by ``repr``).

    The engine version (the job's ``engine``; the newest when it has none) is part of the
    key, so brackets cached by another engine are recomputed rather than mixed into a fit
    with this one's.

    Examples
    --------
    >>> from analysis.laws import job_key
    >>> job_key({"family": "ball", "d": 2, "n": 64, "beta": 4, "seed": 0, "eps": 0.1,
    ...          "effort": "fast"})  # doctest: +ELLIPSIS
    'ball:2:64:4.0:0:0.1:fast:engine...'
    """
    engine_version = check_engine(job.get("engine"))
    return (
        f"{job['family']}:{int(job['d'])}:{int(job['n'])}:{float(job['beta'])!r}:"
        f"{int(job['seed'])}:{float(job['eps'])!r}:{job['effort']}:engine{engine_version}"
    )


def _ints(name: str, values: Any, minimum: int) -> tuple[int, ...]:
    vals = [values] if isinstance(values, (int, np.integer)) else list(values)
    if not vals:
        raise ParameterError(name, "at least one value", vals)
    out = tuple(check_int(name, v, minimum=minimum) for v in vals)
    if len(set(out)) != len(out):
        raise ParameterError(name, "distinct values", list(out))
    return out


def default_config(family: str, *, quick: bool = False) -> SweepConfig:
    """The default (or ``--quick``) sweep of a family; see the module docstring.

    Examples
    --------
    >>> from analysis.laws import default_config
    >>> quick = default_config("ball", quick=True)
    >>> quick.dims, quick.betas[2], quick.n, quick.seeds
    ((2, 3, 4), (2.0, 8.0, 32.0), 256, (0, 1))
    """
    check_choice("family", family, FAMILIES)
    grids = DEFAULT_BETAS[family]
    if quick:
        grids = {d: tuple(b for i, b in enumerate(g) if i % 2 == 0) for d, g in grids.items()}
        return SweepConfig(family, (2, 3, 4), grids, 256, (0.1,), (0, 1), "default")
    return SweepConfig(family, (2, 3, 4), grids, 512, (0.1,), (0, 1, 2), "thorough")


def make_config(
    base: SweepConfig,
    *,
    dims: Sequence[int] | None = None,
    betas: Sequence[float] | None = None,
    n: int | None = None,
    eps: Sequence[float] | None = None,
    seeds: Sequence[int] | None = None,
    effort: str | None = None,
    design: str = "default",
) -> SweepConfig:
    """Validate a sweep; None means ``base``'s value of that parameter (``base``:
    :func:`default_config` of the family, quick or not).

    ``betas`` given explicitly apply to every d. Errors name the CLI flag. The sweep
    runs the newest bracket engine; :meth:`SweepConfig.with_engine` picks another. With
    ``design="asymptotic"`` (spherical, one eps, no ``betas``) each d gets
    :func:`analysis.laws.theory.asymptotic_betas`; a d with fewer than
    :data:`ASYMPTOTIC_MIN_POINTS` betas at this n is left out, with a note giving the n
    it would need.

    Examples
    --------
    >>> from analysis.laws import default_config, make_config
    >>> sphere = default_config("spherical")
    >>> make_config(sphere, dims=[2], betas=[4, 1], n=64).betas  # sorted, every d
    {2: (1.0, 4.0)}
    >>> make_config(sphere, eps=[1.5])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: eps: expected values in (0, 1) ..., got [1.5]
    """
    if not isinstance(base, SweepConfig):
        raise ParameterError("base", "a SweepConfig, e.g. default_config(family)", base)
    family = base.family
    design = check_choice("design", design, DESIGNS)
    dims_ = base.dims if dims is None else _ints("dims", dims, 2)
    if design == "asymptotic":
        if family != "spherical":
            raise ParameterError("design", "'default' for the ball (no harmonic count)", design)
        if betas is not None:
            raise ParameterError("betas", "none with --design asymptotic (it sets them)", betas)
        if eps is not None and len(set(eps)) != 1:
            raise ParameterError("eps", "one value with --design asymptotic", eps)
        grid: dict[int, tuple[float, ...]] = {}  # set below, once n and eps are known
    elif betas is None:
        missing = [d for d in dims_ if d not in base.betas]
        if missing:
            raise ParameterError(
                "betas", f"explicit values for d = {missing} (defaults exist for d in 2..4)", None
            )
        grid = {d: base.betas[d] for d in dims_}
    else:
        b = check_eps_grid(betas, name="betas")
        if len(set(b)) < 2:
            raise ParameterError("betas", "at least two distinct values (a slope needs two)", b)
        grid = {d: tuple(sorted(set(b))) for d in dims_}
    n_ = base.n if n is None else check_int("n", n, minimum=8)
    eps_ = base.eps if eps is None else check_eps_grid(eps, name="eps")
    bad = [e for e in eps_ if e >= 1]
    if bad:
        raise ParameterError("eps", "values in (0, 1) (r_eps = 1 or 0 for eps >= 1)", bad)
    eps_ = tuple(sorted(set(eps_)))
    seeds_ = base.seeds if seeds is None else _ints("seeds", seeds, 0)
    effort_ = base.effort if effort is None else check_choice("effort", effort, EFFORTS)
    notes: list[str] = []
    if design == "asymptotic":
        (e,) = eps_
        kept = []
        for d in dims_:
            g = asymptotic_betas(d, e, n_)
            if len(g) >= ASYMPTOTIC_MIN_POINTS:
                grid[d] = g
                kept.append(d)
            elif math.isnan(onset := asymptotic_onset(d, e)):
                notes.append(
                    f"d = {d} left out: at eps = {e:g} the harmonic count does not settle "
                    f"by beta = 2^16"
                )
            else:
                need = n_for_asymptotic_grid(d, e, points=ASYMPTOTIC_MIN_POINTS)
                notes.append(
                    f"d = {d} left out: at eps = {e:g} the harmonic count settles from beta = "
                    f"{onset:g}, and {ASYMPTOTIC_MIN_POINTS} betas with count <= n / 4 need "
                    f"n >= {need} (n = {n_})"
                )
        if not kept:
            raise ParameterError("n", "a size that leaves some d an asymptotic grid", n_)
        dims_ = tuple(kept)
    return SweepConfig(
        family, dims_, grid, n_, eps_, seeds_, effort_, design, tuple(notes), check_engine(None)
    )


# -- brackets ------------------------------------------------------------------------


def bracket_job(job: dict[str, Any]) -> dict[str, Any]:
    """Draw the job's matrix and bracket it; returns the job with ``lower``, ``upper`` and costs.

    The point cloud's seed is ``derive_seed(seed, "family:d:n:beta")``, so every (beta,
    seed) is an independent draw and a re-run draws the same matrix.

    Examples
    --------
    >>> from analysis.laws import bracket_job, default_config, make_config
    >>> config = make_config(default_config("spherical"), dims=[3], betas=[1.0, 7.0], n=8,
    ...                      eps=[0.1], seeds=[0], effort="fast")
    >>> rec = bracket_job(config.jobs()[0])
    >>> 1 <= rec["lower"] <= rec["upper"] <= 8, rec["key"] == config.jobs()[0]["key"]
    (True, True)
    """
    rs = derive_seed(job["seed"], f"{job['family']}:{job['d']}:{job['n']}:{float(job['beta'])!r}")
    A = _GENERATORS[job["family"]](job["n"], job["d"], job["beta"], random_state=rs).A
    c0, w0 = time.process_time(), time.perf_counter()
    prof = profile_matrix(A, eps=(job["eps"],), effort=job["effort"], engine=job.get("engine"))
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    lo, hi = prof.bracket(job["eps"])
    return job | {
        "lower": int(lo),
        "upper": int(hi),
        "matrix_seed": rs,
        "cpu_s": cpu,
        "wall_s": wall,
        "methods": prof.stats.get("methods", {}).get(f"{job['eps']:g}"),
    }


def read_checkpoint(path: Path) -> dict[str, dict[str, Any]]:
    """Finished records (JSON lines) by key; a torn last line is ignored (it is redone).

    The records hold brackets, not witnesses, so they cannot be re-verified on load: they
    are trusted as written (delete the file to recompute them).

    Examples
    --------
    >>> from pathlib import Path
    >>> from analysis.laws import default_config, make_config, read_checkpoint, run_sweep
    >>> config = make_config(default_config("spherical"), dims=[3], betas=[1.0, 7.0], n=8,
    ...                      eps=[0.1], seeds=[0], effort="fast")
    >>> _ = run_sweep(config, out="laws", progress=False)
    >>> done = read_checkpoint(Path("laws/brackets.jsonl"))
    >>> sorted(done) == sorted(j["key"] for j in config.jobs())
    True
    """
    return JsonlCheckpoint(path).read()


def run_sweep(
    config: SweepConfig,
    *,
    out: str | os.PathLike,
    workers: int = 1,
    progress: bool = True,
    executor: Executor | None = None,
) -> pd.DataFrame:
    """Bracket every job of ``config``, reusing and extending ``out/brackets.jsonl``.

    Each finished bracket is appended to the checkpoint (flushed and fsynced) as soon as it
    is done, so an interrupted sweep resumes where it stopped; a re-run computes nothing
    already there. Results do not depend on ``workers`` (the engine fixes its thread count
    per matrix and draws nothing random), nor on ``executor`` (any
    :class:`concurrent.futures.Executor`, such as a dask cluster's from
    :func:`analysis.executor.open_executor`, used instead of ``workers``, which must then
    be 1): a job carries only its parameters, and this process appends each record, once.

    Returns
    -------
    DataFrame
        One row per job of ``config`` (cached or new), with ``cached`` marking reuse.

    Examples
    --------
    >>> from analysis.laws import default_config, make_config, run_sweep
    >>> config = make_config(default_config("spherical"), dims=[3], betas=[1.0, 7.0], n=8,
    ...                      eps=[0.1], seeds=[0], effort="fast")
    >>> table = run_sweep(config, out="sweep", progress=False)
    >>> table[["d", "beta", "eps", "cached"]]
       d  beta  eps  cached
    0  3   1.0  0.1   False
    1  3   7.0  0.1   False
    >>> bool((table["lower"] <= table["upper"]).all())
    True
    >>> run_sweep(config, out="sweep", progress=False)["cached"].tolist()  # nothing recomputed
    [True, True]
    """
    workers = check_executor(executor, workers)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ck = out / CHECKPOINT_NAME
    done = read_checkpoint(ck)
    jobs = config.jobs()
    todo = [j for j in jobs if j["key"] not in done]
    cached = {j["key"] for j in jobs} - {j["key"] for j in todo}
    bar = tqdm(
        total=len(jobs),
        initial=len(jobs) - len(todo),
        desc=f"laws {config.family}",
        unit="matrix",
        disable=not progress,
    )
    with contextlib.ExitStack() as stack:
        stack.callback(bar.close)
        append = stack.enter_context(JsonlCheckpoint(ck).appender())

        def keep(rec: dict[str, Any]) -> None:
            if rec["key"] in done:  # a record delivered twice is kept once
                return
            done[rec["key"]] = rec
            append(rec)
            bar.update()

        pool = stack.enter_context(
            task_pool(executor, 1 if len(todo) <= 1 else workers, mp_context=None)
        )
        if pool is None:
            for j in todo:
                keep(bracket_job(j))
        else:
            calls = ((None, (j,)) for j in todo)
            for _, rec in stack.enter_context(contextlib.closing(pool.imap(bracket_job, calls))):
                keep(rec)
    rows = [done[j["key"]] | {"cached": j["key"] in cached} for j in jobs]
    return pd.DataFrame(rows)
