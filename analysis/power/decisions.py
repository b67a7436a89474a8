"""Power of the decisions a method-3 design makes, read where the true effect is placed.

Under method 3 a comparison row is decided by :func:`analysis.compare.decisions.decide`:
"adds information" (superiority), "harms", "equivalent within SESOI" (two one-sided
tests at -SESOI and +SESOI), "non-superior only" or "inconclusive". :func:`decision_powers`
simulates studies of a design whose true held-out effect (loss units: the mean held-out
loss difference of base and rich models) is placed **directly** at 0, at +SESOI and at
-SESOI (and at half and twice the SESOI, a sensitivity): the effect share that gives each
target mean effect is found by root-finding on one set of calibration seeds (A; common
random numbers make the mean effect a deterministic function of the share), and the
decisions are counted on fresh seeds (B) at that share, never interpolated. A target below
the cost of estimation (typically -SESOI) is reached with ``held_out_signal = 0``: the
signal the training heads carry does not carry over to the held-out heads, so the rich
model harms. The model and its scenarios (heavy tails, covariate shift:
:mod:`analysis.power.tails`): docs/method.md, section "Validation of the test".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor

import numpy as np
import pandas as pd

from analysis.compare import (
    FIT_OK,
    ClusterBootstrap,
    held_out_predictions,
    holm,
    interval_sq_loss,
)
from analysis.compare.decisions import DECISIONS, decide
from analysis.power.error_rates import _Curve, share_at_effect
from analysis.power.inputs import PowerAssumptions, StudySizes
from analysis.power.rates import clopper_pearson
from analysis.power.simulate import StudyRunner, simulated_run
from analysis.power.spec import PowerSpec
from analysis.power.widths import StratumWidths, WidthModel, _width_model
from analysis.validation import ParameterError, check_int

__all__ = [
    "DECISION_TARGETS",
    "PLACEMENT_FACTOR",
    "SESOI_FACTORS",
    "decided_study",
    "decision_powers",
]

#: Columns of a decided study holding the decision at the SESOI times the factor.
SESOI_FACTORS: tuple[tuple[str, float], ...] = (
    ("decision", 1.0),
    ("decision_half", 0.5),
    ("decision_twice", 2.0),
)
#: Calibration studies per share when an effect is placed, per counted study (a
#: :class:`~analysis.power.spec.PowerSpec` without ``placement_simulations``).
PLACEMENT_FACTOR = 4
#: Where the true effect is placed, as multiples of the SESOI.
DECISION_TARGETS: tuple[tuple[str, float], ...] = (
    ("zero", 0.0),
    ("plus_sesoi", 1.0),
    ("minus_sesoi", -1.0),
    ("half_sesoi", 0.5),
    ("twice_sesoi", 2.0),
)


def held_out_losses(result, table: pd.DataFrame) -> dict[str, np.ndarray]:
    """Each model's per-cell held-out ``interval_sq_loss`` (cells in table order)."""
    pred = held_out_predictions(result, table)
    return {
        str(m): interval_sq_loss(
            g["y_hat"].to_numpy(float), g["y_lower"].to_numpy(float), g["y_upper"].to_numpy(float)
        )
        for m, g in pred.groupby("model", sort=False)
    }


def decided_study(
    sizes: StudySizes,
    widths: WidthModel | StratumWidths,
    share: float,
    assumptions: PowerAssumptions,
    pair: tuple[str, str],
    seed: np.random.SeedSequence,
    sesoi: tuple[tuple[tuple[str, str], float], ...],
) -> dict:
    """Simulate one study, run the comparison and decide the pair as method 3 does.

    Parameters
    ----------
    sizes : StudySizes
    widths : WidthModel or StratumWidths
    share : float
        Share of the variance M0 leaves that the pair's signal block explains.
    assumptions : PowerAssumptions
    pair : (base, rich)
    seed : numpy.random.SeedSequence
        As :func:`~analysis.power.simulate.one_study` (same data and bootstrap seeds).
    sesoi : tuple of ((base, rich), float)
        The SESOI (loss units) of every family pair that has one.

    Returns
    -------
    dict
        ``effect``, ``ci_low``, ``ci_high``, ``p_holm``, ``base_value`` of the pair's
        primary-metric row and, per :data:`SESOI_FACTORS`, the decision at that multiple
        of every SESOI.

    Notes
    -----
    The one-sided p's at +SESOI (non-superiority) and at -SESOI are read from the
    comparison's own bootstrap replicates: the held-out losses resampled with a generator
    from the same seed, whose first draws are the comparison's (the p at -SESOI is the
    superiority p of the effect plus SESOI). The TOST p is their maximum; both are
    Holm-adjusted over the family pairs with a SESOI (a failed fit counting p = 1).
    """
    table, res, boot_seed = simulated_run(sizes, widths, share, assumptions, pair, seed)
    f = res.frame
    f = f[f.metric == sizes.primary_metric].set_index("pair")
    row = f.loc[f"{pair[0]}<{pair[1]}"]
    held = table["held_out"].to_numpy(bool)
    unit = "cluster" if sizes.resampling_unit == "head" else sizes.resampling_unit
    units = table[unit].astype(str).to_numpy()[held]
    strata = table["stratum"].astype(str).to_numpy()[held]
    loss = held_out_losses(res, table)

    def boot() -> ClusterBootstrap:
        return ClusterBootstrap(
            n_boot=sizes.n_boot,
            ci_level=sizes.ci_level,
            bootstrap=sizes.bootstrap,
            random_state=np.random.default_rng(boot_seed),
        )

    out = {
        "effect": float(row.effect),
        "ci_low": float(row.ci_low),
        "ci_high": float(row.ci_high),
        "p_holm": float(row.p_holm),
        "base_value": float(row.base_value),
    }
    for column, factor in SESOI_FACTORS:
        upper, tost = [], []
        for (b, r), delta in sesoi:
            d = factor * delta
            ok = f.loc[f"{b}<{r}", "status"] == FIT_OK
            p_up = boot().equivalence(loss[b], loss[r], units, d, strata=strata)
            p_low = boot().effect(loss[b] + d, loss[r], units, strata=strata)[3]
            upper.append(p_up if ok else 1.0)
            tost.append(max(p_up, p_low) if ok else 1.0)
        tost_h = non_sup_h = None
        names = [f"{b}<{r}" for (b, r), _ in sesoi]
        if row.name in names:
            i = names.index(row.name)
            tost_h = float(holm(tost)[i])
            non_sup_h = float(holm(upper)[i])
        out[column] = decide(
            ci_low=out["ci_low"],
            ci_high=out["ci_high"],
            p_holm=out["p_holm"] if row.status == FIT_OK else 1.0,
            tost_p_holm=tost_h,
            non_superiority_p_holm=non_sup_h,
            alpha=sizes.alpha,
        )
    return out


def _rate(k: int, n: int) -> dict:
    lo, hi = clopper_pearson(int(k), int(n))
    return {"rate": k / n, "k": int(k), "n": int(n), "ci_low": lo, "ci_high": hi}


def _point(
    name: str,
    target: float,
    share: float,
    kappa: float,
    m_a: float,
    rows,
    *,
    m_a_se: float = float("nan"),
) -> dict:
    """One placed effect: where, how it was reached (the calibration seeds' mean effect
    ``m_a`` and its SE), the realised mean effect of the counted studies and every
    decision's rate."""
    out = {
        "point": name,
        "target_effect": target,
        "share": share,
        "held_out_signal": kappa,
        "calibration_mean_effect": m_a,
        "calibration_mean_effect_se": m_a_se,
    }
    if rows is None:
        return {**out, "reached": False}
    eff = rows["effect"].to_numpy(float)
    n = len(rows)
    out.update(
        reached=True,
        mean_effect=float(eff.mean()),
        mean_effect_se=float(eff.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan"),
        sd_effect=float(eff.std(ddof=1)) if n > 1 else float("nan"),
        mean_base_value=float(rows["base_value"].mean()),
    )
    for column, _ in SESOI_FACTORS:
        out[column] = {w: _rate(int((rows[column] == w).sum()), n) for w in DECISIONS}
    return out


def _summaries(points: Mapping[str, dict]) -> dict:
    """Power, sizes and the half / twice sensitivity read from the placed points."""

    def rate(point: str, column: str, word: str) -> dict | None:
        p = points.get(point)
        return p[column][word] if p and p.get("reached") else None

    adds, eq = DECISIONS[0], DECISIONS[2]
    return {
        "power": {
            "superiority_at_sesoi": rate("plus_sesoi", "decision", adds),
            "tost_at_zero": rate("zero", "decision", eq),
        },
        "size": {
            "adds_information_at_zero": rate("zero", "decision", adds),
            "equivalent_at_plus_sesoi": rate("plus_sesoi", "decision", eq),
            "equivalent_at_minus_sesoi": rate("minus_sesoi", "decision", eq),
        },
        "sensitivity": {
            "superiority_at_half_sesoi": rate("half_sesoi", "decision", adds),
            "superiority_at_twice_sesoi": rate("twice_sesoi", "decision", adds),
            "tost_at_zero_half_sesoi": rate("zero", "decision_half", eq),
            "tost_at_zero_twice_sesoi": rate("zero", "decision_twice", eq),
            "equivalent_at_plus_half_sesoi": rate("half_sesoi", "decision_half", eq),
            "equivalent_at_plus_twice_sesoi": rate("twice_sesoi", "decision_twice", eq),
        },
    }


def decision_powers(
    widths: pd.DataFrame | WidthModel | StratumWidths,
    spec: PowerSpec,
    sesoi: Mapping[str, float],
    *,
    scenarios: Mapping[str, Mapping[str, float | None]] | None = None,
    targets: Sequence[str] | None = None,
    workers: int = 1,
    executor: Executor | None = None,
    progress: Callable[[int, int | None], None] | None = None,
) -> dict:
    """Power of each method-3 decision and its sizes, per hypothesis and scenario.

    Parameters
    ----------
    widths : DataFrame, WidthModel or StratumWidths
    spec : PowerSpec
        ``simulations`` (>= 2) studies counted per placed effect, ``sizes``,
        ``assumptions``, ``hypotheses`` (default the confirmatory one),
        ``calibration_iterations``, ``placement_simulations`` (calibration studies per
        share; default :data:`PLACEMENT_FACTOR` times ``simulations``) and
        ``random_state`` (an int or None).
    sesoi : mapping
        Pair (``"M0<M1"``) -> SESOI in held-out loss units (> 0); a hypothesis whose pair
        has none is listed in ``skipped``.
    scenarios : mapping, keyword-only
        Scenario name -> replacements of ``spec.assumptions`` (``tail_df``,
        ``covariate_shift``); default ``{"normal": {}}``.
    targets : sequence of str, keyword-only
        Names of :data:`DECISION_TARGETS` to place (default all).
    workers, executor, progress : keyword-only
        As :func:`~analysis.power.error_rates.validate_comparison`.

    Returns
    -------
    dict
        ``{"hypotheses": [...], "skipped": {...}, "simulations": n,
        "placement_simulations": n_a, "targets": [...]}``; per hypothesis
        ``hypothesis``, ``pair``, ``sesoi`` and ``scenarios``: per scenario its
        ``assumptions`` (the replacements), ``points`` (per target: ``target_effect``,
        ``share``, ``calibration_mean_effect`` and its SE on the calibration seeds, the
        realised ``mean_effect`` of the counted studies with ``mean_effect_se``, the
        effect's SD, every decision's rate with its Clopper-Pearson 95% interval at the
        SESOI and at half and twice it), ``power`` (superiority at +SESOI, TOST at 0),
        ``size`` ("adds information" at 0, "equivalent" at +SESOI and at -SESOI) and
        ``sensitivity``.

    Notes
    -----
    **Placement.** A target effect is placed at the share where the mean effect of the
    ``n_a`` calibration studies (seeds A, the same at every share: common random numbers,
    so the mean is a deterministic function of the share and regula falsi finds its root
    to within a quarter of its SE) equals the target. The root is exact for those seeds,
    but their mean is an estimate: the true expected effect at the placed share misses
    the target by about ``sd / sqrt(n_a)`` (``sd`` the SD of one study's effect), and the
    realised mean of the ``n`` counted studies (seeds B) adds ``sd / sqrt(n)``. With
    ``n_a = n`` (the placement before ``placement_simulations``) a handful of studies per
    share let the "zero" point sit well above or below 0, and the size at 0 follows it.
    Calibration studies are therefore ``PLACEMENT_FACTOR = 4`` times as many as the counted
    ones by default (the placement error halves; calibration studies need no SESOI tests
    and the first ``n`` of them are the old seeds A), and every point records the
    realised mean effect and its SE beside the target, which the report prints. No
    analytic placement is used: the injected coefficient is ``sqrt(share V)`` while the
    residuals shrink by ``sqrt(1 - share)``, the loss is an interval loss with widths drawn
    given the outcome, and on the example sizes the study-to-study spread of the effect's
    increase from share 0 is 0.7-1.0 times that of the effect itself, so neither a linear
    formula nor a control variate at share 0 removes the calibration noise; more
    calibration studies do.

    Examples
    --------
    Two studies per share, the true effect at 0 and at +SESOI only (far too few for use):

    >>> from analysis.datasets import example_sizes, example_widths
    >>> from analysis.power.decisions import decision_powers
    >>> from analysis.power.spec import PowerSpec
    >>> spec = PowerSpec(simulations=2, sizes=example_sizes(), random_state=0,
    ...                  calibration_iterations=1)
    >>> out = decision_powers(example_widths(), spec, {"M0<M1": 0.05},
    ...                       targets=("zero", "plus_sesoi"))
    >>> normal = out["hypotheses"][0]["scenarios"]["normal"]
    >>> sorted(normal["power"]), normal["power"]["superiority_at_sesoi"]["n"]
    (['superiority_at_sesoi', 'tost_at_zero'], 2)
    """
    if not isinstance(spec, PowerSpec):
        raise ParameterError("spec", "a PowerSpec", type(spec).__name__)
    simulations = check_int("simulations", spec.simulations, minimum=2)
    n_place = spec.placement_simulations or PLACEMENT_FACTOR * simulations
    sizes, base_assumptions = spec.sizes, spec.assumptions
    seed = spec.random_state
    if seed is not None:
        seed = check_int("random_state", seed, minimum=0)
    for pair, value in sesoi.items():
        ok = isinstance(value, (int, float)) and np.isfinite(value) and value > 0
        if not ok:
            raise ParameterError(f"sesoi[{pair}]", "a finite number > 0 (loss units)", value)
    known = dict(DECISION_TARGETS)
    targets = tuple(targets or known)
    for t in targets:
        if t not in known:
            raise ParameterError("targets", "names among " + ", ".join(known), t)
    scenarios = dict(scenarios or {"normal": {}})
    variants = {}
    for name, repl in scenarios.items():
        try:
            variants[name] = dataclasses.replace(base_assumptions, **dict(repl))
        except TypeError as exc:
            raise ParameterError(f"scenarios[{name}]", "PowerAssumptions fields", repl) from exc
    wmodel = _width_model(sizes, widths, base_assumptions)
    by_id = {h[0]: h for h in sizes.hypotheses}
    hyps = spec.hypotheses
    if hyps is None:
        conf = [h for h in sizes.hypotheses if tuple(h[2:]) == tuple(sizes.confirmatory)]
        hyps = [(conf or list(sizes.hypotheses))[0][0]]
    family = [tuple(p) for p in sizes.family]
    sesoi_family = tuple(
        ((b, r), float(sesoi[f"{b}<{r}"])) for b, r in family if f"{b}<{r}" in sesoi
    )
    done = [0]

    def step(k: int) -> None:
        done[0] += k
        if progress is not None:
            progress(done[0], None)

    out: dict = {
        "simulations": simulations,
        "placement_simulations": n_place,
        "targets": list(targets),
        "hypotheses": [],
    }
    skipped: dict[str, str] = {}
    index = {h[0]: i for i, h in enumerate(sizes.hypotheses)}
    with StudyRunner(workers, executor=executor) as runner:
        for hid in hyps:
            if hid not in by_id:
                raise ParameterError("hypotheses", "ids among " + ", ".join(by_id), hid)
            _, kind, b, r = by_id[hid]
            name = f"{b}<{r}"
            if (b, r) not in family:
                skipped[hid] = "outside the Holm family (a sensitivity pair)"
                continue
            if name not in sesoi:
                skipped[hid] = "no SESOI: only the superiority power is simulated"
                continue
            delta = float(sesoi[name])
            root = np.random.SeedSequence([7, 0 if seed is None else seed, index[hid]])
            root_a, root_b = root.spawn(2)  # A's first `simulations` seeds: as before
            seeds_a, seeds_b = root_a.spawn(n_place), root_b.spawn(simulations)
            record = {"hypothesis": hid, "kind": kind, "pair": name, "sesoi": delta}
            record["scenarios"] = {}
            for scen, assumptions in variants.items():
                record["scenarios"][scen] = _scenario(
                    runner,
                    step,
                    (sizes, wmodel, assumptions, (b, r), sesoi_family),
                    (seeds_a, seeds_b),
                    delta,
                    targets,
                    spec.calibration_iterations,
                    dict(scenarios[scen]),
                )
            out["hypotheses"].append(record)
    out["skipped"] = skipped
    return out


def _scenario(runner, step, what, seeds, delta, targets, iterations, repl) -> dict:
    """Calibrate each target's share on seeds A and count the decisions on seeds B."""
    from analysis.power.simulate import one_study

    sizes, wmodel, assumptions, pair, sesoi_family = what
    seeds_a, seeds_b = seeds
    harm = dataclasses.replace(assumptions, held_out_signal=0.0)

    def calib(a: PowerAssumptions) -> Callable:
        def run(share: float, seeds) -> pd.DataFrame:
            tasks = [(one_study, sizes, wmodel, share, a, pair, s) for s in seeds]
            return pd.DataFrame(runner.run(tasks, step))

        return run

    up = _Curve(calib(assumptions), seeds_a, sizes.alpha)
    down = _Curve(calib(harm), seeds_a, sizes.alpha)
    m0 = up(0.0)
    down.rows[0.0] = up.rows[0.0]  # share 0: no signal, the same studies
    tol = 0.25 * m0.mean_effect_se if np.isfinite(m0.mean_effect_se) else 0.0
    points = {}
    for name, factor in DECISION_TARGETS:
        if name not in targets:
            continue
        target = factor * delta
        if target >= m0.mean_effect:
            curve, a, kappa, sign = up, assumptions, 1.0, 1
        else:
            curve, a, kappa, sign = down, harm, 0.0, -1
        share, m_a = share_at_effect(curve, target, sign=sign, tol=tol, max_iter=iterations)
        rows = None
        if np.isfinite(share):
            tasks = [
                (decided_study, sizes, wmodel, share, a, pair, s, sesoi_family) for s in seeds_b
            ]
            rows = pd.DataFrame(runner.run(tasks, step))
        m_a_se = curve(share).mean_effect_se if rows is not None else float("nan")
        points[name] = _point(name, target, share, kappa, m_a, rows, m_a_se=m_a_se)
    return {
        "assumptions": repl,
        "simulated_m0_loss": m0.mean_base_value,
        "points": list(points.values()),
        **_summaries(points),
    }
