"""The study runner: design file -> sources -> store -> brackets -> descriptors -> compare -> report.

``attnrank run preregistration/STUDY.toml`` checks the lock before any work, then runs each
stage, skipping whatever is already stored:

1. **extract**: every (checkpoint, length, input) the design names into the study's store
   (``<root>/data/<stem>/store``); synthetic families as their own records;
2. **brackets**: certified profiles of real matrices at every design temperature and of
   synthetic ones at t = 1 (their beta is their temperature), one committed profile at a
   time (:func:`analysis.store.run_brackets`);
3. **descriptors**: the blocks the design's models name, one atomic CSV per matrix;
4. **compare**: the pre-specified nested comparisons on the sealed table (held-out rows
   released once, the result stamped with the lock hash), the OLS sensitivity refit and
   the exploratory head-level analysis on training heads; stored with a hash of their
   inputs, so an unchanged study is not refitted;
5. **report**: tables, figures, ``report.md`` and ``provenance.json`` in
   ``<root>/reports/<stem>/``.

A study's root is the parent of its design's folder (CONTRACTS.md); ``root`` overrides it.
Ctrl-C or a crash loses nothing finished: profiles are committed one by one, descriptor
files and stage records are written atomically, and a re-run resumes.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import contextlib
import dataclasses
import hashlib
import importlib.metadata
import json
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.atomic import atomic_write
from analysis.validation import ParameterError, check_int

__all__ = [
    "STAGES",
    "StudyPaths",
    "StudyPlan",
    "StudyRun",
    "load_results",
    "missing_checkpoints",
    "plan_study",
    "run_study",
    "study_paths",
]

STAGES = ("extract", "brackets", "descriptors", "compare", "report")
#: The engine seed of every profile of a study (``attnrank brackets`` default); each
#: profile's own seed derives from it and the (matrix, temperature) key.
BRACKET_SEED = 0
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
SYNTHETIC_FAMILIES = ("spherical", "ball")


# --------------------------------------------------------------------------------------
# Paths and plan
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class StudyPaths:
    """Where a study keeps its stored stages and its report."""

    design: Path
    root: Path
    data: Path
    store: Path
    features: Path
    results: Path
    report: Path

    @property
    def stages_file(self) -> Path:
        return self.data / "stages.json"

    @property
    def extractions_file(self) -> Path:
        return self.data / "extractions.json"


def study_paths(design: str | os.PathLike, *, root: str | os.PathLike | None = None) -> StudyPaths:
    """Paths of the study whose design is ``design`` (root = parent of its folder)."""
    design = Path(design).resolve()
    root_p = Path(root).resolve() if root is not None else design.parent.parent
    stem = design.stem
    data = root_p / "data" / stem
    return StudyPaths(
        design=design,
        root=root_p,
        data=data,
        store=data / "store",
        features=data / "features",
        results=data / "results",
        report=root_p / "reports" / stem,
    )


@dataclasses.dataclass(frozen=True)
class ExtractionTask:
    """One forward pass: a checkpoint on one input of one length."""

    checkpoint: str
    length: int
    corpus_seed: int
    heads: tuple[tuple[int, int], ...]  # (layer, head) pairs the design names

    @property
    def label(self) -> str:
        return f"{self.checkpoint}|L={self.length}|corpus-seed={self.corpus_seed}"


@dataclasses.dataclass(frozen=True)
class SyntheticTask:
    family: str
    n: int
    d: int
    beta: float
    seed: int


@dataclasses.dataclass(frozen=True)
class StudyPlan:
    """Everything a design asks to compute."""

    extractions: tuple[ExtractionTask, ...]
    synthetic: tuple[SyntheticTask, ...]
    temperatures: tuple[float, ...]
    eps: tuple[float, ...]
    effort: str
    blocks: tuple[str, ...]
    plugins: tuple[str, ...]

    @property
    def checkpoints(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t.checkpoint for t in self.extractions))


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def plan_study(design: Any) -> StudyPlan:
    """What a parsed, validated design (:class:`analysis.prereg.Design`) asks to compute.

    Inputs: ``[sampling.inputs] seed = s, per_length = k`` gives corpus seeds s .. s+k-1 for
    every (checkpoint, length); a source's own ``lengths`` overrides ``sampling.lengths``.
    """
    from analysis.prereg.design import population

    data = design.data
    sampling = data["sampling"]
    inputs = sampling.get("inputs", {})
    if inputs.get("source", "corpus") != "corpus":
        raise ParameterError("sampling.inputs.source", "corpus", inputs.get("source"))
    seed0 = check_int("sampling.inputs.seed", inputs.get("seed", 0), minimum=0)
    per_length = check_int("sampling.inputs.per_length", inputs.get("per_length", 1), minimum=1)
    heads_of: dict[str, list[tuple[int, int]]] = {}
    for head_id in population(data):
        ck, layer, head = head_id.rsplit(":", 2)
        heads_of.setdefault(ck, []).append((int(layer), int(head)))
    extractions, synthetic = [], []
    for i, src in enumerate(sampling["sources"]):
        if src["kind"] == "checkpoint":
            lengths = src.get("lengths", sampling.get("lengths"))
            if lengths is None:
                raise ParameterError(
                    f"sampling.sources[{i}].lengths", "lengths here or in [sampling]", None
                )
            for L in _as_list(lengths):
                for s in range(seed0, seed0 + per_length):
                    extractions.append(
                        ExtractionTask(
                            src["checkpoint"],
                            check_int(f"sampling.sources[{i}].lengths", L, minimum=2),
                            s,
                            tuple(heads_of[src["checkpoint"]]),
                        )
                    )
        else:
            family = src["family"]
            if family not in SYNTHETIC_FAMILIES:
                raise ParameterError(
                    f"sampling.sources[{i}].family", " or ".join(SYNTHETIC_FAMILIES), family
                )
            for d in _as_list(src["d"]):
                for n in _as_list(src["n"]):
                    for beta in _as_list(src["beta"]):
                        for seed in _as_list(src.get("seeds", [0])):
                            synthetic.append(
                                SyntheticTask(family, int(n), int(d), float(beta), int(seed))
                            )
    blocks = tuple(dict.fromkeys(b for blocks in design.models.values() for b in blocks))
    return StudyPlan(
        extractions=tuple(extractions),
        synthetic=tuple(synthetic),
        temperatures=tuple(float(t) for t in sampling["temperatures"]),
        eps=tuple(float(e) for e in sampling["eps"]),
        effort=str(data.get("effort", "default")),
        blocks=blocks,
        plugins=tuple(data.get("descriptors", {}).get("plugins", [])),
    )


def _check_blocks(design: Any, plan: StudyPlan, paths: StudyPaths) -> None:
    """Import the design's plugins; every block of every model must then be registered."""
    from analysis.descriptors.registry import registered

    _load_plugins(plan.plugins, paths.root)
    known = registered()
    for name, blocks in design.models.items():
        for b in blocks:
            if b not in known:
                raise ParameterError(
                    f"models.{name}",
                    f"registered blocks (built in, or from plugins {list(plan.plugins)})",
                    b,
                )


def missing_checkpoints(
    plan: StudyPlan, checkpoint_paths: Mapping[str, str | os.PathLike] | None = None
) -> list[tuple[str, str]]:
    """Checkpoints of ``plan`` not available offline, with how to provide each.

    Returns
    -------
    list of (checkpoint id, message)
    """
    from analysis.sources.checkpoints import resolve_checkpoint

    paths = dict(checkpoint_paths or {})
    missing = []
    for ck in plan.checkpoints:
        where = paths.get(ck, ck)
        try:
            resolve_checkpoint(where)
        except ParameterError as exc:
            missing.append((ck, str(exc)))
    return missing


# --------------------------------------------------------------------------------------
# Stage records
# --------------------------------------------------------------------------------------


def _read_json(path: Path, default: Any) -> Any:
    if not path.is_file():
        return default
    return json.loads(path.read_text(encoding="utf-8"))


def _write_bytes(path: Path, data: bytes) -> None:
    with atomic_write(path) as fh:
        fh.write(data)


def _write_json(path: Path, obj: Any) -> None:
    text = json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n"
    _write_bytes(path, text.encode("utf-8"))


class _Stages:
    """Wall seconds per stage, this run and summed over every run of the study."""

    def __init__(self, path: Path):
        self.path = path
        self.record = _read_json(path, {"total_seconds": {}, "runs": 0})
        self.record["runs"] = int(self.record.get("runs", 0)) + 1
        self.now: dict[str, float] = {}

    def add(self, stage: str, seconds: float) -> None:
        self.now[stage] = self.now.get(stage, 0.0) + seconds
        tot = self.record.setdefault("total_seconds", {})
        tot[stage] = tot.get(stage, 0.0) + seconds
        self.record["last_run_seconds"] = self.now
        _write_json(self.path, self.record)


# --------------------------------------------------------------------------------------
# Stage 1: extraction
# --------------------------------------------------------------------------------------


def _extract_stage(
    plan: StudyPlan,
    paths: StudyPaths,
    store: Any,
    checkpoint_paths: Mapping[str, Any],
    progress: bool,
    say: Callable[[str], None],
) -> list[str]:
    """Extract what is not stored yet; return every real matrix key of the plan."""
    from tqdm.auto import tqdm

    from analysis.sources import inputs
    from analysis.sources.checkpoints import extract_from_model, load_checkpoint

    done = _read_json(paths.extractions_file, {})
    keys: list[str] = []
    todo = [t for t in plan.extractions if not _extraction_done(done.get(t.label), store)]
    for t in plan.extractions:
        if t not in todo:
            keys.extend(done[t.label]["keys"])
    if not todo:
        return keys
    by_ckpt: dict[str, list[ExtractionTask]] = {}
    for t in todo:
        by_ckpt.setdefault(t.checkpoint, []).append(t)
    bar = tqdm(total=len(todo), desc="extract", unit="input", disable=not progress)
    try:
        for ck, tasks in by_ckpt.items():
            bar.set_postfix_str(f"loading {ck}")
            model = load_checkpoint(checkpoint_paths.get(ck, ck))
            for t in tasks:
                if model.is_vision:
                    mi = inputs.corpus_image(model, t.corpus_seed, t.length)
                else:
                    mi = inputs.corpus_text(model, t.corpus_seed, t.length)
                ex = extract_from_model(model, mi)
                if ex.checkpoint_id != ck and ck in checkpoint_paths:
                    # a stand-in folder: its records carry the design's id
                    meta = {**ex.meta, "checkpoint": ck, "stand_in": ex.meta.get("checkpoint")}
                    ex = dataclasses.replace(ex, meta=meta)
                elif ex.checkpoint_id != ck:
                    raise ParameterError(
                        "checkpoint", f"a checkpoint resolving to {ck}", ex.checkpoint_id
                    )
                new = store.add_extraction(ex, heads=t.heads)
                done[t.label] = {"input_id": ex.input_id, "keys": new}
                _write_json(paths.extractions_file, done)
                keys.extend(new)
                bar.update(1)
            del model
    finally:
        bar.close()
    say(f"extract: {len(todo)} inputs extracted, {len(plan.extractions) - len(todo)} stored")
    return keys


def _extraction_done(entry: Any, store: Any) -> bool:
    return bool(entry) and all(store.has_matrix(k) for k in entry["keys"])


def _synthetic_label(t: SyntheticTask) -> str:
    return f"{t.family}|n={t.n}|d={t.d}|beta={t.beta!r}|seed={t.seed}"


def _synthetic_stage(plan: StudyPlan, paths: StudyPaths, store: Any) -> list[str]:
    """Store the design's synthetic matrices not stored yet; return every synthetic key."""
    from analysis.sources import synthetic

    make = {"spherical": synthetic.spherical, "ball": synthetic.full_ball}
    manifest = _read_json(paths.extractions_file, {})
    known = manifest.setdefault("synthetic", {})
    keys, changed = [], False
    for t in plan.synthetic:
        key = known.get(_synthetic_label(t))
        if key is None or not store.has_matrix(key):
            key = store.add_synthetic(make[t.family](t.n, t.d, t.beta, random_state=t.seed))
            known[_synthetic_label(t)] = key
            changed = True
        keys.append(key)
    if changed:
        _write_json(paths.extractions_file, manifest)
    return keys


# --------------------------------------------------------------------------------------
# Stage 3: descriptors
# --------------------------------------------------------------------------------------


def _feature_file(paths: StudyPaths, key: str) -> Path:
    return paths.features / f"{key}.csv"


def _features_done(path: Path, plan: StudyPlan) -> bool:
    if not path.is_file():
        return False
    try:
        head = pd.read_csv(path, nrows=0)
        n = sum(1 for _ in path.open(encoding="utf-8")) - 1
    except (OSError, ValueError, pd.errors.ParserError):
        return False
    have = {c.split("__", 1)[0] for c in head.columns if "__" in c}
    return set(plan.blocks) <= have and n == len(plan.temperatures) * len(plan.eps)


def _load_plugins(plugins: Sequence[str], root: Path | str | None) -> None:
    """Import the design's plugin modules, the study root first on ``sys.path``."""
    from analysis.descriptors.registry import load_plugin

    if root is not None and str(root) not in sys.path:
        sys.path.insert(0, str(root))
    for module in plugins:
        load_plugin(module)


def _describe_worker_init(plugins: Sequence[str], root: str | None = None) -> None:
    import torch

    torch.set_num_threads(1)
    _load_plugins(plugins, root)


def _describe_task(
    array_file: str, out: str, eps: Sequence[float], temps: Sequence[float], blocks: Sequence[str]
) -> float:
    """Describe one stored matrix into ``out`` (atomic CSV); return its seconds."""
    from threadpoolctl import threadpool_limits

    from analysis.descriptors.describe import describe_matrix
    from analysis.store.store import load_arrays

    start = time.perf_counter()
    arr = load_arrays(Path(array_file))
    with threadpool_limits(1):
        df = describe_matrix(
            arr.Q, arr.K, arr.scale, arr.mask, eps=eps, temperatures=temps, blocks=blocks
        )
    _write_bytes(Path(out), df.to_csv(index=False, float_format="%.17g").encode("utf-8"))
    return time.perf_counter() - start


def _descriptor_stage(
    plan: StudyPlan,
    paths: StudyPaths,
    store: Any,
    keys: Sequence[str],
    workers: int,
    progress: bool,
) -> int:
    from tqdm.auto import tqdm

    paths.features.mkdir(parents=True, exist_ok=True)
    todo = [k for k in keys if not _features_done(_feature_file(paths, k), plan)]
    bar = tqdm(
        total=len(keys),
        initial=len(keys) - len(todo),
        desc="descriptors",
        unit="matrix",
        disable=not progress,
    )
    args = [
        (
            str(store.path / store.matrix(k).array_file),
            str(_feature_file(paths, k)),
            plan.eps,
            plan.temperatures,
            plan.blocks,
        )
        for k in todo
    ]
    try:
        if workers == 1 or len(args) <= 1:
            _describe_worker_init(plan.plugins, str(paths.root))
            for a in args:
                _describe_task(*a)
                bar.update(1)
        else:
            ctx = multiprocessing.get_context("spawn")
            with cf.ProcessPoolExecutor(
                max_workers=workers,
                mp_context=ctx,
                initializer=_describe_worker_init,
                initargs=(tuple(plan.plugins), str(paths.root)),
            ) as pool:
                futures = [pool.submit(_describe_task, *a) for a in args]
                try:
                    for fut in cf.as_completed(futures):
                        fut.result()
                        bar.update(1)
                except BaseException:
                    for f in futures:
                        f.cancel()
                    raise
    finally:
        bar.close()
    return len(todo)


# --------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------


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


def _bracket_table(
    store: Any,
    plan: StudyPlan,
    real_keys: Sequence[str],
    synth_keys: Sequence[str],
    held_out: Sequence[str],
) -> pd.DataFrame:
    """One row per planned cell that has a bracket (``StudyResults.brackets`` columns)."""
    from analysis.report.results import BRACKET_COLUMNS

    cells = store.cells(version=plan.effort)
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


def _feature_table(paths: StudyPaths, real_keys: Sequence[str], store: Any) -> pd.DataFrame:
    """``cell_key`` + ``BLOCK__feature`` for every described real cell."""
    from analysis.store.keys import cell_key

    frames = []
    for k in real_keys:
        f = _feature_file(paths, k)
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


def _covariate_columns(features: pd.DataFrame, plugins: Sequence[str]) -> tuple[list, list]:
    """(covariate columns, log-scale columns) per the registry; diagnostics are dropped."""
    from analysis.descriptors.registry import feature_table

    info = feature_table([c for c in features.columns if "__" in c])
    cov = info.loc[info["kind"] == "covariate"]
    return list(cov["column"]), list(cov.loc[cov["log_scale"], "column"])


# --------------------------------------------------------------------------------------
# Stage 4: compare
# --------------------------------------------------------------------------------------


def _frame_digest(*frames: pd.DataFrame) -> str:
    h = hashlib.sha256()
    for f in frames:
        h.update(pd.util.hash_pandas_object(f, index=False).to_numpy().tobytes())
        h.update("|".join(map(str, f.columns)).encode())
    return h.hexdigest()


def _compare_stage(
    design: Any,
    plan: StudyPlan,
    paths: StudyPaths,
    brackets: pd.DataFrame,
    features: pd.DataFrame,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """Run (or reuse) the confirmatory comparison, its OLS refit and the head-level analysis."""
    from analysis.compare import compare_nested, head_level_analysis
    from analysis.descriptors import covariate_kwargs
    from analysis.prereg.sealing import SealedCells

    real = brackets.loc[brackets["source"] == "checkpoint"]
    covs, logs = _covariate_columns(features, plan.plugins)
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
        "missing_bracket": int(_planned_real_cells(plan) - len(real)),
        "missing_descriptors": int(missing_features),
        "non_finite_covariate": int(0 if finite is None else (~finite).sum()),
    }
    if finite is not None:
        table = table.loc[finite]
    table = table.assign(
        cluster=table["head_id"],
        y_lower=np.log2(table["lo"].astype(float)),
        y_upper=np.log2(table["hi"].astype(float)),
    ).drop(columns=["held_out"])
    keep = ["cell_key", "cluster", "y_lower", "y_upper", "input_id", "length", *model_cols]
    table = table.loc[:, keep].sort_values("cell_key").reset_index(drop=True)
    log_cols = [c for c in logs if c in model_cols]
    digest = f"compare/2:{_frame_digest(table)}:{design.sha256}"
    record_file = paths.results / "compare.json"
    record = _read_json(record_file, {})
    if record.get("inputs_sha256") == digest and all(
        (paths.results / f).is_file() for f in record.get("files", [])
    ):
        say("compare: inputs unchanged, stored results reused")
        return record
    sealed = SealedCells(table, paths.design)
    if table.empty or not (~table["cluster"].isin(set(design.held_out))).any():
        raise ParameterError(
            "cells", "training and held-out cells with brackets and descriptors", len(table)
        )
    kwargs = design.comparison_kwargs()
    train = sealed.training()
    conf = sealed.release_confirmatory()
    paths.results.mkdir(parents=True, exist_ok=True)
    files = []
    res = compare_nested(
        conf.table,
        design.models,
        log_columns=log_cols,
        lock_sha256=conf.lock_sha256,
        **kwargs,
        **covariate_kwargs(conf.table.columns),
    )
    _write_frame(paths.results / "comparison.csv", res.to_frame())
    files.append("comparison.csv")
    ols = compare_nested(
        conf.table,
        design.models,
        log_columns=log_cols,
        lock_sha256=conf.lock_sha256,
        **{**kwargs, "estimator": "ols"},
        **covariate_kwargs(conf.table.columns),
    )
    _write_frame(paths.results / "comparison_ols.csv", ols.to_frame())
    files.append("comparison_ols.csv")
    _write_frame(paths.results / "lr_tests.csv", res.lr_tests)
    files.append("lr_tests.csv")
    hl = head_level_analysis(
        train,
        design.models,
        log_columns=log_cols,
        estimator=kwargs["estimator"],
        random_state=kwargs["random_state"],
        **covariate_kwargs(train.columns),
    )
    _write_frame(paths.results / "head_level.csv", hl.to_frame())
    files.append("head_level.csv")
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
        "head_level_meta": {
            "residual_icc": float(hl.residual_icc),
            "base_model": hl.base_model,
            "folds": hl.folds,
        },
        "files": files,
        "summary": res.summary(),
    }
    _write_json(record_file, record)
    say(res.summary())
    return record


def _planned_real_cells(plan: StudyPlan) -> int:
    per = len(plan.temperatures) * len(plan.eps)
    return sum(len(t.heads) for t in plan.extractions) * per


def _write_frame(path: Path, df: pd.DataFrame) -> None:
    _write_bytes(path, df.to_csv(index=False, float_format="%.17g").encode("utf-8"))


# --------------------------------------------------------------------------------------
# Provenance and results
# --------------------------------------------------------------------------------------


def _library_versions() -> dict[str, str]:
    out = {}
    for lib in LIBRARIES:
        try:
            out[lib] = importlib.metadata.version(lib)
        except importlib.metadata.PackageNotFoundError:
            out[lib] = "not installed"
    return out


def _provenance(design: Any, lock: Any, plan: StudyPlan, stages: dict[str, Any]) -> dict:
    from analysis import __version__
    from analysis.prereg.lock import _git_commit

    inf = design.data["inference"]
    return {
        "design": str(design.path),
        "design_sha256": design.sha256,
        "lock_sha256": lock.sha256,
        "held_out_sha256": lock.held_out_sha256,
        "package_version": __version__,
        "git_commit": _git_commit(Path(__file__).resolve().parent),
        "libraries": _library_versions(),
        "seeds": {
            "bracket_engine": BRACKET_SEED,
            "inputs": int(design.data["sampling"].get("inputs", {}).get("seed", 0)),
            "inference": int(inf["seed"]),
            "held_out_draw": int(design.data["held_out"]["seed"]),
        },
        "effort": plan.effort,
        "stage_seconds": dict(stages.get("last_run_seconds", {})),
        "stage_seconds_total": dict(stages.get("total_seconds", {})),
        "runs": int(stages.get("runs", 1)),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def load_results(
    design_path: str | os.PathLike,
    *,
    root: str | os.PathLike | None = None,
    checkpoint_paths: Mapping[str, Any] | None = None,
) -> Any:
    """Assemble :class:`analysis.report.results.StudyResults` from a study's stored stages.

    Reads only what is stored (nothing is computed); the comparison frames are None when
    the compare stage has not run.
    """
    from analysis.prereg.design import load_design
    from analysis.prereg.lock import require_locked
    from analysis.report.results import StudyResults
    from analysis.store.store import Store

    lock = require_locked(design_path)
    design = load_design(design_path)
    plan = plan_study(design)
    paths = study_paths(design_path, root=root)
    if not (paths.store / Store.INDEX).is_file():
        raise ParameterError("STORE", "a study store (run `attnrank run` first)", str(paths.store))
    with Store(paths.store) as store:
        extractions = _read_json(paths.extractions_file, {})
        real_keys = [
            k for t in plan.extractions for k in extractions.get(t.label, {}).get("keys", [])
        ]
        synth_keys = _synthetic_keys(plan, paths, store)
        brackets = _bracket_table(store, plan, real_keys, synth_keys, design.held_out)
        features = _feature_table(paths, real_keys, store)
    record = _read_json(paths.results / "compare.json", {})

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

    return StudyResults(
        study=paths.design.stem,
        title=str(design.data.get("title", paths.design.stem)),
        design=design.data,
        brackets=brackets,
        features=features,
        comparison=frame("comparison.csv"),
        comparison_ols=frame("comparison_ols.csv"),
        head_level=frame("head_level.csv"),
        dropped_columns=list(record.get("dropped_columns", [])),
        excluded=dict(record.get("excluded", {})),
        provenance=_provenance(design, lock, plan, _read_json(paths.stages_file, {})),
        lr_tests=frame("lr_tests.csv"),
        head_level_meta=dict(record.get("head_level_meta", {})),
        skipped=skipped,
    )


def _synthetic_keys(plan: StudyPlan, paths: StudyPaths, store: Any) -> list[str]:
    """Stored synthetic keys of the plan, from the extraction manifest."""
    known = _read_json(paths.extractions_file, {}).get("synthetic", {})
    keys = (known.get(_synthetic_label(t)) for t in plan.synthetic)
    return [k for k in keys if k is not None and store.has_matrix(k)]


# --------------------------------------------------------------------------------------
# The runner
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class StudyRun:
    """What one ``attnrank run`` did."""

    study: str
    paths: StudyPaths
    computed: dict[str, int]
    stage_seconds: dict[str, float]
    report_files: tuple[str, ...]

    def summary(self) -> str:
        lines = [f"study {self.study}: stored under {self.paths.data}"]
        for s in STAGES:
            if s in self.stage_seconds:
                n = self.computed.get(s)
                extra = f", {n} computed" if n is not None else ""
                lines.append(f"  {s:<12}{self.stage_seconds[s]:8.1f} s{extra}")
        if self.report_files:
            lines.append(f"report: {self.paths.report} ({len(self.report_files)} files)")
        return "\n".join(lines)


@contextlib.contextmanager
def _timed(stages: _Stages, stage: str) -> Iterator[None]:
    """Add the stage's wall seconds to the record, also when it is interrupted."""
    start = time.perf_counter()
    try:
        yield
    finally:
        stages.add(stage, time.perf_counter() - start)


def run_study(
    design_path: str | os.PathLike,
    *,
    root: str | os.PathLike | None = None,
    workers: int = 1,
    progress: bool = True,
    checkpoint_paths: Mapping[str, str | os.PathLike] | None = None,
    stop_after: str | None = None,
    engine: Any = None,
    say: Callable[[str], None] | None = None,
) -> StudyRun:
    """Run a locked design from its sources to its report, resuming what is stored.

    Parameters
    ----------
    design_path : path
        A design file with its ``.lock`` beside it.
    root : path, optional, keyword-only
        Study root (default: the parent of the design's folder).
    workers : int, keyword-only
        Processes for profiles and descriptors.
    progress : bool, keyword-only
        tqdm bars per stage.
    checkpoint_paths : mapping, keyword-only
        Design checkpoint id -> local folder holding it (or a stand-in); others resolve
        offline as in ``attnrank extract``.
    stop_after : str, optional, keyword-only
        Stop after this stage (one of :data:`STAGES`).
    engine : optional, keyword-only
        Bracket engine override (tests).
    say : callable, optional, keyword-only
        Receives one-line messages (default: print).

    Returns
    -------
    StudyRun

    Raises
    ------
    analysis.prereg.PreregistrationError
        Before any work, when the lock is missing or the design drifted.
    ParameterError
        Before any work, when a checkpoint is not available offline (listing them all).
    """
    from analysis.prereg.design import load_design
    from analysis.prereg.lock import require_locked
    from analysis.store.run import run_brackets
    from analysis.store.store import Store

    say = say or print
    workers = check_int("workers", workers, minimum=1)
    if stop_after is not None and stop_after not in STAGES:
        raise ParameterError("stop_after", f"one of {', '.join(STAGES)}", stop_after)
    lock = require_locked(design_path)  # lock drift stops the run before any work
    design = load_design(design_path)
    plan = plan_study(design)
    paths = study_paths(design_path, root=root)
    _check_blocks(design, plan, paths)
    cpaths = {k: os.fspath(v) for k, v in (checkpoint_paths or {}).items()}
    unknown = sorted(set(cpaths) - set(plan.checkpoints))
    if unknown:
        raise ParameterError("checkpoint_paths", f"ids among {list(plan.checkpoints)}", unknown)
    missing = missing_checkpoints(plan, cpaths)
    if missing:
        lines = [f"  - {ck}: {msg}" for ck, msg in missing]
        raise ParameterError(
            "checkpoint",
            "every checkpoint of the design available offline; missing:\n"
            + "\n".join(lines)
            + "\n(or map a local folder with --checkpoint ID=PATH)",
            [ck for ck, _ in missing],
        )
    paths.data.mkdir(parents=True, exist_ok=True)
    stages = _Stages(paths.stages_file)
    computed: dict[str, int] = {}
    report_files: tuple[str, ...] = ()
    say(
        f"study {paths.design.stem}: lock ok ({lock.sha256[:12]}), "
        f"{len(plan.extractions)} inputs, {len(plan.synthetic)} synthetic matrices, "
        f"{len(plan.temperatures)} temperatures x {len(plan.eps)} eps, effort {plan.effort}"
    )
    with Store(paths.store, create=True) as store:
        with _timed(stages, "extract"):
            before = len(store.matrices())
            real_keys = _extract_stage(plan, paths, store, cpaths, progress, say)
            synth_keys = _synthetic_stage(plan, paths, store)
            computed["extract"] = len(store.matrices()) - before
        if stop_after != "extract":
            with _timed(stages, "brackets"):
                n = 0
                for keys, temps in ((real_keys, plan.temperatures), (synth_keys, (1.0,))):
                    if keys:
                        s = run_brackets(
                            store,
                            plan.eps,
                            temperatures=temps,
                            effort=plan.effort,
                            seed=BRACKET_SEED,
                            workers=workers,
                            engine=engine,
                            progress=progress,
                            matrix_keys=keys,
                        )
                        n += s.computed + s.extended
                computed["brackets"] = n
        if stop_after not in ("extract", "brackets"):
            with _timed(stages, "descriptors"):
                computed["descriptors"] = _descriptor_stage(
                    plan, paths, store, real_keys, workers, progress
                )
        if stop_after in (None, "compare", "report") and real_keys:
            brackets = _bracket_table(store, plan, real_keys, synth_keys, design.held_out)
            features = _feature_table(paths, real_keys, store)
            with _timed(stages, "compare"):
                _compare_stage(design, plan, paths, brackets, features, say)
    if stop_after in (None, "report"):
        from analysis.report import build_report

        with _timed(stages, "report"):
            results = load_results(design_path, root=root, checkpoint_paths=cpaths)
            files = build_report(results, paths.report, progress=progress)
        report_files = tuple(str(p) for p in files.paths())
    return StudyRun(
        study=paths.design.stem,
        paths=paths,
        computed=computed,
        stage_seconds=dict(stages.now),
        report_files=report_files,
    )


# --------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------


def _checkpoint_arg(text: str) -> tuple[str, str]:
    ck, sep, path = text.partition("=")
    if not sep or not ck or not path:
        raise argparse.ArgumentTypeError(f"expected ID=PATH, got {text!r}")
    return ck, path


def _run(args: argparse.Namespace) -> int:
    run = run_study(
        args.design,
        root=args.root,
        workers=args.workers,
        progress=not args.no_progress,
        checkpoint_paths=dict(args.checkpoint or []),
        stop_after=args.stop_after,
    )
    print(run.summary())
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "run",
        help="run a locked preregistered study: sources -> brackets -> descriptors -> "
        "comparisons -> report (resumable)",
        description="Check the lock, then extract, bracket, describe, compare and report, "
        "skipping whatever is already stored. Ctrl-C loses nothing finished; re-run to resume.",
    )
    p.add_argument("design", metavar="DESIGN.toml", help="a locked design file")
    p.add_argument("--root", help="study root (default: the parent of the design's folder)")
    p.add_argument("--workers", type=int, default=1, help="processes for profiles/descriptors")
    p.add_argument(
        "--checkpoint",
        action="append",
        type=_checkpoint_arg,
        metavar="ID=PATH",
        help="a local folder holding the design's checkpoint ID (repeatable)",
    )
    p.add_argument("--stop-after", choices=STAGES, help="stop after this stage")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=_run)
