"""Tables and provenance from a study's stored stages, assembled into ``StudyResults``.

Nothing here computes a bracket, a descriptor or a fit: it reads the store, the descriptor
CSVs and the compare stage's files.
"""

from __future__ import annotations

import importlib.metadata
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysis.prereg.design import Design
from analysis.prereg.options import design_resampling_unit
from analysis.study.core import Study, git_commit
from analysis.study.paths import StudyPaths
from analysis.study.plan import StudyPlan
from analysis.study.records import read_json
from analysis.validation import ParameterError

__all__ = [
    "LIBRARIES",
    "bracket_table",
    "feature_table",
    "load_results",
    "power_record",
    "provenance",
    "report_design",
    "study_results",
]

LIBRARIES = (
    "torch",
    "numpy",
    "scipy",
    "pandas",
    "statsmodels",
    "scikit-learn",
    "seaborn",
    "matplotlib",
    "transformers",
)


def _family_of(checkpoint: str) -> str:
    c = checkpoint.lower()
    for needle, fam in (
        ("minilm", "bert"),
        ("bert", "bert"),
        ("gpt2", "gpt2"),
        ("qwen", "qwen2"),
        ("deit", "deit"),
        ("vit", "vit"),
    ):
        if needle in c:
            return fam
    return c.rsplit("/", 1)[-1]


def bracket_table(
    store: Any,
    plan: StudyPlan,
    real_keys: Sequence[str],
    synth_keys: Sequence[str],
    held_out: Sequence[str],
    engine: str | int | None = None,
) -> pd.DataFrame:
    """One row per planned cell that has a bracket (``StudyResults.brackets`` columns).

    The brackets are those of one engine (``engine``: the label recorded with its
    profiles, see :func:`cells_engine`; None: the only engine the store holds): a store
    that holds several is never read as a mix (:meth:`analysis.store.Store.cells`).

    Examples
    --------
    Real cells need a checkpoint's weights; the design's two synthetic matrices (beta 1
    and 4, bracketed at t = 1 for each of its 2 eps) give 4 rows:

    >>> from analysis.report.results import BRACKET_COLUMNS
    >>> from analysis.store import Store
    >>> from analysis.study.stages import bracket_stage, synthetic_stage
    >>> from analysis.executor import RunSpec
    >>> from analysis.datasets import open_example_study
    >>> study = open_example_study("studies/table.toml", synthetic=True)
    >>> with Store(study.paths.store, create=True) as store:
    ...     keys = synthetic_stage(study, store)
    ...     _ = bracket_stage(study, store, [], keys, engine=None, run=RunSpec(progress=False))
    ...     table = bracket_table(store, study.plan, [], keys, study.design.held_out)
    >>> list(table.columns) == list(BRACKET_COLUMNS), len(table), sorted(set(table["beta"]))
    (True, 4, [1.0, 4.0])
    >>> set(table["source"]), set(table["checkpoint"]), bool(table["held_out"].any())
    ({'synthetic'}, {'ball'}, False)
    """
    from analysis.report.results import BRACKET_COLUMNS

    cells = store.cells(version=plan.effort, engine=engine)
    real, synth = set(real_keys), set(synth_keys)
    temps = set(plan.temperatures)
    eps = set(plan.eps)
    keep = cells["eps"].isin(eps) & (
        (cells["matrix_key"].isin(real) & cells["temperature"].isin(temps))
        | (cells["matrix_key"].isin(synth) & (cells["temperature"] == 1.0))
    )
    cells = cells.loc[keep].reset_index(drop=True)
    is_syn = cells["source"] == "synthetic"
    meta = {r.key: r.meta for r in store.matrices(source="synthetic")} if is_syn.any() else {}
    params = [
        meta.get(k, {}).get("params", {}) if s else {}
        for k, s in zip(cells["matrix_key"], is_syn, strict=True)
    ]
    fam_syn = [meta.get(k, {}).get("family", "") for k in cells["matrix_key"]]
    out = pd.DataFrame(
        {
            "cell_key": cells["cell_key"],
            "matrix_key": cells["matrix_key"],
            "source": cells["source"],
            "checkpoint": np.where(is_syn, fam_syn, cells["checkpoint"]),
            "family": [
                f if s else _family_of(c)
                for f, s, c in zip(fam_syn, is_syn, cells["checkpoint"], strict=True)
            ],
            "head_id": np.where(is_syn, "", cells["head_id"]),
            "layer": cells["layer"].astype(int),
            "head": cells["head"].astype(int),
            "input_id": cells["input_id"],
            "length": cells["length"].astype(int),
            "temperature": cells["temperature"].astype(float),
            "eps": cells["eps"].astype(float),
            "lo": cells["lo"].astype(int),
            "hi": cells["hi"].astype(int),
        }
    )
    out["closed"] = out["lo"] == out["hi"]
    out["held_out"] = (~is_syn) & cells["head_id"].isin(set(held_out))
    for name in ("d", "beta", "seed"):
        out[name] = [
            float(p[name]) if name in p and p[name] is not None else np.nan for p in params
        ]
    return out.loc[:, list(BRACKET_COLUMNS)]


def feature_table(paths: StudyPaths, real_keys: Sequence[str]) -> pd.DataFrame:
    """``cell_key`` + ``BLOCK__feature`` for every described real cell.

    Examples
    --------
    One matrix described at two temperatures (its feature file, as the descriptor stage
    writes it); a matrix without one (m0) is left out:

    >>> import pandas as pd
    >>> from analysis.study.paths import study_paths
    >>> paths = study_paths("studies/features.toml")
    >>> paths.feature_file("m1").parent.mkdir(parents=True, exist_ok=True)
    >>> pd.DataFrame({"temperature": [0.5, 1.0], "eps": [0.1, 0.1],
    ...               "native__kappa": [1.5, 2.5]}).to_csv(paths.feature_file("m1"), index=False)
    >>> table = feature_table(paths, ["m0", "m1"])
    >>> list(table.columns), table["cell_key"].nunique(), list(table["native__kappa"])
    (['cell_key', 'native__kappa'], 2, [1.5, 2.5])
    """
    from analysis.store.keys import cell_key

    frames = []
    for k in real_keys:
        f = paths.feature_file(k)
        if not f.is_file():
            continue
        df = pd.read_csv(f)
        keys = pd.Series(
            [cell_key(k, t, e) for t, e in zip(df["temperature"], df["eps"], strict=True)],
            name="cell_key",
        )
        frames.append(pd.concat([keys, df.drop(columns=["temperature", "eps"])], axis=1))
    if not frames:
        return pd.DataFrame({"cell_key": pd.Series(dtype=str)})
    return pd.concat(frames, ignore_index=True)


def stored_synthetic_keys(study: Study, store: Any) -> list[str]:
    """Stored synthetic keys of the plan, from the input index (nothing is computed)."""
    keys = (study.extractions.synthetic_key(t.label) for t in study.plan.synthetic)
    return [k for k in keys if k is not None and store.has_matrix(k)]


def _library_versions() -> dict[str, str]:
    out = {}
    for lib in LIBRARIES:
        try:
            out[lib] = importlib.metadata.version(lib)
        except importlib.metadata.PackageNotFoundError:
            out[lib] = "not installed"
    return out


def provenance(study: Study, stages: Mapping[str, Any]) -> dict:
    """The report's ``provenance.json``: hashes, lock time and amendments, versions, seeds,
    stage seconds.

    ``stages`` is the stage record (``stages.json``: ``last_run_seconds``,
    ``total_seconds``, ``runs``).

    Examples
    --------
    The seeds are the design's (inputs 0, inference 1, held-out draw 7):

    >>> from analysis.datasets import open_example_study
    >>> study = open_example_study("studies/prov.toml")
    >>> prov = provenance(study, {"last_run_seconds": {"brackets": 2.5}})
    >>> prov["seeds"], prov["stage_seconds"], prov["power"]  # no power file: None
    ({'inputs': 0, 'inference': 1, 'held_out_draw': 7}, {'brackets': 2.5}, None)
    >>> prov["lock_sha256"] == study.lock.sha256, prov["design_sha256"] == study.design.sha256
    (True, True)
    """
    from analysis import __version__

    design, lock = study.design, study.lock
    inf = design.data["inference"]
    # every amendment of the lock, as the lock lists it (deviations log: beside the design)
    amendments = [
        {
            k: a.get(k)
            for k in (
                "time",
                "reason",
                "sections",
                "changes",
                "outcomes_existed",
                "previous_design_sha256",
                "new_design_sha256",
                "previous_lock_sha256",
                "new_lock_sha256",
            )
        }
        for a in lock.record.get("amendments", [])
    ]
    return {
        **_lock_provenance(study),
        "design": str(design.path),
        "design_sha256": design.sha256,
        "lock_sha256": lock.sha256,
        "held_out_sha256": lock.held_out_sha256,
        "locked_at": lock.record.get("locked_at"),
        "amendments": amendments,
        "package_version": __version__,
        "git_commit": git_commit(),
        "libraries": _library_versions(),
        "seeds": {
            "inputs": int(design.data["sampling"].get("inputs", {}).get("seed", 0)),
            "inference": int(inf["seed"]),
            "held_out_draw": int(design.data["held_out"]["seed"]),
        },
        "effort": study.plan.effort,
        "engine": study.engine,
        "stage_seconds": dict(stages.get("last_run_seconds", {})),
        "stage_seconds_total": dict(stages.get("total_seconds", {})),
        "runs": int(stages.get("runs", 1)),
        "power": _power_provenance(study),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def _lock_provenance(study: Study) -> dict[str, Any]:
    """What the lock froze and when: its first lock time and history, the locked and the
    current code hash, the first outcome (wherever stored), this run's store's own outcome
    record, and the hypotheses that an amendment after outcomes made exploratory
    (:mod:`analysis.prereg.lock_history`).

    ``first_outcome`` is the design's earliest record anywhere (a shipped design carries
    the original study's beside it, ``FILE.outcomes.json``); it decides which amendments
    came after outcomes. ``store_outcome`` is the record of the store this run read, so a
    report says when *this* run's outcomes first existed.
    """
    from analysis.prereg.code_hash import code_sha256
    from analysis.prereg.lock_history import exploratory_hypotheses, first_locked_at, lock_history
    from analysis.study.outcomes import _store_record, study_outcomes

    record = study.lock.record
    outcomes = study_outcomes(study.paths.design, root=study.paths.root, lock_record=record)
    first = None
    if outcomes is not None:
        first = {k: outcomes.get(k) for k in ("time", "lock_sha256", "design", "store")}
    mine = _store_record(study.paths.store)
    hyps = study.design.data.get("hypotheses", [])
    return {
        "first_locked_at": first_locked_at(record),
        "lock_history": lock_history(record),
        "code_sha256_locked": record.get("code_sha256"),
        "code_sha256_now": code_sha256(),
        "first_outcome": first,
        "store_outcome": (
            {k: mine.get(k) for k in ("time", "lock_sha256", "store")} if mine else None
        ),
        "exploratory_hypotheses": exploratory_hypotheses(record, hyps, (first or {}).get("time")),
    }


def _power_provenance(study: Study) -> dict[str, Any] | None:
    """Where the report's power comes from: the locked file beside the design (or None)."""
    from analysis.power.file import read_power_file
    from analysis.prereg.provenance import power_path

    rec = read_power_file(study.paths.design)
    if rec is None:
        return None
    prov = rec["provenance"]
    return {
        "file": power_path(study.paths.design).name,
        "sha256": study.lock.record.get("power_sha256"),
        "simulations": rec["inputs"].get("simulations"),
        "computed_at": prov.get("computed_at"),
        "computed_under_lock": prov.get("computed_under_lock"),
        "command": prov.get("command"),
    }


def power_record(study: Study) -> dict[str, Any]:
    """The design's stored power (its ``result``), or ``{"skipped": reason}``.

    Reads ``<stem>.power.json`` beside the design (written by
    :func:`analysis.study.power.power_stage` when a run is given ``--power-simulations``);
    its hash was checked against the lock when the study was opened. Without it, the reason
    says that the power was not computed and which command computes it.

    Examples
    --------
    >>> from analysis.power.file import not_computed
    >>> from analysis.datasets import open_example_study
    >>> study = open_example_study("studies/record.toml")
    >>> power_record(study) == {"skipped": not_computed("studies/record.toml")}
    True
    """
    from analysis.power.file import not_computed, read_power_file

    rec = read_power_file(study.paths.design)
    if rec is None:
        return {"skipped": not_computed(study.paths.design)}
    return dict(rec["result"])


def report_design(design: Design, exploratory: Mapping[str, str] | None = None) -> Any:
    """The report's typed view of a parsed design (:class:`analysis.report.ReportDesign`).

    Every inference setting is the one the comparison runs with
    (:meth:`~analysis.prereg.Design.comparison_kwargs`), so the report repeats none of its
    defaults; hypotheses, models, outcome, held-out heads, exclusion rules and the
    calibration text are copied from the validated design. A hypothesis in
    ``exploratory`` (id -> why: an amendment after outcomes, provenance
    ``exploratory_hypotheses``) is shown as ``exploratory (amended after outcomes)``.

    Examples
    --------
    >>> from analysis.prereg import load_design
    >>> from analysis.datasets import write_example_design
    >>> _ = write_example_design("studies/view.toml", temperatures=(0.5, 1.0), eps=(0.1, 0.2))
    >>> view = report_design(load_design("studies/view.toml"))
    >>> [h.pair for h in view.hypotheses], view.held_out
    (['M0<M1'], ('org/tiny:1:1', 'org/tiny:1:2'))
    >>> view.alpha, view.bootstrap_replicates, view.seed, view.primary_metric
    (0.05, 199, 1, 'interval_sq_loss')
    """
    from analysis.report.design import ReportDesign, ReportHypothesis

    data = design.data
    kw = design.comparison_kwargs()
    held = data["held_out"]
    return ReportDesign(
        hypotheses=tuple(
            ReportHypothesis(
                id=str(h["id"]),
                kind=(
                    "exploratory (amended after outcomes)"
                    if str(h["id"]) in (exploratory or {})
                    else str(h["kind"])
                ),
                base=str(h["pair"][0]),
                rich=str(h["pair"][1]),
                statement=str(h.get("statement", "")),
            )
            for h in data.get("hypotheses", [])
        ),
        models=design.models,
        outcome={k: str(v) for k, v in data["outcome"].items()},
        primary_metric=kw["primary_metric"],
        secondary_metrics=tuple(kw["metrics"][1:]),
        estimator=kw["estimator"],
        alpha=kw["alpha"],
        ci_level=kw["ci_level"],
        family=design.family,
        sensitivity_pairs=design.sensitivity_pairs,
        decision=data["inference"].get("decision"),
        bootstrap=kw["bootstrap"],
        cluster=design_resampling_unit(data),
        bootstrap_replicates=kw["n_boot"],
        seed=kw["random_state"],
        held_out=design.held_out,
        held_out_fraction=held.get("fraction"),
        held_out_seed=held.get("seed"),
        held_out_estimand=design.held_out_rule.sentence,
        exclusion_rules=tuple(data.get("exclusions", {}).get("rules", [])),
        calibration=data["descriptors"].get("calibration"),
        by_checkpoint=design.by_checkpoint,
        by_length=design.by_length,
    )


def cells_engine(study: Study, engine: Any = None) -> str:
    """The engine label whose brackets a study reads: ``engine``'s (a bracket engine
    object, as the runner was given), or that of the engine the design pins.

    Examples
    --------
    >>> from analysis.datasets import open_example_study
    >>> from analysis.study.results import cells_engine
    >>> study = open_example_study("studies/label.toml")
    >>> cells_engine(study) == f"analysis.brackets {study.engine}"
    True
    """
    from analysis.store.engine import engine_label

    return engine_label(study.bracket_engine() if engine is None else engine)


def study_results(
    study: Study, *, stages: Mapping[str, Any] | None = None, engine: Any = None
) -> Any:
    """Assemble :class:`analysis.report.results.StudyResults` from an opened study.

    Parameters
    ----------
    study : Study
    stages : mapping, optional, keyword-only
        The stage record when the caller holds it (the runner); read from
        ``stages.json`` otherwise.
    engine : BracketEngine, optional, keyword-only
        The engine whose brackets are read (:func:`cells_engine`; default the one the
        design pins; the runner passes the one it was given).

    Examples
    --------
    Before any run there is no store; with an empty one, nothing was compared:

    >>> from analysis.store import Store
    >>> from analysis.datasets import open_example_study
    >>> study = open_example_study("studies/assemble.toml")
    >>> study_results(study)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: STORE: expected a study store ...
    >>> Store(study.paths.store, create=True).close()
    >>> results = study_results(study)
    >>> results.study, len(results.brackets), results.skipped["comparison"]
    ('assemble', 0, 'the design has no real-checkpoint cells')
    """
    from analysis.report.results import StudyResults
    from analysis.store.store import Store

    paths, plan, design = study.paths, study.plan, study.design
    if not (paths.store / Store.INDEX).is_file():
        raise ParameterError("STORE", "a study store (run `attnrank run` first)", str(paths.store))
    with Store(paths.store) as store:
        real_keys = study.real_keys()
        synth_keys = stored_synthetic_keys(study, store)
        label = cells_engine(study, engine)
        brackets = bracket_table(store, plan, real_keys, synth_keys, design.held_out, label)
        features = feature_table(paths, real_keys)
    record = read_json(paths.results / "compare.json", {})

    def frame(name: str) -> pd.DataFrame | None:
        f = paths.results / name
        return pd.read_csv(f) if name in record.get("files", []) and f.is_file() else None

    skipped = {}
    if not record:
        why = (
            "the design has no real-checkpoint cells"
            if not real_keys
            else "the compare stage has not run yet (run `attnrank run` without --stop-after)"
        )
        skipped = {k: why for k in ("comparison", "comparison_ols", "head_level")}
        if design.by_checkpoint:
            skipped["by_checkpoint"] = why
        if design.by_length:
            skipped["by_length"] = why

    if stages is None:
        stages = read_json(paths.stages_file, {})
    prov = provenance(study, stages)
    if "calibration" in record:  # what the stored comparison ran with
        prov["calibration"] = dict(record["calibration"])
    return StudyResults(
        study=paths.design.stem,
        title=str(design.data.get("title", paths.design.stem)),
        design=report_design(design, prov.get("exploratory_hypotheses")),
        brackets=brackets,
        features=features,
        comparison=frame("comparison.csv"),
        comparison_ols=frame("comparison_ols.csv"),
        head_level=frame("head_level.csv"),
        dropped_columns=list(record.get("dropped_columns", [])),
        excluded=dict(record.get("excluded", {})),
        provenance=prov,
        lr_tests=frame("lr_tests.csv"),
        head_level_meta=dict(record.get("head_level_meta", {})),
        skipped=skipped,
        power=power_record(study),
        by_checkpoint=frame("by_checkpoint.csv"),
        held_out_predictions=frame("held_out_predictions.csv"),
        by_length=frame("by_length.csv"),
        extrapolation=frame("extrapolation.csv"),
        sesoi_sensitivity=frame("sesoi_sensitivity.csv"),
    )


def load_results(
    design_path: str | os.PathLike,
    *,
    root: str | os.PathLike | None = None,
    checkpoint_paths: Mapping[str, Any] | None = None,
    engine: Any = None,
) -> Any:
    """Assemble :class:`analysis.report.results.StudyResults` from a study's stored stages.

    Reads only what is stored (nothing is computed); the comparison frames are None when
    the compare stage has not run. ``checkpoint_paths`` is accepted for symmetry with
    :func:`~analysis.study.runner.run_study` and not used. The brackets read are those of
    the engine the design pins, or of ``engine`` (the one a run was given, e.g. a
    stand-in): :func:`study_results`.

    Examples
    --------
    >>> from analysis.store import Store
    >>> from analysis.datasets import open_example_study
    >>> study = open_example_study("studies/load.toml")
    >>> Store(study.paths.store, create=True).close()
    >>> results = load_results("studies/load.toml")
    >>> results.title, results.comparison is None, "skipped" in results.power
    ('toy', True, True)
    """
    return study_results(Study.open(design_path, root=root), engine=engine)
