"""Stage 5: the simulated size, power and minimum detectable effect of the study's decision.

``attnrank validate-comparison`` run on the study's own design: its sizes (heads and
held-out heads per checkpoint, grid, B, alpha, Holm family), its blocks' covariate counts
after the collinearity screen on the study's training cells, every hypothesis the
simulation can test, the design's inference seed. The result is stored in
``data/<stem>/results/power.json`` under a key of everything the simulation reads: the
design's sizes as the simulation sees them (:class:`~analysis.prereg.power.StudySizes`:
heads and held-out heads per checkpoint, grid, models, Holm family, B, alpha, bootstrap,
covariate counts), the number of simulations, the assumptions, the seed and the widths
file's hash. A re-run reuses it, and a changed design or setting that the simulation sees
recomputes it; an amendment that changes nothing the simulation reads (e.g. a block
version after a code edit that keeps its covariates) keeps it: the record then names the
current lock and, as ``computed_under_lock``, the one it was computed under. ``report.md`` prints it beside each hypothesis.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.hashing import file_sha256
from analysis.prereg.error_rates import validate_comparison
from analysis.prereg.power import (
    DEFAULT_WIDTHS,
    PowerAssumptions,
    StudySizes,
    load_widths,
    sizes_from_design,
)
from analysis.study.core import Study
from analysis.study.records import read_json, write_json
from analysis.validation import ParameterError, check_int

__all__ = [
    "DEFAULT_POWER_SIMULATIONS",
    "POWER_FORMAT",
    "power_stage",
    "screened_features",
    "study_sizes",
    "validation_sizes",
]

#: Simulated studies per scenario and share in a study's power stage.
DEFAULT_POWER_SIMULATIONS = 400
#: Version of the stored record: a new version recomputes every stored result.
POWER_FORMAT = "power/2"


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
    """
    from analysis.compare import prepare_covariates
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
    design = study.design
    used = list(dict.fromkeys(m for p in design.family for m in p))
    models = {m: design.models[m] for m in used}
    prep = prepare_covariates(
        train,
        models,
        np.ones(len(train), dtype=bool),
        log_columns=log_cols,
        **study.registry.covariate_kwargs(train.columns),
    )
    out: dict[str, list[str]] = {}
    where: dict[str, str] = {}
    for b in dict.fromkeys(b for m in used for b in models[m]):
        holders = sorted((m for m in used if b in models[m]), key=lambda m: len(models[m]))
        m = holders[0]
        out[b] = [c.split("__", 1)[1] for c in prep.columns[m] if c.startswith(b + "__")]
        where[b] = m
    note = (
        f"after the collinearity screen on the study's {len(train)} training cells "
        f"({train['cluster'].nunique()} heads); "
        + ", ".join(f"{b} in {m}" for b, m in where.items())
    )
    return out, note


def study_sizes(
    study: Study,
    brackets: pd.DataFrame | None = None,
    features: pd.DataFrame | None = None,
) -> StudySizes:
    """The simulation sizes of a study: screened covariate counts when the study has
    descriptors, else the lock's covariate names (the note says which)."""
    screened = None
    if brackets is not None and features is not None:
        screened = screened_features(study, brackets, features)
    if screened is None:
        return sizes_from_design(study.paths.design)
    names, note = screened
    return sizes_from_design(study.paths.design, features=names, features_note=note)


def validation_sizes(design_path: str | os.PathLike, *, root: str | os.PathLike | None = None):
    """Sizes for ``attnrank validate-comparison --design FILE``.

    A locked design is opened as a study (the lock and the blocks are checked): with a
    study store holding descriptors, the covariate counts are those kept by the screen on
    its training cells; otherwise the lock's names. An unlocked design takes its blocks'
    covariate names from the registry (plugins imported from the study root).
    """
    from analysis.prereg.design import load_design
    from analysis.prereg.lock import lock_path
    from analysis.store.store import Store
    from analysis.study.core import block_facts
    from analysis.study.results import bracket_table, feature_table

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
        brackets = bracket_table(store, study.plan, real_keys, [], study.design.held_out)
    return study_sizes(study, brackets, feature_table(paths, real_keys))


def power_key(inputs: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of a power stage's inputs."""
    text = json.dumps(inputs, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def power_stage(
    study: Study,
    brackets: pd.DataFrame,
    features: pd.DataFrame,
    *,
    simulations: int = DEFAULT_POWER_SIMULATIONS,
    workers: int = 1,
    say: Callable[[str], None] = print,
    hypotheses: Sequence[str] | None = None,
    executor: Executor | None = None,
    assumptions: PowerAssumptions | None = None,
) -> dict[str, Any]:
    """Run (or reuse) ``validate_comparison`` on the study's design.

    Parameters
    ----------
    study : Study
    brackets, features : DataFrame
        The study's bracket and descriptor tables (for the collinearity screen on
        training cells).
    simulations : int, keyword-only
        Simulated studies per scenario and share; 0 skips the stage.
    workers : int, keyword-only
        Processes (the result does not depend on it, and it is not part of the key).
    say : callable, keyword-only
    hypotheses : sequence of str, keyword-only
        Hypothesis ids (default every hypothesis of the design; those the simulation
        cannot test are listed as skipped).
    executor : concurrent.futures.Executor, optional, keyword-only
        Run the simulations there instead of ``workers`` processes (not part of the key).
    assumptions : PowerAssumptions, optional, keyword-only
        What the design does not fix (default :class:`~analysis.prereg.PowerAssumptions`,
        e.g. the native head share 0.5); part of the key, so a changed assumption
        recomputes the stored result.

    Returns
    -------
    dict
        The stored record: ``key``, ``inputs``, ``result``
        (:meth:`~analysis.prereg.ValidationResult.to_dict`) and ``summary``; or
        ``{"skipped": reason}`` (not stored) when there is nothing to simulate with.
    """
    simulations = check_int("power_simulations", simulations, minimum=0)
    paths = study.paths
    if simulations == 0:
        return {"skipped": "the run was asked for no power simulation (--power-simulations 0)"}
    widths_file = paths.root / DEFAULT_WIDTHS
    if not widths_file.is_file():
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
    hyps = list(hypotheses or [h[0] for h in sizes.hypotheses])
    seed = int(study.design.data["inference"]["seed"])
    inputs = {
        "format": POWER_FORMAT,
        "sizes": sizes.to_dict(),
        "simulations": simulations,
        "seed": seed,
        "assumptions": assumptions.to_dict(),
        "features": dict(sizes.features),
        "strata": [list(s) for s in sizes.strata],
        "widths_sha256": file_sha256(widths_file),
        "hypotheses": hyps,
        "mde_target": 0.8,
        "mde_steps": 5,
    }
    key = power_key(inputs)
    record = read_json(paths.power_file, {})
    if record.get("key") == key:
        say("power: inputs unchanged, stored result reused")
        if record.get("lock_sha256") != study.lock.sha256:
            # an amendment the simulation does not see: the result holds under the new
            # lock too; keep the lock it was computed under beside it
            record["computed_under_lock"] = record.get("computed_under_lock") or record.get(
                "lock_sha256"
            )
            record["lock_sha256"] = study.lock.sha256
            write_json(paths.power_file, record)
        return record
    res = validate_comparison(
        load_widths(widths_file),
        simulations=simulations,
        sizes=sizes,
        assumptions=assumptions,
        hypotheses=hyps,
        mde_target=inputs["mde_target"],
        mde_steps=inputs["mde_steps"],
        random_state=seed,
        workers=workers,
        executor=executor,
    )
    record = {
        "key": key,
        "lock_sha256": study.lock.sha256,
        "inputs": inputs,
        "result": res.to_dict(),
        "summary": res.summary(),
    }
    write_json(paths.power_file, record)
    say(res.summary())
    return record
