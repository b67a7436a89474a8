"""Gather a study's certified brackets, their provenance and its descriptor features.

:func:`build_atlas` reads what a study stored (the store's matrices and profiles, the
input index, the descriptor files) and computes nothing new: each stored profile is read
back with the study's pinned engine, its witnesses re-verified against the stored matrix
and its brackets read off again (the same check :func:`analysis.store.run_brackets` makes
before a study trusts a profile), so a row of the atlas is a certified bracket of the
matrix whose hash it carries.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.atlas.schema import conform, derive_columns
from analysis.study.core import Study
from analysis.validation import ParameterError

__all__ = ["build_atlas", "matrix_sha256", "open_study"]


def matrix_sha256(A: np.ndarray) -> str:
    """SHA-256 of a matrix as float64: its shape, then its little-endian C-order bytes.

    The atlas's ``matrix_sha256``: the hash of the matrix a bracket certifies (the
    store's arrays at the cell's temperature), which a re-extraction from the sources
    must reproduce bit for bit.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.atlas.build import matrix_sha256
    >>> A = np.eye(3)
    >>> matrix_sha256(A) == matrix_sha256(A.astype(np.float32))  # the float64 values
    True
    >>> B = A.copy(); B[0, 1] = np.nextafter(0.0, 1.0)  # the last bit of one entry
    >>> matrix_sha256(A) == matrix_sha256(B)
    False
    """
    A = np.ascontiguousarray(np.asarray(A, dtype="<f8"))
    h = hashlib.sha256(f"float64:{A.shape}".encode())
    h.update(A.tobytes(order="C"))
    return h.hexdigest()


def open_study(study_or_design: Study | str | os.PathLike, root: Any = None) -> Study:
    """``study_or_design`` as an opened :class:`~analysis.study.Study` (a design path is
    opened, its lock checked, under ``root``).

    Examples
    --------
    >>> from analysis.atlas.build import open_study
    >>> from analysis.datasets import open_example_study
    >>> study = open_example_study("studies/open.toml")
    >>> open_study(study) is study, open_study("studies/open.toml").lock.sha256 == study.lock.sha256
    (True, True)
    """
    if isinstance(study_or_design, Study):
        return study_or_design
    return Study.open(Path(study_or_design), root=root)


def _search_temperatures(stats: dict[str, Any], temperature: float, run: tuple) -> list[float]:
    """The temperatures the profile was searched with: the run's when its batch was
    theirs (the store profiles a matrix's temperatures as one batch), else its own."""
    batch = int(stats.get("batch", 1))
    return [float(t) for t in run] if batch == len(run) > 1 else [float(temperature)]


def _synthetic_params(rec: Any) -> str:
    """JSON of a synthetic record's family and parameters ("" for a real matrix)."""
    if rec.source != "synthetic":
        return ""
    return json.dumps({"family": rec.meta["family"], **rec.meta["params"]}, sort_keys=True)


def _profile_rows(
    store: Any, engine: Any, label: str, version: str, key: str, cells: pd.DataFrame, run: tuple
) -> list[dict[str, Any]]:
    """Per cell of matrix ``key``: its ends' constructions and its profile's provenance,
    after the stored profile re-verified against the stored matrix."""
    from analysis.attention import fixed_torch_threads

    arrays = store.arrays(key, verify=True)
    rec = store.matrix(key)
    out = []
    for t, group in cells.groupby("temperature", sort=True):
        prof_rec = store.profile(key, float(t), version, label)
        # the matrix as the store's one-thread workers computed it: under more torch
        # threads its softmax can round differently in the last bit, and the exact
        # re-verification of the stored certificates then fails for nothing
        with fixed_torch_threads(1):
            A = arrays.at(float(t))
        prof = engine.load_profile(prof_rec.profile_dict())
        fails = prof.reverify(A)
        if fails:
            raise ParameterError(
                "store",
                "profiles whose witnesses re-verify against their matrices (re-run "
                "`attnrank run` to recompute them)",
                f"matrix {key} ({rec.head_id or rec.checkpoint}) at t={t}: {fails[0]}",
            )
        digest = matrix_sha256(A)
        stats = dict(prof.stats)
        for row in group.itertuples():
            lo, hi = (int(v) for v in prof.bracket(float(row.eps)))
            if (lo, hi) != (int(row.lo), int(row.hi)):
                raise ParameterError(
                    "store",
                    "bracket rows equal to their profile's read-off",
                    f"cell {row.cell_key}: stored [{row.lo}, {row.hi}], profile [{lo}, {hi}]",
                )
            low = prof.lower_end(float(row.eps))
            out.append(
                {
                    "cell_key": row.cell_key,
                    "lower_method": low.method if (low is not None and lo > 0) else "none",
                    "upper_method": prof.upper_end(float(row.eps)).method,
                    "effort": prof_rec.effort,
                    "profile_eps": json.dumps([float(e) for e in prof.eps_targets]),
                    "search_temperatures": json.dumps(_search_temperatures(stats, t, run)),
                    "profile_revision": prof_rec.revision,
                    "array_sha256": rec.array_sha256,
                    "matrix_sha256": digest,
                    "n_queries": int(A.shape[0]),
                    "n_layers": 1 if rec.source == "synthetic" else rec.meta.get("n_layers"),
                    "extract_threads": rec.meta.get("torch_threads"),
                    "record_checkpoint": rec.checkpoint,
                    "synthetic_params": _synthetic_params(rec),
                }
            )
    return out


def build_atlas(
    study_or_design: Study | str | os.PathLike,
    *,
    root: str | os.PathLike | None = None,
    synthetic: bool = False,
    progress: bool = False,
    say: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """The atlas of a study: one row per bracketed cell, with its provenance and features.

    Parameters
    ----------
    study_or_design : Study or path
        An opened study, or a locked design (opened under ``root``, its lock checked).
    root : path, optional, keyword-only
        The study root when a design path is given (default: the design folder's parent).
    synthetic : bool, default False, keyword-only
        Also the study's synthetic cells (exploratory; no descriptors, never held out).
    progress : bool, default False, keyword-only
        A tqdm bar over the matrices.
    say : callable, optional, keyword-only
        Receives one line on what was gathered.

    Returns
    -------
    pandas.DataFrame
        The fixed columns of :data:`analysis.atlas.COLUMNS`, then the descriptor
        covariates ``<block>__<feature>`` (NaN for a cell without descriptors), sorted by
        (source, checkpoint, input, length, layer, head, temperature, eps). The study's
        brackets of the engine its design pins, each re-verified here against its stored
        matrix.

    Raises
    ------
    FileNotFoundError
        When the study has no store.
    ParameterError
        Naming ``store`` when a stored profile does not re-verify against its matrix or a
        stored bracket is not its profile's read-off; naming ``atlas`` when the study has
        no bracketed cell.

    Examples
    --------
    A small locked study whose two synthetic matrices are bracketed (real cells need a
    checkpoint's weights; tests/atlas builds the atlas of a real one):

    >>> from analysis.atlas import build_atlas
    >>> from analysis.store import Store
    >>> from analysis.datasets import open_example_study
    >>> from analysis.study.stages import bracket_stage, synthetic_stage
    >>> from analysis.executor import RunSpec
    >>> study = open_example_study("studies/atlas.toml", synthetic=True)
    >>> build_atlas(study)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    FileNotFoundError: no study store at .../store: nothing to gather
    >>> with Store(study.paths.store, create=True) as store:
    ...     keys = synthetic_stage(study, store)
    ...     _ = bracket_stage(study, store, [], keys, engine=None, run=RunSpec(progress=False))
    >>> atlas = build_atlas(study, synthetic=True)
    >>> atlas[["checkpoint", "temperature", "eps", "lower", "upper"]].shape  # 2 matrices x 2 eps
    (4, 5)
    >>> bool((atlas["lower"] <= atlas["upper"]).all())
    True
    >>> set(atlas["engine"]) == {f"analysis.brackets {study.engine}"}  # the pinned engine's
    True
    >>> atlas["search_temperatures"].unique().tolist(), bool(atlas["held_out"].any())
    (['[1.0]'], False)
    """
    from tqdm.auto import tqdm

    from analysis.store import Store
    from analysis.study.comparison import comparison_table, covariate_columns
    from analysis.study.results import (
        bracket_table,
        cells_engine,
        feature_table,
        stored_synthetic_keys,
    )

    study = open_study(study_or_design, root)
    paths, plan = study.paths, study.plan
    if not (paths.store / Store.INDEX).is_file():
        raise FileNotFoundError(f"no study store at {paths.store}: nothing to gather")
    engine = study.bracket_engine()
    label = cells_engine(study)
    with Store(paths.store) as store:
        real_keys = study.real_keys()
        synth_keys = stored_synthetic_keys(study, store) if synthetic else []
        cells = bracket_table(store, plan, real_keys, synth_keys, study.design.held_out, label)
        if cells.empty:
            raise ParameterError("atlas", "a study with bracketed cells", 0)
        rows: list[dict[str, Any]] = []
        by_key = cells.groupby("matrix_key", sort=False)
        bar = tqdm(by_key, desc="atlas", unit="matrix", disable=not progress)
        for key, group in bar:
            run = tuple(plan.temperatures) if key in set(real_keys) else (1.0,)
            rows += _profile_rows(store, engine, label, plan.effort, key, group, run)
    extra = pd.DataFrame(rows)
    seeds = {k: t.corpus_seed for t in plan.extractions for k in study.extractions.keys(t.label)}
    atlas = cells.merge(extra, on="cell_key", how="left", validate="one_to_one")
    is_syn = atlas["source"] == "synthetic"
    atlas["corpus_seed"] = [
        s if syn else seeds.get(k)
        for k, syn, s in zip(atlas["matrix_key"], is_syn, atlas["seed"], strict=True)
    ]
    atlas["corpus_seed"] = pd.array(
        [None if pd.isna(s) else int(s) for s in atlas["corpus_seed"]], dtype="Int64"
    )
    atlas["extract_threads"] = pd.array(
        [
            None if (syn or pd.isna(n)) else int(n)
            for n, syn in zip(atlas["extract_threads"], is_syn, strict=True)
        ],
        dtype="Int64",
    )
    # an extraction record without the model's layer count: the deepest layer studied
    deepest = atlas.groupby("checkpoint")["layer"].transform("max") + 1
    atlas["n_layers"] = atlas["n_layers"].astype("Float64").fillna(deepest).astype("int64")
    features = feature_table(paths, real_keys)
    covs: list[str] = []
    in_comparison: set[str] = set()
    if len(features) > 0:
        covs, _ = covariate_columns(features, study.registry)
        real = cells.loc[cells["source"] == "checkpoint"]
        if len(real) > 0:
            table, _, _ = comparison_table(study, real, features)
            in_comparison = set(table["cell_key"])
        atlas = atlas.merge(features[["cell_key", *covs]], on="cell_key", how="left")
    atlas = atlas.rename(columns={"lo": "lower", "hi": "upper"}).assign(
        design=paths.design.stem,
        design_sha256=study.design.sha256,
        lock_sha256=study.lock.sha256,
        engine=label,
        engine_version=int(study.engine),
        in_comparison=atlas["cell_key"].isin(in_comparison),
        closed=lambda f: f["lower"] == f["upper"],
    )
    atlas["checkpoint"] = atlas.pop("record_checkpoint")  # synthetic: with its parameters
    atlas = derive_columns(atlas.drop(columns=["family", "d", "beta", "seed"]))
    if say is not None:
        say(
            f"atlas {paths.design.stem}: {len(atlas)} cells of {atlas['matrix_key'].nunique()} "
            f"matrices, {len(covs)} descriptor columns, engine {study.engine}"
        )
    return conform(atlas)
