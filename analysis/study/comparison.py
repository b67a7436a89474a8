"""Stage 4: the pre-specified nested comparisons on the sealed table.

The descriptor table's covariate columns must be the ones the lock lists for each block
(``analysis.prereg.check_descriptor_columns``). Held-out rows are released once, the result
stamped with the lock hash; the calibration maps are in-sample or cross-fitted by head as
the design's ``[descriptors] calibration`` says (``Design.comparison_kwargs``); the OLS
sensitivity refit and the exploratory head-level analysis (training heads only) follow;
with ``[inference] by_checkpoint = true`` so do the secondary by-checkpoint effects of the
same fits on the same released rows and the held-out predictions, and with
``[inference] by_length = true`` the secondary effects by input length. Everything is
stored with a hash of its inputs, so an unchanged study is not refitted. A design with
``method = 3`` reaches the comparison through ``Design.comparison_kwargs()``
(``ComparisonSpec.method``): its ``comparison.csv`` decides by
:func:`analysis.compare.decisions.decide` (with ``non_superiority_p`` beside the TOST
``equivalence_p``) and its ``lr_tests.csv`` holds cluster-robust Wald tests.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.study.core import Study
from analysis.study.records import read_json, write_frame, write_json
from analysis.study.refit_store import discard, stage_refits
from analysis.validation import ParameterError

__all__ = [
    "compare_stage",
    "comparison_table",
    "covariate_columns",
    "fit_comparisons",
    "secondary_by_checkpoint",
    "secondary_by_length",
    "stored_comparison_table",
]


def _frame_digest(*frames: pd.DataFrame) -> str:
    h = hashlib.sha256()
    for f in frames:
        h.update(pd.util.hash_pandas_object(f, index=False).to_numpy().tobytes())
        h.update("|".join(map(str, f.columns)).encode())
    return h.hexdigest()


def covariate_columns(features: pd.DataFrame, registry: Any) -> tuple[list[str], list[str]]:
    """(covariate columns, log-scale columns) per ``registry`` (the study's
    :class:`~analysis.descriptors.Registry`); diagnostics are dropped.

    Examples
    --------
    ``intrinsic__q_r1`` is a per-r diagnostic, not a covariate; counts and condition
    numbers enter as logs:

    >>> import pandas as pd
    >>> from analysis.descriptors import builtin_registry
    >>> from analysis.study.comparison import covariate_columns
    >>> columns = ["cell_key", "baseline__n_keys", "baseline__entropy_mean", "native__kappa",
    ...            "intrinsic__q_r1"]
    >>> covs, logs = covariate_columns(pd.DataFrame(columns=columns), builtin_registry())
    >>> covs, logs
    (['baseline__n_keys', 'baseline__entropy_mean', 'native__kappa'],
     ['baseline__n_keys', 'native__kappa'])
    """
    info = registry.feature_table([c for c in features.columns if "__" in c])
    cov = info.loc[info["kind"] == "covariate"]
    return list(cov["column"]), list(cov.loc[cov["log_scale"], "column"])


def fit_comparisons(
    confirmatory: pd.DataFrame,
    training: pd.DataFrame,
    models: Mapping[str, Sequence[str]],
    *,
    log_columns: Sequence[str],
    lock_sha256: str,
    kwargs: Mapping[str, Any],
    registry: Any,
) -> tuple[Any, Any, Any]:
    """The study's three fits: the confirmatory comparison, its OLS refit, the head level.

    Parameters
    ----------
    confirmatory : DataFrame
        Every cell, held-out included (the one release of the sealed table).
    training : DataFrame
        Training cells only (for the exploratory head-level analysis).
    models : mapping
        Model name -> blocks (the design's ``[models]``).
    log_columns : sequence of str
        Model columns entered as natural logs.
    lock_sha256 : str
        The locked design hash stamped on the comparisons.
    kwargs : mapping
        :meth:`analysis.prereg.Design.comparison_kwargs`.
    registry : analysis.descriptors.Registry
        The study's descriptor registry (``Study.registry``): block order, calibrated
        blocks and diagnostic columns.

    Returns
    -------
    (ComparisonResult, ComparisonResult, HeadLevelResult)
        The design's estimator, the OLS refit (its main rows: no sensitivity rows), the
        head-level analysis (its across-head folds seeded by the design's inference seed).

    Examples
    --------
    A tidy table where y depends on both blocks, and the parts of a design that fix the
    comparison (a real one comes from :func:`analysis.prereg.load_design`):

    >>> from pathlib import Path
    >>> from analysis.descriptors import builtin_registry
    >>> from analysis.prereg.design import Design
    >>> from analysis.study.comparison import fit_comparisons
    >>> from analysis.datasets import example_study_table
    >>> table = example_study_table()  # 20 heads of 4 cells, 6 held out; native informs y
    >>> data = {
    ...     "models": {"M0": ["baseline"], "M1": ["baseline", "native"]},
    ...     "descriptors": {"calibration": "in-sample"}, "metrics": {"primary": "interval_sq_loss"},
    ...     "inference": {"bootstrap_replicates": 99, "seed": 1, "alpha": 0.05,
    ...                   "family": [["M0", "M1"]]},
    ... }
    >>> design = Design(Path("toy.toml"), data, sha256="0" * 64)
    >>> res, ols, hl = fit_comparisons(
    ...     table, table.loc[~table["held_out"]], design.models, log_columns=["native__kappa"],
    ...     lock_sha256="a" * 64, kwargs=design.comparison_kwargs(), registry=builtin_registry(),
    ... )
    >>> res.adds_information("M0", "M1"), ols.adds_information("M0", "M1")
    (True, True)
    >>> set(res.to_frame()["lock_sha256"]) == {"a" * 64}
    True
    >>> gains = hl.to_frame().query("model == 'M1'")["gain_vs_base"]
    >>> bool((gains > 0).all())  # M1 predicts new cells and new heads better
    True
    """
    from dataclasses import replace

    from analysis.compare import (
        ComparisonSpec,
        HeadLevelAnalysis,
        HeadLevelSpec,
        NestedComparison,
    )

    # Block order, calibrated blocks and diagnostic columns come from the descriptor
    # registry: compare itself names no block.
    spec = ComparisonSpec(
        models=models,
        log_columns=log_columns,
        lock_sha256=lock_sha256,
        **kwargs,
        **registry.covariate_kwargs(confirmatory.columns),
    )
    res = NestedComparison(spec).fit(confirmatory)
    # the OLS refit's main rows only (comparison_ols.csv): its sensitivity rows were never
    # written, and with checkpoint effects and a refit bootstrap they are (1 + families)
    # x R refits; its rows are final before any sensitivity draws from its generator
    ols = NestedComparison(replace(spec, estimator="ols", sensitivities=False)).fit(confirmatory)
    hl_spec = HeadLevelSpec(
        models=models,
        log_columns=log_columns,
        estimator=kwargs["estimator"],
        random_state=kwargs["random_state"],
        **registry.covariate_kwargs(training.columns),
    )
    return res, ols, HeadLevelAnalysis(hl_spec).fit(training)


def comparison_table(
    study: Study, brackets: pd.DataFrame, features: pd.DataFrame
) -> tuple[pd.DataFrame, list[str], dict[str, int]]:
    """The tidy table the comparison fits: real cells with brackets and finite covariates.

    Returns
    -------
    table : DataFrame
        ``cell_key``, ``cluster`` (head id), ``stratum`` (checkpoint), ``y_lower``,
        ``y_upper`` (log2 bracket ends), ``input_id``, ``length`` and the models'
        covariate columns, sorted by ``cell_key``; no ``held_out`` column (the sealing
        adds it).
    log_columns : list of str
        The model columns that enter as natural logs.
    excluded : dict
        Cells excluded by rule (``missing_bracket``, ``missing_descriptors``,
        ``non_finite_covariate``).

    Raises
    ------
    analysis.prereg.PreregistrationError
        When the descriptor table's covariate columns of a design block differ from the
        lock's.

    Examples
    --------
    A small locked design (8 heads x 2 temperatures x 2 eps = 32 planned real cells), and
    three real cells by hand, one with a covariate that is not finite:

    >>> import numpy as np
    >>> import pandas as pd
    >>> from analysis.prereg import PreregistrationError
    >>> from analysis.study.comparison import comparison_table
    >>> from analysis.datasets import open_example_study
    >>> study = open_example_study("studies/table.toml")
    >>> brackets = pd.DataFrame({
    ...     "cell_key": ["c1", "c2", "c3"], "source": "checkpoint", "checkpoint": "org/tiny",
    ...     "head_id": ["org/tiny:0:0", "org/tiny:1:1", "org/tiny:1:2"], "held_out": False,
    ...     "lo": [4, 2, 1], "hi": [8, 2, 2], "input_id": "corpus:0", "length": 16,
    ...     "temperature": 1.0, "eps": 0.1,
    ... })
    >>> locked = study.lock.record["blocks"]
    >>> covs = [f"{b}__{c}" for b in ("baseline", "native") for c in locked[b]["covariates"]]
    >>> features = pd.DataFrame(1.0, index=range(3), columns=covs)
    >>> features["cell_key"] = ["c1", "c2", "c3"]
    >>> features.loc[2, "native__kappa"] = np.nan
    >>> table, log_columns, excluded = comparison_table(study, brackets, features)
    >>> table[["cell_key", "cluster", "stratum", "y_lower", "y_upper"]].to_dict("list")  # log2 ends
    {'cell_key': ['c1', 'c2'], 'cluster': ['org/tiny:0:0', 'org/tiny:1:1'],
     'stratum': ['org/tiny', 'org/tiny'], 'y_lower': [2.0, 1.0], 'y_upper': [3.0, 1.0]}
    >>> excluded  # 32 planned cells, 3 bracketed
    {'missing_bracket': 29, 'missing_descriptors': 0, 'non_finite_covariate': 1}
    >>> try:  # a covariate of the lock is missing from the descriptor table
    ...     comparison_table(study, brackets, features.drop(columns="native__kappa"))
    ... except PreregistrationError:
    ...     print("refused")
    refused
    """
    from analysis.prereg.lock import check_descriptor_columns

    design, plan = study.design, study.plan
    real = brackets.loc[brackets["source"] == "checkpoint"]
    covs, logs = covariate_columns(features, study.registry)
    if len(features):  # no descriptor at all is refused by the caller, naming the cells
        check_descriptor_columns(study.lock, covs)  # before anything is fitted or reused
    table = real.merge(features[["cell_key", *covs]], on="cell_key", how="inner")
    model_cols = sorted(
        {
            c
            for blocks in design.models.values()
            for b in blocks
            for c in covs
            if c.startswith(b + "__")
        }
    )
    missing_features = len(real) - len(table)
    finite = np.isfinite(table[model_cols].to_numpy(float)).all(axis=1) if model_cols else None
    excluded = {
        "missing_bracket": int(plan.planned_real_cells - len(real)),
        "missing_descriptors": int(missing_features),
        "non_finite_covariate": int(0 if finite is None else (~finite).sum()),
    }
    if finite is not None:
        table = table.loc[finite]
    table = table.assign(
        cluster=table["head_id"],
        # the held-out draw is per checkpoint, so the bootstrap resamples within it
        stratum=table["checkpoint"].astype(str),
        y_lower=np.log2(table["lo"].astype(float)),
        y_upper=np.log2(table["hi"].astype(float)),
    ).drop(columns=["held_out"])
    # the design variables travel with the cells: the head-level folds check them
    design_vars = ["input_id", "length", "temperature", "eps"]
    keep = ["cell_key", "cluster", "stratum", "y_lower", "y_upper", *design_vars, *model_cols]
    table = table.loc[:, keep].sort_values("cell_key").reset_index(drop=True)
    # a coarser resampling unit (kv_group / checkpoint_layer) is one more column; designs
    # that resample heads keep the table, and so the comparison digest, they always had
    table = _with_unit(study, table)
    log_cols = [c for c in logs if c in model_cols]
    return table, log_cols, excluded


def stored_comparison_table(
    design_path: str | Path, *, root: str | Path | None = None
) -> tuple[pd.DataFrame, list[str], Study]:
    """The comparison table of a study's stored cells, training and held-out.

    What the compare stage fits, read back from the study's store and descriptor files
    (:func:`comparison_table`; no cell is released or recorded), for tools that work on a
    finished study: the power simulator's fit to training heads, exploratory
    re-analyses.

    Parameters
    ----------
    design_path : str or Path
        The locked design.
    root : str or Path, keyword-only, optional
        The study root (default: the design folder's parent).

    Returns
    -------
    (DataFrame, list of str, Study)
        The table (``held_out`` not set), its log-scale columns and the opened study.

    Raises
    ------
    FileNotFoundError
        When the study has no store, or no brackets or descriptors yet.

    Examples
    --------
    A locked study that has not run yet has nothing to read back:

    >>> from analysis.study.comparison import stored_comparison_table
    >>> from analysis.datasets import open_example_study
    >>> _ = open_example_study("studies/stored.toml")
    >>> stored_comparison_table("studies/stored.toml")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    FileNotFoundError: no study store at .../store: nothing to fit to
    """
    from analysis.store import Store
    from analysis.study.results import bracket_table, cells_engine, feature_table

    study = Study.open(Path(design_path), root=root)
    paths = study.paths
    if not (paths.store / Store.INDEX).is_file():
        raise FileNotFoundError(f"no study store at {paths.store}: nothing to fit to")
    with Store(paths.store) as store:
        real_keys = study.real_keys()
        label = cells_engine(study)
        brackets = bracket_table(store, study.plan, real_keys, [], study.design.held_out, label)
    features = feature_table(paths, real_keys)
    if features.empty or brackets.empty:
        raise FileNotFoundError(f"the study under {paths.root} has no descriptors yet")
    table, log_cols, _ = comparison_table(study, brackets, features)
    return table, list(log_cols), study


def _with_unit(study: Study, table: pd.DataFrame) -> pd.DataFrame:
    from analysis.store import Store
    from analysis.study.units import unit_column

    unit = study.design.comparison_options()["resampling_unit"]
    if unit != "kv_group" or table.empty:
        return unit_column(table, unit)
    with Store(study.paths.store) as store:
        return unit_column(table, unit, store=store)


def secondary_by_checkpoint(
    study: Study, result: Any, confirmatory: pd.DataFrame
) -> tuple[Any, pd.DataFrame]:
    """The design's secondary by-checkpoint effects and the held-out predictions.

    Parameters
    ----------
    study : Study
    result : ComparisonResult
        The confirmatory comparison, fitted on ``confirmatory``.
    confirmatory : DataFrame
        The one release of the sealed table (its ``stratum`` is the checkpoint).

    Returns
    -------
    (CheckpointEffects, DataFrame)
        :func:`analysis.compare.effects_by_checkpoint` with the design's inference seed,
        CI level and hypothesis ids, and :func:`analysis.compare.held_out_predictions`.

    Examples
    --------
    A small locked design (its hypothesis H1 is the pair M0 < M1), and a tidy table of
    two checkpoints standing in for the study's released cells:

    >>> from analysis.compare import ComparisonSpec, NestedComparison
    >>> from analysis.study.comparison import secondary_by_checkpoint
    >>> from analysis.datasets import open_example_study
    >>> study = open_example_study("studies/secondary.toml")
    >>> from analysis.datasets import example_study_table
    >>> table = example_study_table()  # 20 heads of 4 cells, 6 held out; native informs y
    >>> spec = ComparisonSpec(
    ...     models=study.design.models, log_columns=["native__kappa"],
    ...     lock_sha256=study.lock.sha256, **study.design.comparison_kwargs(),
    ... )
    >>> result = NestedComparison(spec).fit(table)
    >>> effects, predictions = secondary_by_checkpoint(study, result, table)
    >>> effects.to_frame()[["hypothesis", "checkpoint", "held_out_heads", "seed"]].to_dict("list")
    {'hypothesis': ['H1', 'H1'], 'checkpoint': ['ck-a', 'ck-b'], 'held_out_heads': [3, 3],
     'seed': [1, 1]}
    >>> len(predictions) == 2 * int(table["held_out"].sum())  # each held-out cell, by M0 and M1
    True
    """
    from analysis.compare import effects_by_checkpoint, held_out_predictions

    kw = study.design.comparison_kwargs()
    effects = effects_by_checkpoint(
        result,
        confirmatory,
        seed=kw["random_state"],
        ci_level=kw["ci_level"],
        labels=_hypothesis_labels(study),
    )
    return effects, held_out_predictions(result, confirmatory)


def _hypothesis_labels(study: Study) -> dict[str, str]:
    return {f"{h['pair'][0]}<{h['pair'][1]}": str(h["id"]) for h in study.design.data["hypotheses"]}


def secondary_by_length(study: Study, result: Any, confirmatory: pd.DataFrame) -> Any:
    """The design's secondary effects by input length.

    Parameters
    ----------
    study : Study
    result : ComparisonResult
        The confirmatory comparison, fitted on ``confirmatory``.
    confirmatory : DataFrame
        The one release of the sealed table (its ``length`` column is the cell's input
        length).

    Returns
    -------
    LengthEffects
        :func:`analysis.compare.effects_by_length` with the design's inference seed, CI
        level and hypothesis ids.

    Examples
    --------
    A small locked design (its hypothesis H1 is the pair M0 < M1), and a tidy table of
    inputs at lengths 16 and 32 standing in for the study's released cells:

    >>> from analysis.compare import ComparisonSpec, NestedComparison
    >>> from analysis.study.comparison import secondary_by_length
    >>> from analysis.datasets import example_study_table, open_example_study
    >>> study = open_example_study("studies/by-length.toml")
    >>> table = example_study_table()  # 20 heads of 4 cells, 6 held out; native informs y
    >>> spec = ComparisonSpec(
    ...     models=study.design.models, log_columns=["native__kappa"],
    ...     lock_sha256=study.lock.sha256, **study.design.comparison_kwargs(),
    ... )
    >>> result = NestedComparison(spec).fit(table)
    >>> effects = secondary_by_length(study, result, table)
    >>> effects.to_frame()[["hypothesis", "length", "held_out_heads", "spawn_key"]].to_dict("list")
    {'hypothesis': ['H1', 'H1'], 'length': [16, 32], 'held_out_heads': [6, 6],
     'spawn_key': ['2,0,0', '2,0,1']}
    """
    from analysis.compare import effects_by_length

    kw = study.design.comparison_kwargs()
    return effects_by_length(
        result,
        confirmatory,
        seed=kw["random_state"],
        ci_level=kw["ci_level"],
        labels=_hypothesis_labels(study),
    )


def compare_stage(
    study: Study,
    brackets: pd.DataFrame,
    features: pd.DataFrame,
    say: Callable[[str], None],
    *,
    executor: Any = None,
    workers: int = 1,
    progress: bool = False,
) -> dict[str, Any]:
    """Run (or reuse) the confirmatory comparison, its OLS refit and the head-level analysis.

    A design with a refit bootstrap (method 3) refits every model ``refit_replicates``
    times, in the main comparison, in each of its leave-one-family-out refits and in the
    OLS refit; those refits run on ``executor`` (or ``workers`` local processes), each kept
    under ``results/refits/<code>/`` as it finishes (``<code>``: the first 16 hex digits
    of the analysis code's SHA-256), so a stopped stage resumes where it was with the same
    code (the folder is removed once the results are written). The numbers do not depend
    on where the refits ran.

    Raises
    ------
    analysis.prereg.PreregistrationError
        When the descriptor table's covariate columns of a design block differ from the
        lock (the message names the block and says how to amend).

    Examples
    --------
    A comparison needs brackets and descriptors of real heads, training and held-out
    (model weights), so this example shows only its refusal on a study without them;
    :func:`fit_comparisons` shows the fits on a small table:

    >>> import pandas as pd
    >>> from analysis.study.comparison import compare_stage
    >>> from analysis.datasets import open_example_study
    >>> study = open_example_study("studies/stage.toml")
    >>> brackets = pd.DataFrame(columns=["cell_key", "source", "checkpoint", "head_id",
    ...     "held_out", "lo", "hi", "input_id", "length", "temperature", "eps"])
    >>> compare_stage(study, brackets, pd.DataFrame(columns=["cell_key"]), say=print)
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: cells: expected training and held-out cells ..., got 0
    >>> study.paths.results.exists()  # nothing fitted, nothing written
    False
    """
    from analysis.prereg.sealing import SealedCells
    from analysis.study.power_sesoi import confirmatory_kwargs  # sesoi_share: power file

    design, paths = study.design, study.paths
    table, log_cols, excluded = comparison_table(study, brackets, features)
    # compare/7: results carry the calibration (mode, folds, seed); the head-level
    # analysis answers the within-head and across-head questions; the bootstrap resamples
    # held-out heads within checkpoints (the table has a stratum column). The key holds
    # the lock hash, not only the design's: an amended design or block refits and restamps
    digest = f"compare/7:{_frame_digest(table)}:{study.lock.sha256}"
    record_file = paths.results / "compare.json"
    record = read_json(record_file, {})
    # a record without the by-checkpoint (by-length) effects the design asks for (or with
    # ones it no longer asks for) is stale like one of other inputs: everything is refitted, so the
    # secondary rows always come from the fits of the stored comparison
    if (
        record.get("inputs_sha256") == digest
        and bool(record.get("by_checkpoint", False)) == design.by_checkpoint
        and bool(record.get("by_length", False)) == design.by_length
        and bool(record.get("extrapolation", False)) == _reports_extrapolation(design)
        and bool(record.get("sesoi_sensitivity", False)) == (design.method == 3)
        and all((paths.results / f).is_file() for f in record.get("files", []))
    ):
        say("compare: inputs unchanged, stored results reused")
        return record
    # the lock checked when the study was opened; the design is not read again
    sealed = SealedCells(table, paths.design, lock=study.lock)
    if table.empty or not (~table["cluster"].isin(set(design.held_out))).any():
        raise ParameterError(
            "cells", "training and held-out cells with brackets and descriptors", len(table)
        )
    train = sealed.training()
    conf = sealed.release_confirmatory()
    paths.results.mkdir(parents=True, exist_ok=True)
    kwargs = confirmatory_kwargs(study)
    with stage_refits(
        paths.results,
        conf.table,
        kwargs,
        executor=executor,
        workers=workers,
        say=say,
        progress=progress,
    ) as refits:
        res, ols, hl = fit_comparisons(
            conf.table,
            train,
            design.models,
            log_columns=log_cols,
            lock_sha256=conf.lock_sha256,
            kwargs=kwargs,
            registry=study.registry,
        )
    outputs = [
        ("comparison.csv", res.to_frame()),
        ("comparison_ols.csv", ols.to_frame()),
        ("lr_tests.csv", res.lr_tests),
        ("head_level.csv", hl.to_frame()),
    ]
    if not res.sensitivity.empty:  # only designs that ask for checkpoint effects or refits
        outputs.append(("sensitivity.csv", res.sensitivity))
    by_ck = None
    if design.by_checkpoint:
        # the same fits and the same released rows: no refit, no second release
        by_ck, preds = secondary_by_checkpoint(study, res, conf.table)
        outputs += [("by_checkpoint.csv", by_ck.to_frame()), ("held_out_predictions.csv", preds)]
    by_len = None
    if design.by_length:
        by_len = secondary_by_length(study, res, conf.table)
        outputs.append(("by_length.csv", by_len.to_frame()))
    extrap = res.extrapolation() if _reports_extrapolation(design) else None
    if extrap is not None:  # method 3 (or the key stated): method-2 studies' files as before
        outputs += [
            ("extrapolation.csv", extrap.to_frame()),
            ("extrapolation_cells.csv", extrap.cells),
        ]
    sens = res.sesoi_sensitivity  # method 3 only: method-2 studies' files as before
    if sens is not None:
        outputs.append(("sesoi_sensitivity.csv", sens))
    files = []
    for name, frame in outputs:
        write_frame(paths.results / name, frame)
        files.append(name)
    record = {
        "inputs_sha256": digest,
        "lock_sha256": conf.lock_sha256,
        "held_out_sha256": conf.held_out_sha256,
        "missing_heads": list(conf.missing_heads),
        "dropped_columns": sorted(
            f"{r.column} ({r.model}: {r.reason})" for r in res.dropped.itertuples()
        ),
        "excluded": excluded,
        "n_cells": len(table),
        "calibration": res.calibration.record(),
        "head_level_meta": hl.meta(),
        "files": files,
        "summary": res.summary(),
        "by_checkpoint": by_ck is not None,
        "by_length": by_len is not None,
        **({"sesoi_sensitivity": True} if sens is not None else {}),
    }
    if by_ck is not None:
        record["by_checkpoint_summary"] = by_ck.summary()
    if by_len is not None:
        record["by_length_summary"] = by_len.summary()
    if extrap is not None:
        record.update(extrapolation=True, extrapolation_summary=extrap.summary())
    write_json(record_file, record)
    discard(refits)  # a resume aid only: the results are written
    say(res.summary())
    if by_ck is not None:
        say(by_ck.summary())
    if by_len is not None:
        say(by_len.summary())
    if extrap is not None:
        say(extrap.summary())
    return record


def _reports_extrapolation(design: Any) -> bool:
    """Method 3, or ``[inference] extrapolation`` stated: write the extrapolation tables."""
    return design.method == 3 or "extrapolation" in design.data["inference"]
