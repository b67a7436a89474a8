"""The power stage of a method-3 design: the power of each decision, from the pilot, before
outcomes.

A design with top-level ``method = 3`` (:func:`analysis.prereg.options.design_method`)
stores in ``<stem>.power.json``, per hypothesis, the power of each decision it makes
(superiority at the SESOI, TOST at 0) and the sizes ("adds information" at 0, "equivalent"
at -SESOI and +SESOI), under three declared scenarios (``normal``; ``heavy_tails``:
Student-t head and cell residuals, df fitted to the pilot's M0 residual kurtosis;
``covariate_shift``: held-out covariates shifted by
:data:`~analysis.power.tails.COVARIATE_SHIFT` SDs), with a sensitivity at half and twice
the SESOI (:func:`analysis.power.decisions.decision_powers`). What differs from method 2
(:func:`analysis.study.power.power_stage`):

- covariate counts come from the pilot only (the collinearity screen on the pilot's
  training cells; without a pilot the lock's names), never from the study's own cells;
- a SESOI declared as ``hypotheses[i].sesoi_share`` is turned into loss units with the
  pilot's reference M0 loss, and both are recorded (``inputs.sesoi``);
- the record can be written before the lock (:func:`write_power_before_lock`, ``attnrank
  validate-comparison --design FILE --simulations N --write-power-file``); ``attnrank
  prereg lock`` then hashes it, and a run of the stage with the same inputs reuses it;
- once the study has outcomes, the stage runs only as exploratory: a recomputed record is
  labelled ``exploratory`` and written to ``<stem>.power-exploratory.json``, the locked
  power file and the lock stay as they were; a power file computed before the outcomes
  is read, never recomputed.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

from analysis.atomic import atomic_write
from analysis.power.decisions import PLACEMENT_FACTOR, decision_powers
from analysis.power.error_rates import validate_comparison
from analysis.power.file import read_power_file, write_power_file
from analysis.power.inputs import PowerAssumptions, StudySizes, sizes_from_design
from analysis.power.tails import COVARIATE_SHIFT, DEFAULT_TAIL_DF, df_from_kurtosis
from analysis.power.widths import DEFAULT_WIDTHS, load_widths
from analysis.prereg.options import (
    design_method,
    design_power,
    design_sesoi,
    design_sesoi_shares,
)
from analysis.prereg.provenance import power_path
from analysis.study.core import Study
from analysis.study.power_record import (
    declared_fit,
    named_sizes,
    power_key,
    stage_inputs,
    stage_record,
    stage_spec,
)
from analysis.validation import ParameterError, check_int

__all__ = [
    "decisions_power_stage",
    "design_pilot_sizes",
    "exploratory_power_path",
    "pilot_sizes",
    "resolved_sesoi",
    "scenarios_for",
    "write_power_before_lock",
]


def exploratory_power_path(design_path: str | Path) -> Path:
    """``<stem>.power-exploratory.json`` beside the design (never hashed into the lock).

    Examples
    --------
    >>> exploratory_power_path("preregistration/x.toml").name
    'x.power-exploratory.json'
    """
    p = Path(design_path)
    return p.with_name(p.stem + ".power-exploratory.json")


def pilot_sizes(study: Study, pilot_design: Path | None, pilot_root: Path | None) -> StudySizes:
    """The simulation sizes of a method-3 study: covariate counts after the collinearity
    screen on the pilot's training cells, else (no pilot, or no pilot store yet) the
    names the design's blocks declare (the lock's); never the study's own cells."""
    return design_pilot_sizes(
        study.paths.design, root=study.paths.root, pilot_design=pilot_design, pilot_root=pilot_root
    )


def design_pilot_sizes(
    design_path: Path,
    *,
    root: Path,
    pilot_design: Path | None = None,
    pilot_root: Path | None = None,
) -> StudySizes:
    """:func:`pilot_sizes` of a design file, locked or not (what ``attnrank
    validate-comparison --write-power-file`` reads before the lock).

    Without a pilot store the counts are the names the registry gives the design's blocks
    (the lock records the same names, :func:`analysis.study.core.block_facts`), so a power
    file written before the lock has the key that the power stage computes after it.

    Parameters
    ----------
    design_path : Path
    root : Path, keyword-only
        The study root (``design_path``'s name inside it names the sizes).
    pilot_design, pilot_root : Path, optional, keyword-only
        The pilot's design file and its study root.

    Returns
    -------
    StudySizes
    """
    from analysis.prereg.design import load_design
    from analysis.study.core import block_facts
    from analysis.study.power_record import screen_training

    names, note = None, "the design's block covariate names (no pilot store was read)"
    if pilot_design is not None:
        from analysis.prereg.sealing import SealedCells
        from analysis.study.comparison import stored_comparison_table

        try:
            table, log_cols, pilot = stored_comparison_table(pilot_design, root=pilot_root)
        except FileNotFoundError:
            pass
        else:
            train = SealedCells(table, pilot.paths.design, lock=pilot.lock).training()
            if not train.empty:
                names, note = screen_training(pilot, train, log_cols, "the pilot's")
    if names is None:
        design = load_design(design_path, require_held_out=False)
        names = block_facts(design, root=root)["features"]
    sizes = sizes_from_design(design_path, features=names, features_note=note)
    return named_sizes(sizes, design_path, root)


def _every(
    say: Callable[[str], None], what: str, t0: float, step: int = 1000
) -> Callable[[int, int | None], None]:
    """A progress callback that says a line every ``step`` simulated studies: the power
    file's simulations run for up to an hour and would otherwise print nothing.

    Examples
    --------
    >>> from analysis.study.power_decisions import _every
    >>> lines = []
    >>> tick = _every(lines.append, "decisions", 0.0, step=2)
    >>> for done in (1, 2, 3, 5): tick(done, None)
    >>> [line.split(",")[0] for line in lines]
    ['power (decisions): 2 simulated studies', 'power (decisions): 5 simulated studies']
    """
    last = [0]

    def tick(done: int, total: int | None) -> None:
        if done - last[0] >= step:
            last[0] = done
            of = f" of {total}" if total else ""
            minutes = (time.perf_counter() - t0) / 60
            say(f"power ({what}): {done} simulated studies{of}, {minutes:.1f} min")

    return tick


def resolved_sesoi(
    data: dict, primary: str, pilot_m0_loss: float | None
) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
    """Each pair's SESOI in loss units, and the record of where it comes from.

    Returns
    -------
    (dict, dict)
        Pair -> SESOI (loss units; pairs whose share cannot be resolved are left out),
        and pair -> ``{"sesoi", "sesoi_share", "pilot_m0_loss", "source"}``.

    Examples
    --------
    >>> from analysis.study.power_decisions import resolved_sesoi
    >>> data = {"metrics": {"primary": "interval_sq_loss"}, "hypotheses": [
    ...     {"pair": ["M0", "M1"], "sesoi_share": 0.1},
    ...     {"pair": ["M0", "M2"], "sesoi": 0.002}]}
    >>> loss, rec = resolved_sesoi(data, "interval_sq_loss", 0.03)
    >>> {k: round(v, 6) for k, v in sorted(loss.items())}, rec["M0<M1"]["source"]
    ({'M0<M1': 0.003, 'M0<M2': 0.002}, 'share x the pilot M0 loss')
    """
    loss: dict[str, float] = {}
    rec: dict[str, dict[str, Any]] = {}
    for pair, per_metric in design_sesoi(data).items():
        if primary in per_metric:
            loss[pair] = per_metric[primary]
            rec[pair] = {
                "sesoi": per_metric[primary],
                "sesoi_share": None,
                "pilot_m0_loss": pilot_m0_loss,
                "source": "declared in loss units",
            }
    known = pilot_m0_loss is not None and pilot_m0_loss == pilot_m0_loss and pilot_m0_loss > 0
    for pair, share in design_sesoi_shares(data).items():
        rec[pair] = {
            "sesoi": share * pilot_m0_loss if known else None,
            "sesoi_share": share,
            "pilot_m0_loss": pilot_m0_loss,
            "source": "share x the pilot M0 loss" if known else "unresolved: no pilot M0 loss",
        }
        if known:
            loss[pair] = share * pilot_m0_loss
    return loss, rec


def scenarios_for(residual_kurtosis: float | None) -> dict[str, dict[str, float]]:
    """The declared scenarios: ``normal``, ``heavy_tails`` (df fitted to the pilot's M0
    residual kurtosis, :data:`~analysis.power.tails.DEFAULT_TAIL_DF` when it is unknown
    or not positive) and ``covariate_shift``.

    Examples
    --------
    >>> from analysis.study.power_decisions import scenarios_for
    >>> scenarios_for(3.0)["heavy_tails"], scenarios_for(None)["heavy_tails"]
    ({'tail_df': 6.0}, {'tail_df': 5.0})
    """
    df = df_from_kurtosis(residual_kurtosis) if residual_kurtosis is not None else None
    return {
        "normal": {},
        "heavy_tails": {"tail_df": df if df is not None else DEFAULT_TAIL_DF},
        "covariate_shift": {"covariate_shift": COVARIATE_SHIFT},
    }


def _summary(decisions: dict) -> list[str]:
    lines = []
    for h in decisions["hypotheses"]:
        for scen, s in h["scenarios"].items():

            def r(x: dict | None) -> str:
                return (
                    "n/a"
                    if x is None
                    else f"{x['rate']:.3f} [{x['ci_low']:.3f}, {x['ci_high']:.3f}]"
                )

            p, z = s["power"], s["size"]
            lines.append(
                f"  {h['hypothesis']} ({h['pair']}, SESOI {h['sesoi']:.4g}, {scen}): power "
                f"of 'adds information' at +SESOI {r(p['superiority_at_sesoi'])}, of "
                f"'equivalent' at 0 {r(p['tost_at_zero'])}; size 'adds information' at 0 "
                f"{r(z['adds_information_at_zero'])}, 'equivalent' at +SESOI "
                f"{r(z['equivalent_at_plus_sesoi'])}, at -SESOI "
                f"{r(z['equivalent_at_minus_sesoi'])}"
            )
    lines += [f"  {k}: decisions not simulated: {v}" for k, v in decisions["skipped"].items()]
    return lines


@dataclasses.dataclass(frozen=True)
class _Target:
    """Where a method-3 power record is computed: the design (locked or not), its study
    paths and data, the lock hash it is computed under (None before the lock) and the
    command that computes it."""

    paths: Any
    data: dict
    lock_sha256: str | None
    command: str


def decisions_power_stage(
    study: Study,
    *,
    simulations: int,
    workers: int = 1,
    say: Callable[[str], None] = print,
    executor: Executor | None = None,
    assumptions: PowerAssumptions | None = None,
) -> dict[str, Any]:
    """Compute (or reuse) the method-3 power record of ``study`` (see the module text).

    A stored power file computed before the study's outcomes (not ``exploratory``; the
    lock hashes it) is the design's pre-registered power: once outcomes exist it is read,
    never recomputed, whatever the inputs now are.

    Parameters
    ----------
    study : Study
    simulations : int, keyword-only
        Simulated studies per scenario and share (> 0).
    workers, say, executor, assumptions : keyword-only
        As :func:`analysis.study.power.power_stage`.

    Returns
    -------
    dict
        The record (``exploratory: true`` when computed after outcomes existed), or
        ``{"skipped": reason}``.
    """
    from analysis.study.power_record import _command, _record_in_lock

    assumptions = assumptions if assumptions is not None else PowerAssumptions()
    target = _Target(
        study.paths, study.design.data, study.lock.sha256, _command(study, simulations, assumptions)
    )
    run = {"workers": workers, "executor": executor, "say": say}
    record = _decision_record(target, simulations=simulations, assumptions=assumptions, **run)
    if record.get("written") == "power":
        _record_in_lock(study, record)
        say(f"power: stored in {power_path(study.paths.design).name} and recorded in the lock")
    record.pop("written", None)
    return record


def write_power_before_lock(
    design_path: str | Path,
    *,
    simulations: int,
    root: str | Path | None = None,
    workers: int = 1,
    say: Callable[[str], None] = print,
    executor: Executor | None = None,
    assumptions: PowerAssumptions | None = None,
    write: bool = True,
) -> dict[str, Any]:
    """The method-3 power record of a design file, written before the lock
    (``attnrank validate-comparison --design FILE --write-power-file``).

    An unlocked design gets ``<stem>.power.json`` beside it, which ``attnrank prereg lock``
    then hashes (``power_sha256``); a locked one goes through the power stage
    (:func:`decisions_power_stage`: reused when its key is unchanged, else recomputed and
    recorded in the lock by amendment). Once the design has outcomes the record is only
    exploratory (``<stem>.power-exploratory.json``), the power file and lock unchanged.

    Parameters
    ----------
    design_path : path
        A design with top-level ``method = 3``.
    simulations : int, keyword-only
        Simulated studies per scenario and share (>= 2).
    root : path, optional, keyword-only
        The study root (default the parent of the design's folder).
    workers, say, executor, assumptions : keyword-only
        As :func:`decisions_power_stage`.
    write : bool, keyword-only
        False: compute and return the record, write nothing (no lock is amended either).

    Returns
    -------
    dict
        The record, or ``{"skipped": reason}``.

    Raises
    ------
    ParameterError
        Naming ``design`` when the design is not a method-3 design.
    """
    from analysis.prereg.design import load_design
    from analysis.prereg.lock import lock_path
    from analysis.study.paths import study_paths

    design_path = Path(design_path)
    design = load_design(design_path, require_held_out=False)
    if design_method(design.data) != 3:
        raise ParameterError("design", "a design with top-level method = 3", design_path.name)
    assumptions = assumptions if assumptions is not None else PowerAssumptions()
    run = {"workers": workers, "executor": executor, "say": say}
    command = (
        f"attnrank validate-comparison --design preregistration/{design_path.name} "
        f"--simulations {simulations} --write-power-file"
    )
    if lock_path(design_path).is_file():
        study = Study.open(design_path, root=root)
        if write:
            return decisions_power_stage(
                study, simulations=simulations, assumptions=assumptions, **run
            )
        target = _Target(study.paths, study.design.data, study.lock.sha256, command)
    else:
        target = _Target(study_paths(design_path, root=root), design.data, None, command)
    record = _decision_record(
        target, simulations=simulations, assumptions=assumptions, write=write, **run
    )
    record.pop("written", None)
    return record


def _decision_record(
    target: _Target,
    *,
    simulations: int,
    assumptions: PowerAssumptions,
    workers: int,
    say: Callable[[str], None],
    executor: Executor | None,
    write: bool = True,
) -> dict[str, Any]:
    """Compute, reuse or refuse to recompute the record; write it where it belongs
    (``written``: ``"power"``, ``"exploratory"`` or absent)."""
    from analysis.study.core import stored_outcomes

    simulations = check_int("simulations", simulations, minimum=2)
    paths, data = target.paths, target.data
    design_path = paths.design
    declared = design_power(data)
    pilot = declared.get("pilot_design")
    pilot_path = paths.root / pilot if pilot else None
    widths_file = paths.root / DEFAULT_WIDTHS
    if declared["fit"] == "none" and not widths_file.is_file():
        return {"skipped": f"no reference bracket widths at {widths_file}"}
    try:
        sizes = design_pilot_sizes(
            design_path,
            root=paths.root,
            pilot_design=pilot_path,
            pilot_root=paths.root if pilot_path else None,
        )
    except ParameterError as exc:
        return {"skipped": f"the simulation cannot copy this design ({exc})"}
    fit = declared_fit(paths, declared, sizes, assumptions, say)
    if fit is not None:
        assumptions = fit.assumptions
    pilot_loss = fit.reference_m0_loss if fit is not None and declared["fit"] == "pilot" else None
    sesoi, sesoi_record = resolved_sesoi(data, sizes.primary_metric, pilot_loss)
    scenarios = scenarios_for(fit.residual_kurtosis if fit is not None else None)
    seed = int(data["inference"]["seed"])
    extra = {"method": 3, "sesoi": sesoi_record, "scenarios": scenarios}
    extra["placement_simulations"] = PLACEMENT_FACTOR * simulations
    inputs = stage_inputs(
        sizes, assumptions, fit, widths_file, simulations=simulations, seed=seed, extra=extra
    )
    key = power_key(inputs)
    stored = read_power_file(design_path)
    if stored is not None and stored.get("key") == key:
        say(f"power: inputs unchanged, {power_path(design_path).name} reused")
        return stored
    outcomes = stored_outcomes(paths)
    if write and outcomes is not None and stored is not None and not stored.get("exploratory"):
        # the power file computed before outcomes is the design's pre-registered power
        say(
            f"power: {power_path(design_path).name} was computed before the study's outcomes "
            "and is its pre-registered power: read, not recomputed (its inputs differ from "
            "today's; `attnrank validate-comparison` without --write-power-file simulates "
            "today's, exploratory)"
        )
        return stored
    t0 = time.perf_counter()
    spec = stage_spec(sizes, assumptions, inputs)
    widths = fit.widths if fit and fit.widths is not None else load_widths(widths_file)
    run = {"workers": workers, "executor": executor}
    ref = fit.reference_m0_loss if fit else None
    res = validate_comparison(
        widths, spec, reference_m0_loss=ref, progress=_every(say, "error rates", t0), **run
    )
    decisions = decision_powers(
        widths, spec, sesoi, scenarios=scenarios, progress=_every(say, "decisions", t0), **run
    )
    label = "" if outcomes is None else "EXPLORATORY (computed after the study's outcomes) "
    summary = "\n".join([label + res.summary(), "  method-3 decisions:", *_summary(decisions)])
    provenance = {
        "computed_under_lock": target.lock_sha256,
        "command": target.command,
        "note": "the simulated power and sizes of the design's method-3 decisions, "
        "fitted to the pilot before outcomes; properties of the test, not of the data",
    }
    result = {**res.to_dict(), "method": 3, "decisions": decisions}
    record = stage_record(design_path, inputs, result, summary, provenance, t0)
    say(summary)
    if outcomes is not None:
        record["exploratory"] = True
        record["provenance"]["note"] = (
            f"EXPLORATORY: computed after the study's outcomes existed (first outcome "
            f"{outcomes.get('time')}); not the design's pre-registered power, not in the lock"
        )
    if not write:
        return record
    if outcomes is not None:
        path = exploratory_power_path(design_path)
        with atomic_write(path, mode="w") as fh:
            fh.write(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
        say(f"power: exploratory (after outcomes), stored in {path.name}; the lock is unchanged")
        return {**record, "written": "exploratory"}
    write_power_file(design_path, record)
    if target.lock_sha256 is None:
        say(
            f"power: stored in {power_path(design_path).name}; `attnrank prereg lock` hashes "
            "it into the lock"
        )
    return {**record, "written": "power"}
