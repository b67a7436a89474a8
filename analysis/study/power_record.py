"""What both power stages share: the stored record's format and key, the command that
computes it, its entry in the lock, and the collinearity screen of training cells
(:mod:`analysis.study.power` for method 2, :mod:`analysis.study.power_decisions` for
method 3).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis import __version__
from analysis.hashing import file_sha256
from analysis.power.file import POWER_FILE_FORMAT
from analysis.power.inputs import PowerAssumptions, StudySizes
from analysis.power.spec import PowerSpec
from analysis.prereg.provenance import power_path
from analysis.study.core import Study, git_commit

__all__ = [
    "POWER_FORMAT",
    "declared_fit",
    "named_sizes",
    "power_key",
    "screen_training",
    "stage_inputs",
    "stage_record",
    "stage_spec",
]

#: Version of the stored record: a new version recomputes every stored result.
POWER_FORMAT = "power/2"


def screen_training(
    study: Study, train: pd.DataFrame, log_cols: list[str], whose: str
) -> tuple[dict[str, list[str]], str]:
    """Each block's covariates kept by the collinearity screen on ``train`` (training
    cells of ``study``: its own, or its pilot's), and a note naming ``whose`` cells."""
    from analysis.compare import prepare_covariates

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
        f"after the collinearity screen on {whose} {len(train)} training cells "
        f"({train['cluster'].nunique()} heads); "
        + ", ".join(f"{b} in {m}" for b, m in where.items())
    )
    return out, note


def named_sizes(sizes: StudySizes, design_path: Path, root: Path) -> StudySizes:
    """``sizes`` named by the design's path inside the study root, not where this clone
    happens to be (the name is part of the stored power file's key and summary); a design
    outside the root by its file name.

    Examples
    --------
    >>> from pathlib import Path
    >>> from analysis.datasets import example_sizes
    >>> named_sizes(example_sizes(), Path("/s/preregistration/x.toml"), Path("/s")).name
    'preregistration/x.toml'
    """
    design_path, root = Path(design_path).resolve(), Path(root).resolve()
    name = (
        design_path.relative_to(root).as_posix()
        if design_path.is_relative_to(root)
        else design_path.name
    )
    return dataclasses.replace(sizes, name=name)


def declared_fit(
    paths: Any,
    declared: Mapping[str, Any],
    sizes: StudySizes,
    assumptions: PowerAssumptions,
    say: Callable[[str], None],
) -> Any:
    """The simulator fitted as the design's ``[power]`` table declares (``fit``: its
    training heads or a pilot on another input seed, ``pilot_design``, calibrated to its
    M0 loss), or None for ``fit = "none"`` (:func:`analysis.study.pilot.fitted_assumptions`)."""
    if declared["fit"] == "none":
        return None
    from analysis.study.pilot import FitSource, fitted_assumptions

    pilot = declared.get("pilot_design")
    source = FitSource(
        fit=declared["fit"],
        pilot_design=(paths.root / pilot) if pilot else None,
        pilot_input_seed=declared.get("pilot_input_seed"),
        reference_only=False,
        unpiloted=declared.get("unpiloted"),
    )
    return fitted_assumptions(
        paths.design, sizes, assumptions, root=paths.root, source=source, progress=say
    )


def stage_inputs(
    sizes: StudySizes,
    assumptions: PowerAssumptions,
    fit: Any,
    widths_file: Path,
    *,
    simulations: int,
    seed: int,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Every input of a power stage's simulation (what :func:`power_key` hashes).

    ``extra`` (method 3: ``method`` first, then ``sesoi``, ``scenarios`` and
    ``placement_simulations``) is merged around the shared inputs in that order;
    ``fit``'s record comes last.
    """
    from analysis.study.pilot import widths_digest

    extra = dict(extra or {})
    head = {"method": extra.pop("method")} if "method" in extra else {}
    inputs = {
        "format": POWER_FORMAT,
        **head,
        "sizes": sizes.to_dict(),
        "simulations": simulations,
        "seed": seed,
        "assumptions": assumptions.to_dict(),
        "features": dict(sizes.features),
        "strata": [list(s) for s in sizes.strata],
        "widths_sha256": widths_digest(fit.widths) if fit else file_sha256(widths_file),
        "hypotheses": [h[0] for h in sizes.hypotheses],
        "mde_target": 0.8,
        "mde_steps": 5,
        **extra,
    }
    if fit is not None:
        inputs["fit"] = fit.record
    return inputs


def stage_spec(sizes: StudySizes, assumptions: PowerAssumptions, inputs: Mapping) -> PowerSpec:
    """The :class:`~analysis.power.spec.PowerSpec` of a stage's :func:`stage_inputs`
    (``simulations``, ``seed``, ``hypotheses``, ``mde_target``, ``mde_steps`` and, method
    3 only, ``placement_simulations``)."""
    return PowerSpec(
        simulations=inputs["simulations"],
        sizes=sizes,
        assumptions=assumptions,
        random_state=inputs["seed"],
        hypotheses=inputs["hypotheses"],
        mde_target=inputs["mde_target"],
        mde_steps=inputs["mde_steps"],
        placement_simulations=inputs.get("placement_simulations"),
    )


def stage_record(
    design_path: Path,
    inputs: Mapping[str, Any],
    result: Mapping[str, Any],
    summary: str,
    provenance: Mapping[str, Any],
    t0: float,
) -> dict[str, Any]:
    """The stored power record: format, design, key, inputs, result, summary and the
    provenance (``command``, ``computed_under_lock``, ``note``) completed with the
    package version, git commit, time and the wall seconds since ``t0``."""
    return {
        "format": POWER_FILE_FORMAT,
        "design": Path(design_path).name,
        "key": power_key(inputs),
        "inputs": inputs,
        "result": result,
        "summary": summary,
        "provenance": {
            "package_version": __version__,
            "git_commit": git_commit(),
            "computed_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "computed_under_lock": provenance["computed_under_lock"],
            "command": provenance["command"],
            "wall_seconds": round(time.perf_counter() - t0, 1),
            "note": provenance["note"],
        },
    }


def power_key(inputs: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of a power stage's inputs."""
    text = json.dumps(inputs, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _command(study: Study, simulations: int, assumptions: PowerAssumptions) -> str:
    """The command line that computes this record (what the provenance names)."""
    cmd = (
        f"attnrank run preregistration/{study.paths.design.name} --power-simulations {simulations}"
    )
    default = PowerAssumptions().native_head_share
    if assumptions.fitted is None and assumptions.native_head_share != default:
        cmd += f" --native-head-share {assumptions.native_head_share:g}"
    return cmd


def _record_in_lock(study: Study, record: Mapping[str, Any]) -> None:
    """Amend the lock with the new power file (an entry in the deviations log)."""
    from analysis.prereg.amend import amend_design
    from analysis.study.core import block_facts, stored_outcomes

    inputs = record["inputs"]
    rates = "; ".join(
        f"{h['hypothesis']} power {h['power']['rate']:.3g}"
        for h in record["result"].get("hypotheses", [])
    )
    reason = (
        f"Power of the design's decisions stored beside it ({power_path(study.paths.design).name}"
        f"): {inputs['simulations']} simulated studies per scenario, seed {inputs['seed']}, "
        f"native head share {inputs['assumptions'].get('native_head_share')}, computed by "
        f"`{record['provenance']['command']}`"
        + (f" ({rates})" if rates else "")
        + ". A fact about the design, not an outcome: held-out heads, models, metrics and "
        "inference are unchanged, and so is the lock hash."
    )
    amend_design(
        study.paths.design,
        reason=reason,
        outcomes=stored_outcomes(study.paths, lock_record=study.lock.record),
        **block_facts(study.design, root=study.paths.root),
    )
