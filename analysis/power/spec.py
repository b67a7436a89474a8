"""What a power simulation simulates: one frozen :class:`PowerSpec` (where the studies run,
``workers`` / ``executor``, and progress stay keyword arguments: results depend on neither).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from analysis.power.inputs import PowerAssumptions, StudySizes
from analysis.validation import ParameterError, check_int

__all__ = ["PowerSpec"]


@dataclass(frozen=True)
class PowerSpec:
    """The simulated design, its assumptions, the number of studies and the seed.

    Attributes
    ----------
    simulations : int
        Simulated studies per scenario and share (per calibration step in
        :func:`~analysis.power.calibrate.calibrate_scales`).
    sizes : StudySizes
        From :func:`~analysis.power.inputs.sizes_from_design` (default the built-in
        MiniLM-like sizes).
    assumptions : PowerAssumptions
    random_state : int, Generator or None
        The seed every simulated study's seed is spawned from (validate-comparison and the
        calibration need an int or None).
    hypotheses : tuple of str or None
        Hypothesis ids to validate (default the confirmatory one).
    mde_target : float
        Power at which the minimum detectable effect is read (0.8).
    mde_steps : int
        Bisection steps of the MDE search (5).
    calibration_iterations : int
        Most regula falsi steps of the boundary calibration (6).
    placement_simulations : int or None
        Method 3 only (:func:`~analysis.power.decisions.decision_powers`): calibration
        studies per share when a target effect is placed (None:
        :data:`~analysis.power.decisions.PLACEMENT_FACTOR` times ``simulations``); method 2
        never reads it.

    Examples
    --------
    >>> from analysis.power.spec import PowerSpec
    >>> spec = PowerSpec(simulations=4, hypotheses=["H1"], random_state=0)
    >>> spec.hypotheses, spec.mde_target, spec.sizes.n_heads > 0
    (('H1',), 0.8, True)
    >>> PowerSpec(simulations=0)
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: ...simulations...
    """

    simulations: int
    sizes: StudySizes = StudySizes()
    assumptions: PowerAssumptions = PowerAssumptions()
    random_state: int | np.random.Generator | None = None
    hypotheses: Sequence[str] | None = None
    mde_target: float = 0.8
    mde_steps: int = 5
    calibration_iterations: int = 6
    placement_simulations: int | None = None

    def __post_init__(self) -> None:
        check_int("simulations", self.simulations, minimum=1)
        if not isinstance(self.sizes, StudySizes):
            raise ParameterError("sizes", "a StudySizes", type(self.sizes).__name__)
        if not isinstance(self.assumptions, PowerAssumptions):
            raise ParameterError(
                "assumptions", "a PowerAssumptions", type(self.assumptions).__name__
            )
        if not (isinstance(self.mde_target, float) and 0 < self.mde_target < 1):
            raise ParameterError("mde_target", "a number in (0, 1)", self.mde_target)
        check_int("mde_steps", self.mde_steps, minimum=0)
        check_int("calibration_iterations", self.calibration_iterations, minimum=0)
        if self.placement_simulations is not None:
            check_int("placement_simulations", self.placement_simulations, minimum=2)
        if self.hypotheses is not None:
            object.__setattr__(self, "hypotheses", tuple(self.hypotheses))
