"""Stage 5: the simulated size, power and minimum detectable effect of the study's decision.

``attnrank validate-comparison`` (:mod:`analysis.power`) run on the study's own design: its
sizes (heads and held-out heads per checkpoint, grid, B, alpha, Holm family), its blocks'
covariate counts after the collinearity screen on the study's training cells, every
hypothesis the simulation can test, the design's inference seed. Computed only when asked
(``attnrank run DESIGN --power-simulations N``), keyed by everything the simulation reads,
stored beside the design (:mod:`analysis.power.file`, reused while its key is the same) and
recorded in the lock through :func:`analysis.prereg.amend_design` (the lock hash, which
stamps confirmatory results, does not change). ``report.md`` prints the record beside each
hypothesis, or says that the power was not computed and how to compute it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.power.error_rates import validate_comparison
from analysis.power.file import (
    not_computed,
    read_power_file,
    write_power_file,
)
from analysis.power.inputs import PowerAssumptions, StudySizes, sizes_from_design
from analysis.power.widths import DEFAULT_WIDTHS, load_widths
from analysis.prereg.options import design_method, design_power
from analysis.prereg.provenance import power_path
from analysis.study.core import Study
from analysis.study.power_decisions import decisions_power_stage
from analysis.study.power_record import (
    POWER_FORMAT,
    _command,
    _record_in_lock,
    declared_fit,
    named_sizes,
    power_key,
    screen_training,
    stage_inputs,
    stage_record,
    stage_spec,
)
from analysis.validation import ParameterError, check_int

__all__ = ["POWER_FORMAT", "power_stage", "screened_features", "study_sizes", "validation_sizes"]


def screened_features(
    study: Study, brackets: pd.DataFrame, features: pd.DataFrame
) -> tuple[dict[str, list[str]], str] | None:
    """Each block's covariates kept by the collinearity screen on the training cells.

    The comparison's own preparation (:func:`analysis.compare.prepare_covariates` with the
    registry's block order, calibrated blocks and diagnostics) runs on the training cells
    of the study's comparison table (held-out heads are removed first, through
    :class:`~analysis.prereg.SealedCells`). A block's count is read in the smallest model
    of the Holm family that holds it (``native`` in ``M1``, ``intrinsic`` in ``M2``), where
    only the baseline screens it.

    Returns
    -------
    (dict, str) or None
        Block -> kept covariate names, and a note saying where they come from; None
        when the study has no training cell with descriptors.

    Examples
    --------
    A study's descriptors need its checkpoint's weights; before they exist there is
    nothing to screen:

    >>> from analysis.datasets import open_example_study
    >>> import pandas as pd
    >>> study, empty = open_example_study("studies/screen.toml"), pd.DataFrame()
    >>> screened_features(study, empty, empty) is None
    True
    """
    from analysis.prereg.sealing import SealedCells
    from analysis.study.comparison import comparison_table

    if features.empty or brackets.empty:
        return None
    table, log_cols, _ = comparison_table(study, brackets, features)
    if table.empty:
        return None
    train = SealedCells(table, study.paths.design, lock=study.lock).training()
    if train.empty:
        return None
    return screen_training(study, train, log_cols, "the study's")


def study_sizes(
    study: Study,
    brackets: pd.DataFrame | None = None,
    features: pd.DataFrame | None = None,
) -> StudySizes:
    """The simulation sizes of a study: screened covariate counts when the study has
    descriptors, else the lock's covariate names (the note says which).

    Examples
    --------
    No descriptors yet: the lock's names. The toy design has 2 layers x 4 heads, 2 of
    them held out, and ``native`` has as many covariates as its block declares:

    >>> from analysis.descriptors import block_covariates, builtin_registry
    >>> from analysis.datasets import open_example_study
    >>> study = open_example_study("studies/sizes.toml")
    >>> sizes = study_sizes(study)
    >>> sizes.n_heads, sizes.n_held_out, sizes.strata, sizes.features_note[:24]
    (8, 2, (('org/tiny', 8, 2),), "the lock's covariate nam")
    >>> dict(sizes.features)["native"] == len(block_covariates(builtin_registry().get("native")))
    True
    """
    screened = None
    if brackets is not None and features is not None:
        screened = screened_features(study, brackets, features)
    names, note = (None, None) if screened is None else screened
    sizes = sizes_from_design(study.paths.design, features=names, features_note=note)
    return named_sizes(sizes, study.paths.design, study.paths.root)


def validation_sizes(design_path: str | os.PathLike, *, root: str | os.PathLike | None = None):
    """Sizes for ``attnrank validate-comparison --design FILE``.

    A locked design is opened as a study (the lock and the blocks are checked): with a
    study store holding descriptors, the covariate counts are those kept by the screen on
    its training cells; otherwise the lock's names. An unlocked design takes its blocks'
    covariate names from the registry (plugins imported from the study root).

    Examples
    --------
    >>> from analysis.prereg import load_design, lock_design
    >>> from analysis.study.core import Study, block_facts
    >>> from analysis.datasets import write_example_design
    >>> _ = write_example_design("studies/valid.toml", temperatures=(0.5, 1.0), eps=(0.1, 0.2))
    >>> before = validation_sizes("studies/valid.toml")  # not locked: the registry's names
    >>> before.features_note
    "the registry's covariate names (the design is not locked)"
    >>> _ = lock_design("studies/valid.toml", **block_facts(load_design("studies/valid.toml")))
    >>> after = validation_sizes("studies/valid.toml")  # locked, no store: the lock's names
    >>> after == study_sizes(Study.open("studies/valid.toml")), after.features == before.features
    (True, True)
    """
    from analysis.prereg.design import load_design
    from analysis.prereg.lock import lock_path
    from analysis.store.store import Store
    from analysis.study.core import block_facts
    from analysis.study.results import bracket_table, cells_engine, feature_table

    design_path = Path(design_path)
    if not lock_path(design_path).is_file():
        design = load_design(design_path, require_held_out=False)
        root_p = Path(root) if root is not None else design_path.resolve().parent.parent
        facts = block_facts(design, root=root_p)
        return sizes_from_design(
            design_path,
            features=facts["features"],
            features_note="the registry's covariate names (the design is not locked)",
        )
    study = Study.open(design_path, root=root)
    paths = study.paths
    if not (paths.store / Store.INDEX).is_file():
        return study_sizes(study)
    with Store(paths.store) as store:
        real_keys = study.real_keys()
        label = cells_engine(study)
        brackets = bracket_table(store, study.plan, real_keys, [], study.design.held_out, label)
    return study_sizes(study, brackets, feature_table(paths, real_keys))


def power_stage(
    study: Study,
    brackets: pd.DataFrame,
    features: pd.DataFrame,
    *,
    simulations: int | None = None,
    workers: int = 1,
    say: Callable[[str], None] = print,
    executor: Executor | None = None,
    assumptions: PowerAssumptions | None = None,
) -> dict[str, Any]:
    """Read the design's stored power, or (when asked) compute, store and lock it.

    Parameters
    ----------
    study : Study
    brackets, features : DataFrame
        The study's bracket and descriptor tables (for the collinearity screen on
        training cells).
    simulations : int or None, keyword-only
        None (the default): read the stored file, never simulate. A positive number:
        simulated studies per scenario and share; the stored file is reused when its key
        (every input of the simulation) is the same, else recomputed, rewritten and
        recorded in the lock (:func:`analysis.prereg.amend_design`). 0: nothing is
        simulated or read.
    workers : int, keyword-only
        Processes (the result does not depend on it, and it is not part of the key).
    say : callable, keyword-only
    executor : concurrent.futures.Executor, optional, keyword-only
        Run the simulations there instead of ``workers`` processes (not part of the key).
    assumptions : PowerAssumptions, optional, keyword-only
        What the design does not fix (default :class:`~analysis.power.PowerAssumptions`,
        e.g. the native head share 0.5); part of the key, so a changed assumption
        recomputes the stored result.

    Returns
    -------
    dict
        The stored record (:mod:`analysis.power.file`: ``key``, ``inputs``,
        ``result`` -- :meth:`~analysis.power.ValidationResult.to_dict` --, ``summary``,
        ``provenance``); or ``{"skipped": reason}`` when there is none, nothing was asked,
        or there is nothing to simulate with.

    Examples
    --------
    Simulating needs the reference bracket widths of a real study; what a run without
    ``simulations`` does is cheaper: it reads the stored record, or says there is none.

    >>> from analysis.power.file import write_power_file
    >>> from analysis.datasets import open_example_study
    >>> import pandas as pd
    >>> study, empty = open_example_study("studies/stage.toml"), pd.DataFrame()
    >>> power_stage(study, empty, empty)["skipped"] == not_computed("studies/stage.toml")
    True
    >>> power_stage(study, empty, empty, simulations=0)["skipped"][:28]
    'the run was asked for no pow'
    >>> power_stage(study, empty, empty, simulations=5)["skipped"][:31]  # no widths file here
    'no reference bracket widths at '
    >>> record = {"format": "attnrank-power/1", "design": "stage.toml", "key": "k",
    ...           "inputs": {}, "result": {}, "provenance": {}}
    >>> _ = write_power_file("studies/stage.toml", record)
    >>> power_stage(study, empty, empty, say=print) == record
    power: stored result read from stage.power.json (not simulated)
    True
    """
    design_path = study.paths.design
    if simulations is None:
        stored = read_power_file(design_path)
        if stored is None:
            return {"skipped": not_computed(design_path)}
        say(f"power: stored result read from {power_path(design_path).name} (not simulated)")
        return stored
    simulations = check_int("power_simulations", simulations, minimum=0)
    paths = study.paths
    if simulations == 0:
        return {"skipped": "the run was asked for no power simulation (--power-simulations 0)"}
    if design_method(study.design.data) == 3:
        # method 3: the decisions' power from the pilot, before outcomes (power_decisions)
        return decisions_power_stage(
            study,
            simulations=simulations,
            workers=workers,
            say=say,
            executor=executor,
            assumptions=assumptions,
        )
    declared = design_power(study.design.data)
    widths_file = paths.root / DEFAULT_WIDTHS
    if declared["fit"] == "none" and not widths_file.is_file():
        return {
            "skipped": f"no reference bracket widths at {widths_file} "
            "(`attnrank reference-widths` writes them)"
        }
    try:
        sizes = study_sizes(study, brackets, features)
    except ParameterError as exc:  # e.g. a family model with a plugin block
        return {"skipped": f"the simulation cannot copy this design ({exc})"}
    if assumptions is None:
        assumptions = PowerAssumptions()
    elif not isinstance(assumptions, PowerAssumptions):
        raise ParameterError(
            "power_assumptions", "a PowerAssumptions or None", type(assumptions).__name__
        )
    fit = declared_fit(paths, declared, sizes, assumptions, say)
    if fit is not None:
        assumptions = fit.assumptions
        for note in fit.notes:
            say(note)
    seed = int(study.design.data["inference"]["seed"])
    inputs = stage_inputs(sizes, assumptions, fit, widths_file, simulations=simulations, seed=seed)
    key = power_key(inputs)
    stored = read_power_file(design_path)
    if stored is not None and stored.get("key") == key:
        say(f"power: inputs unchanged, {power_path(design_path).name} reused")
        return stored
    t0 = time.perf_counter()
    spec = stage_spec(sizes, assumptions, inputs)
    res = validate_comparison(
        fit.widths if fit else load_widths(widths_file),
        spec,
        workers=workers,
        executor=executor,
        reference_m0_loss=fit.reference_m0_loss if fit else None,
        fit=fit.record if fit else None,
    )
    provenance = {
        "computed_under_lock": study.lock.sha256,
        "command": _command(study, simulations, assumptions),
        "note": "the simulated error rates of the design's decision (attnrank "
        "validate-comparison on the design's sizes); properties of the test under the "
        "assumptions, not of the data",
    }
    record = stage_record(design_path, inputs, res.to_dict(), res.summary(), provenance, t0)
    write_power_file(design_path, record)
    _record_in_lock(study, record)
    say(res.summary())
    say(f"power: stored in {power_path(design_path).name} and recorded in the lock")
    return record
