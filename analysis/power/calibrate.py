"""The simulator's residual scales fitted by simulated moments to the real M0 loss.

The structural fit (:func:`~analysis.power.fit.fit_assumptions`) gives simulated studies
an M0 held-out loss 0.3-0.7x the real one (the real residuals are heavy-tailed and shrink
where brackets are wide; a checkpoint's scale collapses when its bracket part exceeds its
residual mean square): docs/results/power.md, section "The fitted and calibrated
simulator". :func:`calibrate_scales` therefore moves
only each checkpoint's residual scale (head, layer and cell parts together; the variance
shares, offsets and widths stay as fitted) until the simulated studies' held-out M0 loss
of that checkpoint matches the reference measured on the same cells
(:func:`~analysis.power.fit.reference_m0_losses`). This is the method of simulated moments
(McFadden 1989; Gourieroux, Monfort and Renault 1993's indirect inference with the loss as
the auxiliary statistic); no library runs it on a custom simulator, so the few lines of the
fixed-point iteration are written here. ``attnrank validate-comparison --fit`` simulates
on other seeds, so its 25% check (:func:`~analysis.power.rates.m0_loss_check`) is out of
sample (Monte Carlo error, non-convergence, a loss the simulator cannot reach), not a
tautology.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from analysis.compare import held_out_predictions, interval_sq_loss
from analysis.power.inputs import PowerAssumptions, StudySizes
from analysis.power.simulate import simulate_study, simulated_comparison
from analysis.power.spec import PowerSpec
from analysis.power.widths import StratumWidths, WidthModel
from analysis.validation import ParameterError, check_int

__all__ = ["Calibration", "calibrate_scales", "simulated_m0_losses"]

#: Seeds of the calibration's simulated studies are children of this entropy and the
#: caller's seed, so they never coincide with validate-comparison's study seeds.
_CALIBRATION_KEY = 0x5CA1E


@dataclass(frozen=True)
class Calibration:
    """What the simulated-moments fit did.

    Attributes
    ----------
    assumptions : PowerAssumptions
        The calibrated assumptions (``residual_sd`` and ``strata_effects`` scales moved).
    reference : dict of str to float
        Per checkpoint (and ``"all"``), the reference M0 held-out loss it was fitted to.
    start, final : dict of str to float
        The simulated M0 held-out loss per checkpoint (and ``"all"``) before the first
        step (the structural fit's) and at the calibrated scales.
    iterations : int
    studies : int
        Simulated studies per iteration (the same seeds every iteration: common random
        numbers, so the loss is a smooth function of the scales).
    converged : bool
        Every checkpoint within ``tolerance`` (relative) of its reference.
    tolerance : float

    Examples
    --------
    Made by :func:`calibrate_scales`; :meth:`to_dict` gives plain JSON types.
    """

    assumptions: PowerAssumptions
    reference: dict[str, float]
    start: dict[str, float]
    final: dict[str, float]
    iterations: int
    studies: int
    converged: bool
    tolerance: float

    def to_dict(self) -> dict:
        return {
            "method": "simulated moments: each checkpoint's residual scale moved until the "
            "simulated held-out M0 loss matches its reference (fixed point, common random "
            "numbers)",
            "reference": dict(self.reference),
            "simulated_start": dict(self.start),
            "simulated_final": dict(self.final),
            "residual_sd": self.assumptions.residual_sd,
            "strata_effects": [list(r) for r in self.assumptions.strata_effects],
            "iterations": self.iterations,
            "studies": self.studies,
            "converged": self.converged,
            "tolerance": self.tolerance,
        }

    def summary(self) -> str:
        lines = [
            f"scales calibrated by simulated moments ({self.iterations} iterations of "
            f"{self.studies} studies, {'converged' if self.converged else 'NOT converged'} "
            f"within {self.tolerance:.0%}): residual SD {self.assumptions.residual_sd:.3f}"
        ]
        for k in self.reference:
            lines.append(
                f"  {k}: reference M0 loss {self.reference[k]:.4g}; simulated "
                f"{self.start.get(k, float('nan')):.4g} before, {self.final.get(k, float('nan')):.4g} after"
            )
        return "\n".join(lines)


def simulated_m0_losses(
    sizes: StudySizes,
    widths: pd.DataFrame | WidthModel | StratumWidths,
    assumptions: PowerAssumptions,
    seeds: list[np.random.SeedSequence],
    *,
    pair: tuple[str, str] | None = None,
) -> dict[str, float]:
    """Mean held-out loss of the base model per checkpoint (and ``"all"``) over studies
    simulated at the simple null from ``seeds`` (cell-weighted, as the reference).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.datasets import example_sizes, example_widths
    >>> from analysis.power.calibrate import simulated_m0_losses
    >>> from analysis.power.inputs import PowerAssumptions
    >>> seeds = np.random.SeedSequence(0).spawn(2)
    >>> small = simulated_m0_losses(example_sizes(), example_widths(),
    ...                             PowerAssumptions(residual_sd=0.2), seeds)
    >>> large = simulated_m0_losses(example_sizes(), example_widths(),
    ...                             PowerAssumptions(residual_sd=0.8), seeds)
    >>> sorted(small), bool(large["all"] > small["all"])
    (['all'], True)
    """
    base = (pair or sizes.confirmatory)[0]
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for seed in seeds:
        data_seed, boot_seed = (
            np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, i)) for i in (0, 1)
        )
        table = simulate_study(
            sizes,
            widths,
            share=0.0,
            assumptions=assumptions,
            random_state=np.random.default_rng(data_seed),
        )
        small = replace(sizes, n_boot=min(sizes.n_boot, 99), refit_replicates=0)
        res = simulated_comparison(small, table, random_state=np.random.default_rng(boot_seed))
        pred = held_out_predictions(res, table)
        pred = pred[pred["model"] == base]
        loss = interval_sq_loss(
            pred["y_hat"].to_numpy(float),
            pred["y_lower"].to_numpy(float),
            pred["y_upper"].to_numpy(float),
        )
        for key, sel in [("all", np.ones(len(pred), bool))] + [
            (str(c), (pred["checkpoint"] == c).to_numpy()) for c in pred["checkpoint"].unique()
        ]:
            sums[key] = sums.get(key, 0.0) + float(loss[sel].sum())
            counts[key] = counts.get(key, 0) + int(sel.sum())
    return {k: sums[k] / counts[k] for k in sums if counts[k]}


def calibrate_scales(
    widths: pd.DataFrame | WidthModel | StratumWidths,
    spec: PowerSpec,
    reference: Mapping[str, float],
    *,
    max_iterations: int = 8,
    tolerance: float = 0.05,
    progress: Callable[[str], None] | None = None,
) -> Calibration:
    """Fit each checkpoint's residual scale so the simulated held-out M0 loss matches the
    reference.

    Parameters
    ----------
    widths : DataFrame, WidthModel or StratumWidths
    spec : PowerSpec
        The design's ``sizes`` (the studies are simulated as validate-comparison simulates
        them), the structural fit's ``assumptions``
        (:meth:`~analysis.power.result.FittedAssumptions.assumptions`), ``simulations``
        studies per iteration (the same seeds each iteration) and ``random_state`` (an
        int; None is 0).
    reference : mapping of str to float
        The reference M0 held-out loss per checkpoint stratum of ``sizes`` (a single
        stratum may be given as ``"all"``).
    max_iterations : int, keyword-only
    tolerance : float, keyword-only
        Relative distance to every reference at which the iteration stops.
    progress : callable, keyword-only
        Called with one line per iteration.

    Returns
    -------
    Calibration

    Notes
    -----
    With ``s_c`` the residual SD of checkpoint c (``residual_sd`` times its scale), the
    simulated loss ``L_c(s)`` grows with ``s_c`` (at about ``s_c^2`` for narrow
    brackets, faster where brackets absorb small errors). Each step sets
    ``s_c <- s_c (R_c / L_c)^(1/2)`` (the fixed point of ``L proportional to s^2``),
    then renormalizes so that ``residual_sd`` is the cell-weighted root mean square of the
    ``s_c`` and the scales average 1. Checkpoints share the base model's fit, so each
    ``L_c`` also depends on the others' scales a little; the iteration handles that. The
    same ``studies`` seeds are used at every step (common random numbers), so the
    stopping rule is not fooled by Monte Carlo noise between steps; the check in
    validate-comparison uses other seeds.

    Examples
    --------
    Calibrating a one-stratum design back to a loss simulated at a known residual SD:

    >>> import numpy as np
    >>> from analysis.datasets import example_sizes, example_widths
    >>> from analysis.power.calibrate import calibrate_scales, simulated_m0_losses
    >>> from analysis.power.inputs import PowerAssumptions
    >>> sizes, widths = example_sizes(), example_widths()
    >>> target = simulated_m0_losses(sizes, widths, PowerAssumptions(residual_sd=0.5),
    ...                              np.random.SeedSequence(9).spawn(4))
    >>> from analysis.power.spec import PowerSpec
    >>> spec = PowerSpec(simulations=4, sizes=sizes,
    ...                  assumptions=PowerAssumptions(residual_sd=0.1), random_state=1)
    >>> cal = calibrate_scales(widths, spec, {"all": target["all"]})
    >>> cal.converged, bool(0.3 < cal.assumptions.residual_sd < 0.8)
    (True, True)
    """
    if not isinstance(spec, PowerSpec):
        raise ParameterError("spec", "a PowerSpec", type(spec).__name__)
    sizes, assumptions, studies = spec.sizes, spec.assumptions, spec.simulations
    random_state = check_int("random_state", 0 if spec.random_state is None else spec.random_state)
    max_iterations = check_int("max_iterations", max_iterations, minimum=1)
    if not (0 < tolerance < 1):
        raise ParameterError("tolerance", "a relative tolerance in (0, 1)", tolerance)
    labels = [s[0] for s in sizes.strata]
    cells = {s[0]: s[1] for s in sizes.strata}  # heads per stratum: cells are proportional
    ref = {str(k): float(v) for k, v in reference.items()}
    if len(labels) == 1 and labels[0] not in ref and "all" in ref:
        ref[labels[0]] = ref["all"]
    missing = [s for s in labels if s not in ref or not (np.isfinite(ref[s]) and ref[s] > 0)]
    if missing:
        raise ParameterError(
            "reference", f"a positive reference loss for every stratum {labels}", missing
        )
    sd = {
        s: assumptions.residual_sd
        * (assumptions.stratum_effect(s)[1] if assumptions.strata_effects else 1.0)
        for s in labels
    }
    offsets = {
        s: assumptions.stratum_effect(s)[0] if assumptions.strata_effects else 0.0 for s in labels
    }
    seeds = list(np.random.SeedSequence([_CALIBRATION_KEY, int(random_state)]).spawn(studies))

    def build(sd_of: dict[str, float]) -> PowerAssumptions:
        w = np.array([cells[s] for s in labels], float)
        v = np.array([sd_of[s] for s in labels]) ** 2
        pooled = float(np.sqrt(np.average(v, weights=w)))
        effects = tuple((s, offsets[s], sd_of[s] / pooled) for s in labels)
        return replace(
            assumptions,
            residual_sd=pooled,
            strata_effects=effects if len(labels) > 1 or assumptions.strata_effects else (),
        )

    current = build(sd)
    sim = simulated_m0_losses(sizes, widths, current, seeds)
    start = dict(sim)
    it = 0
    converged = False
    for it in range(1, max_iterations + 1):
        worst = max(abs(sim.get(s, np.nan) - ref[s]) / ref[s] for s in labels)
        if progress is not None:
            progress(
                f"calibration step {it}: residual SD {current.residual_sd:.4g}, worst "
                f"checkpoint {worst:.1%} from its reference"
            )
        if worst <= tolerance:
            converged = True
            it -= 1
            break
        sd = {s: sd[s] * float(np.sqrt(ref[s] / max(sim[s], 1e-300))) for s in labels}
        current = build(sd)
        sim = simulated_m0_losses(sizes, widths, current, seeds)
    else:
        converged = max(abs(sim[s] - ref[s]) / ref[s] for s in labels) <= tolerance
    if "all" not in ref:
        w = np.array([cells[s] for s in labels], float)
        ref["all"] = float(np.average([ref[s] for s in labels], weights=w))
    return Calibration(
        assumptions=current,
        reference={k: ref[k] for k in ["all", *[s for s in labels if s != "all"]] if k in ref},
        start=start,
        final=dict(sim),
        iterations=it,
        studies=studies,
        converged=bool(converged),
        tolerance=float(tolerance),
    )
