"""The power simulator fitted to a study's data: read the cells, fit, calibrate.

:mod:`analysis.power.fit` fits the simulator's structure to a table of cells and
:mod:`analysis.power.calibrate` fits each checkpoint's residual scale to its
reference M0 loss; the power package reads no store, so this module reads the cells they
are fitted to -- the study's **training** heads (its comparison table less the held-out heads) or a
**pilot** (the same design run on another input seed, under its own root) -- and runs
both. ``attnrank validate-comparison --fit`` and the study's power stage (``attnrank run
--power-simulations N`` on a design whose ``[power] fit`` is not ``"none"``) call
:func:`fitted_assumptions`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from analysis.power.fit import TrainingCells
from analysis.power.inputs import PowerAssumptions, StudySizes
from analysis.validation import ParameterError, check_int

__all__ = ["FitOutcome", "FitSource", "fitted_assumptions", "study_training_table", "widths_digest"]


def study_training_table(design_path: Path, *, root: Path | None = None) -> TrainingCells:
    """A study's training cells (its comparison table less the held-out heads).

    Returns
    -------
    TrainingCells
        The training table with the study's models, confirmatory pair, log columns,
        covariate and comparison settings, inference seed and input seed (from its design
        and registry).

    Raises
    ------
    FileNotFoundError
        When the study has no store with descriptors.
    """
    from analysis.prereg.sealing import SealedCells
    from analysis.study.comparison import stored_comparison_table

    table, log_cols, study = stored_comparison_table(design_path, root=root)
    train = SealedCells(table, study.paths.design, lock=study.lock).training()
    design = study.design
    conf = [
        tuple(h["pair"])
        for h in design.data.get("hypotheses", [])
        if h.get("kind") == "confirmatory"
    ]
    return TrainingCells(
        train.drop(columns="held_out", errors="ignore"),
        dict(design.models),
        pair=conf[0] if conf else tuple(design.family[0]),
        log_columns=list(log_cols),
        covariate_kwargs=study.registry.covariate_kwargs(train.columns),
        comparison_kwargs=design.comparison_kwargs(),
        random_state=int(design.data["inference"]["seed"]),
        input_seed=int(design.data["sampling"]["inputs"]["seed"]),
    )


@dataclass(frozen=True)
class FitSource:
    """What the simulator is fitted to: a design's ``[power]`` section and the flags.

    Attributes
    ----------
    fit : {"none", "training", "pilot"}
        ``none``: nothing is fitted; with ``reference_only`` the reference M0 loss is still
        measured on the training heads when the study has a store.
    pilot_root : Path or None
        For ``pilot``: the pilot study's root (its ``preregistration/`` holds a design of
        the same name on another input seed).
    pilot_design : Path or None
        For ``pilot``, instead of ``pilot_root``: the pilot's design file (its study root
        is the parent of its folder).
    pilot_input_seed : int or None
        For ``pilot``: the input seed the design declares for its pilot (checked).
    calibration_studies : int
        Studies per step of :func:`~analysis.power.calibrate.calibrate_scales` (0: keep
        the structural fit's scales).
    reference_only : bool
        With ``fit = "none"``, still measure the reference M0 loss.
    unpiloted : {None, "pooled"}
        A design's ``[power] unpiloted``: ``"pooled"`` fits a checkpoint of the design
        that the fitted cells do not hold (all its heads in the study, none left for the
        pilot) by the pooled fit (:func:`analysis.power.fit.fit_assumptions`'s
        ``pooled_strata``); None (the default) refuses such a checkpoint, naming
        ``power.unpiloted``.
    """

    fit: str = "none"
    pilot_root: Path | None = None
    pilot_design: Path | None = None
    pilot_input_seed: int | None = None
    calibration_studies: int = 16
    reference_only: bool = True
    unpiloted: str | None = None


@dataclass(frozen=True)
class FitOutcome:
    """What :func:`fitted_assumptions` gives the simulation.

    Attributes
    ----------
    assumptions : PowerAssumptions
        The fitted (and, unless asked otherwise, calibrated) assumptions; the given ones
        when nothing was fitted.
    widths : StratumWidths or None
        Per-checkpoint widths of the fitted cells (None: the caller's reference widths).
    reference_m0_loss : float or None
    record : dict or None
        The fit (:meth:`FittedAssumptions.to_dict`) with its ``calibration``.
    notes : list of str
    residual_kurtosis : float or None
        Excess kurtosis of the fitted cells' M0 residual (None when nothing was fitted).
    """

    assumptions: PowerAssumptions
    widths: Any = None
    reference_m0_loss: float | None = None
    record: dict | None = None
    notes: list[str] = field(default_factory=list)
    residual_kurtosis: float | None = None


def fitted_assumptions(
    design_path: Path,
    sizes: StudySizes,
    assumptions: PowerAssumptions,
    *,
    root: Path,
    source: FitSource,
    progress: Callable[[str], None] | None = None,
) -> FitOutcome:
    """Fit the simulator to the study's training heads or to a pilot, and calibrate it.

    Parameters
    ----------
    design_path : Path
    sizes : StudySizes
        The design's sizes (the calibration simulates them).
    assumptions : PowerAssumptions
        The hand-set assumptions; the fit replaces the residual scale, ICC, layer share,
        head share and checkpoint effects, and keeps the effect, truth position and bins.
    root : Path, keyword-only
        The study root.
    source : FitSource, keyword-only
        Training heads, a pilot, or nothing (the reference M0 loss only).
    progress : callable, keyword-only

    Returns
    -------
    FitOutcome
    """
    from analysis.power.fit import fit_assumptions, reference_m0_losses
    from analysis.prereg.design import load_design

    fit, pilot_root, pilot_design = source.fit, source.pilot_root, source.pilot_design
    pilot_input_seed = source.pilot_input_seed
    calibration_studies = check_int("calibration_studies", source.calibration_studies, minimum=0)
    notes: list[str] = []
    if fit == "none" and not source.reference_only:
        return FitOutcome(assumptions)
    if fit == "pilot":
        if pilot_design:
            pilot_path = Path(pilot_design)
            pilot_root = pilot_path.resolve().parent.parent
        elif pilot_root:
            pilot_root = Path(pilot_root)
            pilot_path = pilot_root / "preregistration" / design_path.name
        else:
            raise ParameterError(
                "pilot_root",
                "the pilot (--pilot-design FILE, or --pilot-root DIR holding a design of "
                "the same name)",
                None,
            )
        if pilot_path.resolve() == Path(design_path).resolve():
            raise ParameterError("pilot_design", "a design other than the study's", str(pilot_path))
        cells = study_training_table(pilot_path, root=pilot_root)
        if pilot_input_seed is not None and cells.input_seed != pilot_input_seed:
            raise ParameterError(
                "pilot_root",
                f"a pilot on input seed {pilot_input_seed} (the design's [power])",
                cells.input_seed,
            )
        own = int(
            load_design(design_path, require_held_out=False).data["sampling"]["inputs"]["seed"]
        )
        if cells.input_seed == own:
            raise ParameterError(
                "pilot_root",
                f"a pilot on an input seed other than the design's ({own})",
                cells.input_seed,
            )
        what = f"the pilot {pilot_path.name} (input seed {cells.input_seed}, training heads)"
    elif fit in ("training", "none"):
        try:
            cells = study_training_table(design_path, root=root)
        except FileNotFoundError as exc:
            if fit == "training":
                raise
            notes.append(f"no reference M0 loss: {exc}")
            return FitOutcome(assumptions, notes=notes)
        what = f"the training heads of {design_path.name}"
    else:
        raise ParameterError("fit", "none, training or pilot", fit)
    if fit == "none":
        refs, how = reference_m0_losses(
            cells.table,
            cells.models,
            cells.pair,
            random_state=cells.random_state,
            comparison_kwargs=cells.comparison_kwargs,
            covariate_kwargs={**cells.covariate_kwargs, "log_columns": cells.log_columns},
        )
        ref = refs["all"]
        notes.append(f"reference M0 loss {ref:.4g}: {how} ({what})")
        return FitOutcome(assumptions, reference_m0_loss=ref, notes=notes)
    fitted = fit_assumptions(
        replace(cells, source=what),
        truth_position=assumptions.truth_position,
        eps=sizes.eps,
        width_bins=assumptions.width_bins,
        pooled_strata=_unpiloted_strata(sizes, cells, source.unpiloted),
    )
    notes.append(fitted.summary())
    record = fitted.to_dict()
    kurtosis = fitted.residual_kurtosis
    structural = fitted.assumptions(assumptions)
    if calibration_studies == 0:
        notes.append("scales not calibrated (calibration_studies 0): the structural fit's")
        return FitOutcome(
            structural, fitted.widths, fitted.reference_m0_loss, record, notes, kurtosis
        )
    from analysis.power.calibrate import calibrate_scales
    from analysis.power.spec import PowerSpec

    reference = dict(fitted.reference_by_stratum) or {"all": fitted.reference_m0_loss}
    spec = PowerSpec(
        simulations=calibration_studies,
        sizes=sizes,
        assumptions=structural,
        random_state=cells.random_state,
    )
    cal = calibrate_scales(fitted.widths, spec, reference, progress=progress)
    notes.append(cal.summary())
    record["calibration"] = cal.to_dict()
    if not cal.converged:
        notes.append(
            "the calibration did not reach every checkpoint's reference M0 loss within "
            f"{cal.tolerance:.0%}; the 25% check says whether the simulated studies still "
            "resemble the data"
        )
    return FitOutcome(
        cal.assumptions, fitted.widths, fitted.reference_m0_loss, record, notes, kurtosis
    )


def _unpiloted_strata(sizes: StudySizes, cells: TrainingCells, unpiloted: str | None) -> list[str]:
    """The design's checkpoint strata the fitted cells do not hold: refused unless the
    design declares ``[power] unpiloted = "pooled"``."""
    if unpiloted not in (None, "pooled"):
        raise ParameterError("power.unpiloted", '"pooled" or no key', unpiloted)
    if "stratum" not in cells.table.columns or len(sizes.strata) < 2:
        return []
    held = set(cells.table["stratum"].astype(str))
    missing = [str(s[0]) for s in sizes.strata if str(s[0]) not in held]
    if missing and unpiloted is None:
        raise ParameterError(
            "power.unpiloted",
            "fitted cells of every checkpoint of the design, or [power] unpiloted = "
            f'"pooled" to fit the checkpoints without them by the pooled fit (no cells of '
            f"{', '.join(missing)})",
            None,
        )
    return missing


def widths_digest(widths: Any) -> str:
    """SHA-256 of fitted per-checkpoint widths (every stratum's binned widths), for a power
    record's key."""
    import hashlib

    import numpy as np

    h = hashlib.sha256()
    for name, model in getattr(widths, "models", ()):
        h.update(str(name).encode("utf-8"))
        for eps, arrays in model.bins:
            h.update(np.float64(eps).tobytes())
            for a in arrays:
                h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    return h.hexdigest()
