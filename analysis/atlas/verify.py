"""Re-derive atlas rows from the sources and re-verify them.

An atlas ships brackets, not witnesses. A row can be trusted anyway because everything
that made it can be run again: :func:`reverify_rows` re-extracts the row's matrix from its
source (the checkpoint's weights on the input of the row's seed and length, through the
study's own extraction, :func:`analysis.study.stages.extract_input`; a synthetic matrix
from its family and parameters), checks that the matrix at the row's temperature has the
row's ``matrix_sha256``, re-runs the row's engine version (deterministic: no seed) on the
same batch of temperatures, eps grid and effort as the stored profile was searched with,
verifies every witness it finds with the package's verifier
(:meth:`analysis.brackets.Profile.reverify`) and compares the bracket they give with the
row's. A row passes when all three hold.

Notes
-----
The matrix hash is of float64 values, so a re-extraction must reproduce the stored
matrix bit for bit; it runs with the torch thread count the extraction recorded. What a
pass rests on and when a row fails instead (another CPU or library build; a profile the
store extended, ``profile_revision`` > 1): docs/guide/atlas.md, after the
:func:`reverify_rows` example.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from analysis.atlas.build import matrix_sha256
from analysis.validation import ParameterError

__all__ = ["RESULT_COLUMNS", "failure_lines", "reverify_rows"]

#: Columns of :func:`reverify_rows`'s result, one row per atlas row checked.
RESULT_COLUMNS = (
    "row",
    "cell_key",
    "matrix_match",
    "bracket_match",
    "witnesses_verified",
    "passed",
    "rederived_lower",
    "rederived_upper",
    "line",
)


def _label(row: Any) -> str:
    what = row.head_id if row.source == "checkpoint" else row.checkpoint
    return (
        f"{what} {row.input_id} L={row.length} t={row.temperature:g} eps={row.eps:g} "
        f"(cell {row.cell_key})"
    )


def _arrays(record: Mapping[str, Any], length: int) -> Any:
    """A :class:`~analysis.store.MatrixArrays` of one record, as the store would keep it."""
    from analysis.store.arrays import MatrixArrays, record_arrays

    a = record_arrays(record, length)
    return MatrixArrays(a["A"], a["Q"], a["K"], float(a["scale"]), a["mask"], a.get("bias"))


def _extract(
    rows: pd.DataFrame, checkpoint_paths: Mapping[str, Any], models: dict[str, Any]
) -> dict[str, Any]:
    """Re-extract the real matrices of ``rows`` (one forward pass per input): key -> arrays."""
    from analysis.attention import fixed_torch_threads
    from analysis.sources.checkpoints import load_checkpoint
    from analysis.sources.corpora import corpora_of_input_id
    from analysis.store.keys import matrix_key
    from analysis.study.plan import ExtractionTask
    from analysis.study.stages import extract_input

    out: dict[str, Any] = {}
    by_input = rows.groupby(["checkpoint", "corpus_seed", "length"], sort=True)
    for (ck, seed, length), group in by_input:
        if ck not in models:
            models.clear()  # one model in memory at a time
            models[ck] = load_checkpoint(checkpoint_paths.get(ck, ck))
        pairs = sorted({(int(r.layer), int(r.head)) for r in group.itertuples()})
        # a design with [sampling.inputs] images = "crops" names the crop box in the input
        # id; without the flag the seed would re-draw a whole image, not the row's crop
        crop = bool(group["input_id"].astype(str).str.contains("#crop=", regex=False).any())
        # a packaged corpus (text, images, speech) is named in the input id
        # (analysis.sources.corpora.corpora_of_input_id)
        corpora = corpora_of_input_id(str(group["input_id"].iloc[0]))
        task = ExtractionTask(
            str(ck), int(length), int(seed), tuple(pairs), image_crop=crop, **corpora
        )
        threads = group["extract_threads"].dropna()
        n = int(threads.iloc[0]) if len(threads) else 1
        with fixed_torch_threads(n):
            ex = extract_input(models[ck], task, stand_in=ck in checkpoint_paths)
        bias = getattr(ex, "bias", None)
        for layer, head in pairs:
            key = matrix_key("checkpoint", ex.checkpoint_id, layer, head, ex.input_id, ex.length)
            record = {
                "A": ex.A[layer, head],
                "Q": ex.Q[layer, head],
                "K": ex.K[layer, head],
                "scale": float(ex.scale[layer, head]),
                "mask": ex.mask,
                "bias": None if bias is None else bias[layer, head],
            }
            out[key] = _arrays(record, ex.length)
    return out


def _synthetic(rows: pd.DataFrame) -> dict[str, Any]:
    """Regenerate the synthetic matrices of ``rows``: key -> arrays."""
    from analysis.store.keys import matrix_key
    from analysis.study.plan import SyntheticTask
    from analysis.study.stages import synthetic_matrix

    out: dict[str, Any] = {}
    for r in rows.drop_duplicates("matrix_key").itertuples():
        p = json.loads(r.synthetic_params)
        m = synthetic_matrix(SyntheticTask(p["family"], p["n"], p["d"], p["beta"], p["seed"]))
        key = matrix_key(
            "synthetic", m.checkpoint_id, int(r.layer), int(r.head), r.input_id, m.length
        )
        out[key] = _arrays({"A": m.A, "Q": m.Q, "K": m.K, "scale": m.scale}, m.length)
    return out


def _profiles(arrays: Any, group: pd.DataFrame) -> tuple[list[float], list[Any]]:
    """Re-run the row's engine on the batch the stored profile was searched in."""
    from analysis.attention import fixed_torch_threads
    from analysis.brackets.engine import engine_for

    first = group.iloc[0]
    temps = [float(t) for t in json.loads(first["search_temperatures"])]
    grid = [float(e) for e in json.loads(first["profile_eps"])]
    engine = engine_for(int(first["engine_version"]))
    with fixed_torch_threads(1):  # as the store's workers search
        profs = engine.profile_batch(
            [arrays.at(t) for t in temps],
            temps,
            eps=grid,
            effort=str(first["effort"]),
            previous=[None] * len(temps),
        )
    return temps, profs


def _check_row(index: Any, row: Any, arrays: Any, temps: list[float], profs: list[Any]) -> dict:
    label = _label(row)
    if arrays is None:
        return _result(
            index, row, False, False, False, None, f"{label}: no such matrix in the sources"
        )
    from analysis.attention import fixed_torch_threads

    with fixed_torch_threads(1):  # as the store's workers computed it (its hash is exact)
        A = arrays.at(float(row.temperature))
    reasons = []
    matrix_ok = matrix_sha256(A) == row.matrix_sha256
    if not matrix_ok:
        reasons.append("matrix hash differs")
    if float(row.temperature) not in temps:
        reasons.append(f"temperature {row.temperature:g} not in the searched batch {temps}")
        return _result(index, row, matrix_ok, False, False, None, f"{label}: " + "; ".join(reasons))
    prof = profs[temps.index(float(row.temperature))]
    fails = prof.reverify(A)
    witnesses_ok = not fails
    if fails:
        reasons.append(f"{len(fails)} witnesses fail: {fails[0]}")
    lo, hi = (int(v) for v in prof.bracket(float(row.eps)))
    bracket_ok = (lo, hi) == (int(row.lower), int(row.upper))
    if not bracket_ok:
        why = f"bracket [{row.lower}, {row.upper}] re-derived as [{lo}, {hi}]"
        if int(row.profile_revision) > 1:
            why += f" (profile revision {row.profile_revision}: extended from an earlier profile)"
        reasons.append(why)
    low = prof.lower_end(float(row.eps))
    methods = (
        low.method if (low is not None and lo > 0) else "none",
        prof.upper_end(float(row.eps)).method,
    )
    if bracket_ok and methods != (row.lower_method, row.upper_method):
        reasons.append(
            f"constructions {methods} re-derived, row has ({row.lower_method}, {row.upper_method})"
        )
        bracket_ok = False
    text = "ok" if not reasons else "; ".join(reasons)
    return _result(index, row, matrix_ok, bracket_ok, witnesses_ok, (lo, hi), f"{label}: {text}")


def _result(index, row, matrix_ok, bracket_ok, witnesses_ok, ends, text) -> dict[str, Any]:
    passed = bool(matrix_ok and bracket_ok and witnesses_ok)
    return {
        "row": index,
        "cell_key": row.cell_key,
        "matrix_match": bool(matrix_ok),
        "bracket_match": bool(bracket_ok),
        "witnesses_verified": bool(witnesses_ok),
        "passed": passed,
        "rederived_lower": None if ends is None else ends[0],
        "rederived_upper": None if ends is None else ends[1],
        "line": f"row {index}: {'PASS' if passed else 'FAIL'} {text}",
    }


def reverify_rows(
    atlas_rows: pd.DataFrame,
    *,
    checkpoint_paths: Mapping[str, Any] | None = None,
    progress: bool = False,
    say: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """Re-derive each atlas row from the sources and check it.

    Parameters
    ----------
    atlas_rows : DataFrame
        Rows of an atlas (:func:`analysis.atlas.load_atlas`, or a selection of it:
        ``atlas.loc[[0, 5, 17]]``); the index labels them in the result.
    checkpoint_paths : mapping, optional, keyword-only
        Checkpoint id -> a local folder holding it (as ``attnrank run --checkpoint``);
        others resolve offline.
    progress : bool, default False, keyword-only
        A tqdm bar over the matrices re-derived.
    say : callable, optional, keyword-only
        Receives each row's one-line result as it is known.

    Returns
    -------
    pandas.DataFrame
        :data:`RESULT_COLUMNS`, one row per atlas row, in the order given: whether the
        re-extracted matrix has the row's hash (``matrix_match``), whether the re-derived
        witnesses give the row's bracket and constructions (``bracket_match``), whether
        every re-derived witness verifies against the re-extracted matrix
        (``witnesses_verified``), ``passed`` (all three), the re-derived ends and one
        line naming the row and what failed.

    Raises
    ------
    ParameterError
        Naming ``atlas_rows`` when a fixed column is missing or there is no row;
        naming ``checkpoint`` when a row's checkpoint is not available offline.

    Examples
    --------
    The two synthetic matrices of a small study, bracketed and gathered (see
    :func:`analysis.atlas.build_atlas`), re-derived from their generator: every row
    passes; a row whose lower end or hash was edited fails, and says why:

    >>> from analysis.atlas import build_atlas, reverify_rows
    >>> from analysis.store import Store
    >>> from analysis.datasets import open_example_study
    >>> from analysis.study.stages import bracket_stage, synthetic_stage
    >>> from analysis.executor import RunSpec
    >>> study = open_example_study("studies/reverify.toml", synthetic=True)
    >>> with Store(study.paths.store, create=True) as store:
    ...     keys = synthetic_stage(study, store)
    ...     _ = bracket_stage(study, store, [], keys, engine=None, run=RunSpec(progress=False))
    >>> atlas = build_atlas(study, synthetic=True)
    >>> checks = reverify_rows(atlas)
    >>> checks["passed"].tolist()
    [True, True, True, True]
    >>> tampered = atlas.copy()
    >>> tampered.loc[0, "lower"] -= 1
    >>> tampered.loc[3, "matrix_sha256"] = "0" * 64
    >>> checks = reverify_rows(tampered)
    >>> checks[["matrix_match", "bracket_match", "witnesses_verified"]].values.tolist()
    [[True, False, True], [True, True, True], [True, True, True], [False, True, True]]
    >>> print(checks.loc[0, "line"])  # doctest: +ELLIPSIS
    row 0: FAIL ball{"beta": 1.0, "d": 2} seed:0 L=8 t=1 eps=0.1 (cell ...): bracket [..., ...] re-derived as [..., ...]
    """
    from tqdm.auto import tqdm

    from analysis.atlas.schema import conform

    if not isinstance(atlas_rows, pd.DataFrame) or atlas_rows.empty:
        raise ParameterError(
            "atlas_rows", "a non-empty selection of atlas rows", type(atlas_rows).__name__
        )
    labels = list(atlas_rows.index)
    try:
        rows = conform(atlas_rows)
    except ParameterError as exc:
        raise ParameterError("atlas_rows", exc.allowed, exc.got) from None
    rows.index = pd.Index(labels)
    paths = dict(checkpoint_paths or {})
    models: dict[str, Any] = {}
    results: dict[Any, dict] = {}
    real = rows.loc[rows["source"] == "checkpoint"]
    # per input: one forward pass; per matrix: one search over its batch of temperatures
    sources: list[tuple[pd.DataFrame, Callable[[], dict[str, Any]]]] = []
    for _, group in real.groupby(["checkpoint", "corpus_seed", "length"], sort=True):
        sources.append((group, lambda g=group: _extract(g, paths, models)))
    synth = rows.loc[rows["source"] == "synthetic"]
    if len(synth):
        sources.append((synth, lambda: _synthetic(synth)))
    bar = tqdm(
        total=rows["matrix_key"].nunique(), desc="re-verify", unit="matrix", disable=not progress
    )
    try:
        for group, derive in sources:
            arrays_by_key = derive()
            for key, cells in group.groupby("matrix_key", sort=False):
                arrays = arrays_by_key.get(key)
                temps, profs = ([], []) if arrays is None else _profiles(arrays, cells)
                for index, row in zip(cells.index, cells.itertuples(index=False), strict=True):
                    results[index] = _check_row(index, row, arrays, temps, profs)
                    if say is not None:
                        say(results[index]["line"])
                bar.update(1)
    finally:
        bar.close()
        models.clear()
    return pd.DataFrame([results[i] for i in labels], columns=list(RESULT_COLUMNS))


def failure_lines(checks: pd.DataFrame) -> list[str]:
    """The one-line reports of the rows that failed (``[]``: every row passed).

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.atlas.verify import failure_lines
    >>> checks = pd.DataFrame({"passed": [True, False], "line": ["row 0: PASS", "row 5: FAIL x"]})
    >>> failure_lines(checks)
    ['row 5: FAIL x']
    """
    return [str(s) for s in checks.loc[~checks["passed"].astype(bool), "line"]]
