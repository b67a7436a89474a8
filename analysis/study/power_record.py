"""What both power stages share: the stored record's format and key, the command that
computes it, its entry in the lock, and the collinearity screen of training cells
(:mod:`analysis.study.power` for method 2, :mod:`analysis.study.power_decisions` for
method 3).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from analysis.power.inputs import PowerAssumptions
from analysis.prereg.provenance import power_path
from analysis.study.core import Study

__all__ = ["POWER_FORMAT", "power_key", "screen_training"]

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
        outcomes=stored_outcomes(study.paths),
        **block_facts(study.design, root=study.paths.root),
    )
