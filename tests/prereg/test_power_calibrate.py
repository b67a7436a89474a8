"""The simulated-moments fit of the residual scales to the reference M0 loss."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.datasets import example_widths
from analysis.power import PowerAssumptions, PowerSpec, StudySizes
from analysis.power.calibrate import calibrate_scales, simulated_m0_losses
from analysis.validation import ParameterError

SIZES = StudySizes(
    n_heads=80,
    n_held_out=20,
    lengths=(64, 128),
    temperatures=(1.0,),
    eps=(0.1,),
    inputs_per_length=2,
    strata=(("org/a", 40, 10), ("org/b", 40, 10)),
    features=(("baseline", 5), ("native", 1), ("intrinsic", 1)),
    n_boot=99,
)
TRUTH = PowerAssumptions(
    residual_sd=0.4, icc=0.5, strata_effects=(("org/a", 0.0, 1.3), ("org/b", 0.0, 0.6))
)


@pytest.fixture(scope="module")
def target():
    # the "real" losses: the truth's studies on seeds the calibration never sees
    return simulated_m0_losses(SIZES, example_widths(), TRUTH, np.random.SeedSequence(77).spawn(6))


def test_calibration_recovers_each_checkpoints_scale(target):
    start = PowerAssumptions(residual_sd=0.1, icc=0.5)  # one scale for both, far too small
    spec = PowerSpec(simulations=6, sizes=SIZES, assumptions=start, random_state=3)
    cal = calibrate_scales(example_widths(), spec, {k: v for k, v in target.items() if k != "all"})
    assert cal.converged
    scales = dict((s, sc) for s, _, sc in cal.assumptions.strata_effects)
    # the truth's ratio 1.3 / 0.6 = 2.17; Monte Carlo error of 6 + 6 studies of 10 heads
    assert 1.7 < scales["org/a"] / scales["org/b"] < 2.7
    assert abs(cal.assumptions.residual_sd - 0.4 * np.sqrt((1.3**2 + 0.6**2) / 2)) < 0.08
    for s in ("org/a", "org/b"):
        assert abs(cal.final[s] - target[s]) / target[s] <= cal.tolerance
        assert cal.start[s] < 0.5 * target[s]  # it did have to move
    d = cal.to_dict()
    assert d["converged"] and set(d["reference"]) == {"all", "org/a", "org/b"}


def test_the_calibrated_simulator_reproduces_the_loss_on_other_seeds(target):
    start = PowerAssumptions(residual_sd=1.0, icc=0.5)
    spec = PowerSpec(simulations=6, sizes=SIZES, assumptions=start, random_state=5)
    cal = calibrate_scales(example_widths(), spec, {k: v for k, v in target.items() if k != "all"})
    fresh = simulated_m0_losses(
        SIZES, example_widths(), cal.assumptions, np.random.SeedSequence(123).spawn(6)
    )
    assert abs(fresh["all"] - target["all"]) / target["all"] < 0.25


def test_calibration_names_a_missing_reference():
    with pytest.raises(ParameterError, match="reference"):
        calibrate_scales(example_widths(), PowerSpec(6, SIZES), {"org/a": 0.01})
    with pytest.raises(ParameterError, match="tolerance"):
        calibrate_scales(
            example_widths(), PowerSpec(6, SIZES), {"org/a": 0.01, "org/b": 0.01}, tolerance=0
        )
