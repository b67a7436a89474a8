"""Bracket files: profile the matrices of one input and write ``OUT.json``.

The matrices come in as arrays (:class:`MatrixInput`, :class:`QueriesKeys`); reading
them from a ``.npy`` / extract ``.npz`` file is the command line's
(:mod:`analysis.cli.inputs`), the extract format's reader is in
:mod:`analysis.sources.files`. The JSON layout is a stable contract
(docs/guide/conventions.md, "Bracket engine"); other tools script against it, and
:mod:`analysis.brackets.results` re-checks it. Errors name
the parameters of these functions (``workers``, ``batch``, ``eps``); the command line
names its flags instead.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from analysis.atomic import JsonlCheckpoint, as_checkpoint, atomic_write
from analysis.brackets.profile import Profile
from analysis.brackets.results import report_dropped
from analysis.brackets.search import profile_matrices
from analysis.brackets.versions import check_engine
from analysis.executor import RunSpec, check_executor, task_pool
from analysis.validation import ParameterError, check_device, check_eps_grid, check_int


@dataclass(frozen=True)
class MatrixInput:
    """Matrices of one input file: ``A`` ``[H, M, N]`` float64, with ``(layer, head)`` per matrix.

    ``sha256`` identifies the input (result files and checkpoints are keyed by it),
    ``temperature`` is the one the matrices were computed at (None: as given) and
    ``renormalized`` whether their rows were divided by their sums.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.brackets.io import MatrixInput, profile_file
    >>> A = np.stack([np.eye(4), np.full((4, 4), 0.25)])  # r_0.5 = 4 and 1
    >>> data = MatrixInput(A, [0, 0], [0, 1], "sha-of-the-input-file", None, False)
    >>> data.A.shape, list(zip(data.layers, data.heads))
    ((2, 4, 4), [(0, 0), (0, 1)])
    """

    A: np.ndarray
    layers: list[int | None]
    heads: list[int | None]
    sha256: str
    temperature: float | None
    renormalized: bool


def _block(args: tuple) -> list[Profile]:
    As, eps, effort, device, engine = args
    return profile_matrices(As, eps=eps, effort=effort, device=device, engine=engine)


def profile_file(
    data: MatrixInput,
    *,
    eps: Sequence[float],
    effort: str = "default",
    engine: int | None = None,
    checkpoint: str | os.PathLike | JsonlCheckpoint | None = None,
    say: Callable[[str], None] | None = None,
    on_profile: Callable[[int, Profile], None] | None = None,
    execution: RunSpec = RunSpec(),
) -> list[Profile]:
    """Profiles for every matrix of ``data``, by the search of engine version ``engine``.

    Matrices are profiled in fixed blocks of ``execution.batch`` consecutive indices,
    side by side (:func:`analysis.brackets.search.profile_matrices`), by the workers or
    the executor of ``execution`` (:class:`analysis.executor.RunSpec`); results do not
    depend on how many.
    With a ``checkpoint`` path, each finished profile is appended (and flushed to disk) as
    one JSON line keyed by input hash, index, temperature, eps, effort and engine, and
    profiles already there are reused, so an interrupted run resumes where it stopped (a
    block with any matrix missing is run again whole, so that its batch, and with it the
    result, is the same as in an uninterrupted run). A line holds the witnesses as base64 of their float32
    bytes (``Profile.to_dict(arrays="float32-base64")``): exact, since the search stores
    only float32 values, and about four times smaller and faster to write than lists of
    floats; a profile with any other value is written as lists.

    A checkpointed profile is reused only once every witness in it re-verifies against
    its matrix (:meth:`Profile.reverify`, cheap next to the search): one that fails (a
    damaged or edited line) is dropped and its block recomputed, and their number is
    passed to ``say`` (default: a :class:`UserWarning`) as
    ``"N stored profiles failed re-verification and were recomputed"``.

    ``on_profile(index, profile)`` is called in this process once for every matrix, as
    soon as its profile is final: first the reused checkpointed ones (in index order),
    then the computed ones as their blocks finish (in block order). The command line
    encodes each matrix's part of ``OUT.json`` there (:class:`ResultWriter`), while the
    workers search the next blocks.

    ``engine`` (:data:`~analysis.brackets.ENGINE_VERSIONS`; None: the newest) is the
    search's version; it is part of every checkpoint key, so a checkpoint of one engine
    is never resumed by another.

    Examples
    --------
    The identity has ``r_eps = 4`` and the uniform matrix rank 1; a second run with the
    same checkpoint reuses the stored (re-verified) profiles:

    >>> from analysis.datasets import example_matrix_input
    >>> from analysis.executor import RunSpec
    >>> from analysis.brackets.io import profile_file
    >>> data = example_matrix_input()  # the identity and the uniform matrix: r_0.5 = 4 and 1
    >>> quiet = RunSpec(progress=False)
    >>> profs = profile_file(data, eps=(0.5,), effort="fast", checkpoint="ck.jsonl", execution=quiet)
    >>> [p.bracket(0.5) for p in profs]
    [Bracket(lo=4, hi=4), Bracket(lo=1, hi=1)]
    >>> again = profile_file(data, eps=(0.5,), effort="fast", checkpoint="ck.jsonl", execution=quiet)
    >>> [p.to_dict() == q.to_dict() for p, q in zip(profs, again)]
    [True, True]
    """
    eps = check_eps_grid(eps)
    engine = check_engine(engine)
    executor, progress = execution.executor, execution.progress
    workers = check_executor(executor, execution.workers)
    batch = check_int("batch", execution.batch, minimum=1)
    device = execution.device
    if data.A.ndim != 3 or data.A.shape[2] < 2:
        # one key: every row is [1]; the lower search's column clustering needs two
        raise ParameterError("data", "matrices [H, M, N] of at least 2 columns", data.A.shape)
    t = "none" if data.temperature is None else repr(data.temperature)
    grid = ",".join(f"{e!r}" for e in eps)
    keys = [
        f"{data.sha256}:{i}:{t}:{data.renormalized}:{grid}:{effort}:engine{engine}"
        for i in range(data.A.shape[0])
    ]
    ck = as_checkpoint(checkpoint)
    # A torn line (a crash mid-write) does not parse or decode: that matrix is redone.
    done = ck.read(lambda rec: Profile.from_dict(rec["profile"])) if ck is not None else {}
    dropped = 0
    for i, key in enumerate(keys):
        if key in done and done[key].reverify(data.A[i]):
            del done[key]  # recomputed below, and appended after the failed line
            dropped += 1
    blocks = [list(range(s, min(s + batch, len(keys)))) for s in range(0, len(keys), batch)]
    todo = [blk for blk in blocks if any(keys[i] not in done for i in blk)]
    if on_profile is not None:
        for i, key in enumerate(keys):
            if key in done:
                on_profile(i, done[key])
    device = None if device is None else str(check_device(device))
    jobs = [(data.A[blk], eps, effort, device, engine) for blk in todo]
    bar = tqdm(
        total=len(keys),
        initial=len(keys) - sum(len(blk) for blk in todo),
        desc="brackets",
        unit="matrix",
        disable=not progress,
    )
    with contextlib.ExitStack() as stack:
        stack.callback(bar.close)
        append = stack.enter_context(ck.appender()) if ck is not None else None
        pool = stack.enter_context(
            task_pool(executor, 1 if len(jobs) <= 1 else workers, mp_context=None)
        )
        if pool is None:
            results = map(_block, jobs)
        else:
            calls = ((None, (job,)) for job in jobs)
            results = (
                r
                for _, r in stack.enter_context(
                    contextlib.closing(pool.imap(_block, calls, ordered=True))
                )
            )
        for blk, profs in zip(todo, results, strict=True):
            for i, prof in zip(blk, profs, strict=True):
                if keys[i] in done:  # already stored: keep the stored profile
                    continue
                done[keys[i]] = prof
                if append is not None:
                    append({"key": keys[i], "profile": prof.to_dict(arrays=_arrays_of(prof))})
                if on_profile is not None:
                    on_profile(i, prof)
            bar.update(len(blk))
    report_dropped(dropped, "profile", say)
    return [done[k] for k in keys]


def _arrays_of(prof: Profile) -> str:
    """``"float32-base64"`` when every witness array of ``prof`` holds float32 values
    (all the search stores: it rounds each candidate to float32 before certifying it), so
    that the encoding is exact; ``"lists"`` otherwise."""
    for w in prof.upper.values():
        if not (_is_float32(w.U) and _is_float32(w.W)):
            return "lists"
    for w in prof.lower.values():
        if not (_is_float32(w.R) and _is_float32(w.Y)):
            return "lists"
    return "float32-base64"


def _is_float32(a: np.ndarray) -> bool:
    a = np.asarray(a)
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.array_equal(a.astype(np.float32).astype(a.dtype), a))


def _witness_json(prof: Profile, A: np.ndarray, brackets: list[dict[str, Any]]) -> dict[str, list]:
    ups, lows = {}, {}
    for b in brackets:
        w = prof.upper_end(b["eps"])
        U, W = prof.witness_arrays(w, A)
        ups[w.rank] = {"rank": w.rank, "U": U.tolist(), "W": W.tolist()}
        if b["lower"] >= 1:
            lw = prof.lower_end(b["eps"])
            lows[lw.size] = {"size": lw.size, "R": lw.R.tolist(), "Y": lw.Y.tolist()}
    return {"upper": [ups[k] for k in sorted(ups)], "lower": [lows[m] for m in sorted(lows)]}


def result_json(
    data: MatrixInput,
    profiles: list[Profile],
    *,
    eps: Sequence[float],
    effort: str,
    witnesses: bool,
    engine: int | None = None,
) -> dict[str, Any]:
    """The ``OUT.json`` contents of ``attnrank bracket``: brackets (and witnesses) per matrix.

    The layout is a stable contract (docs/guide/conventions.md, "Bracket engine");
    ``witnesses`` adds the arrays of every end, which
    :func:`analysis.brackets.results.verify_result` re-checks.
    ``engine`` (the search's version, as ``attnrank bracket`` records it) adds a top-level
    ``engine`` key after ``effort``; every other key is the same with or without it.

    Examples
    --------
    >>> from analysis.datasets import example_matrix_input
    >>> from analysis.executor import RunSpec
    >>> from analysis.brackets.io import profile_file, result_json
    >>> data = example_matrix_input()  # the identity and the uniform matrix: r_0.5 = 4 and 1
    >>> profs = profile_file(data, eps=(0.5,), effort="fast", execution=RunSpec(progress=False))
    >>> result = result_json(data, profs, eps=(0.5,), effort="fast", witnesses=True)
    >>> sorted(result)
    ['effort', 'input_sha256', 'matrices', 'renormalized', 'temperature']
    >>> [m["brackets"] for m in result["matrices"]]
    [[{'eps': 0.5, 'lower': 4, 'upper': 4}], [{'eps': 0.5, 'lower': 1, 'upper': 1}]]
    >>> [w["rank"] for w in result["matrices"][1]["witnesses"]["upper"]]
    [1]
    """
    mats = [_matrix_json(data, i, prof, eps, witnesses) for i, prof in enumerate(profiles)]
    return {**_result_head(data, effort, engine), "matrices": mats}


def _result_head(data: MatrixInput, effort: str, engine: int | None = None) -> dict[str, Any]:
    """The top-level keys of ``OUT.json`` before ``matrices`` (which comes last)."""
    head: dict[str, Any] = {
        "input_sha256": data.sha256,
        "temperature": data.temperature,
        "renormalized": data.renormalized,
        "effort": effort,
    }
    if engine is not None:
        head["engine"] = engine
    return head


def _matrix_json(
    data: MatrixInput, i: int, prof: Profile, eps: Sequence[float], witnesses: bool
) -> dict[str, Any]:
    """Matrix ``i``'s entry of ``OUT.json``'s ``matrices``."""
    br = prof.to_frame(eps).to_dict("records")
    return {
        "index": i,
        "layer": data.layers[i],
        "head": data.heads[i],
        "shape": list(prof.shape),
        "brackets": br,
        "witnesses": _witness_json(prof, data.A[i], br) if witnesses else None,
        "methods": prof.stats.get("methods"),
        "seconds": prof.stats.get("seconds", {}).get("total"),
    }


class ResultWriter:
    """``OUT.json`` of :func:`result_json`, encoded matrix by matrix as profiles finish.

    :meth:`add` turns one matrix's entry into JSON text at once (pass it as
    ``profile_file(..., on_profile=writer.add)``, so that the encoding overlaps the
    search of the next blocks instead of following it), :meth:`write` writes the file
    atomically. The bytes are those of ``json.dumps(result_json(...))``; only the text
    of each matrix is held, never its witnesses as lists of Python floats.

    Parameters
    ----------
    data : MatrixInput
    eps : sequence of float, keyword-only
    effort : str, keyword-only
    witnesses : bool, keyword-only
    engine : int or None, keyword-only
        As in :func:`result_json`.

    Examples
    --------
    >>> import json
    >>> from analysis.datasets import example_matrix_input
    >>> from analysis.executor import RunSpec
    >>> from analysis.brackets.io import ResultWriter, profile_file, result_json
    >>> data = example_matrix_input()  # the identity and the uniform matrix: r_0.5 = 4 and 1
    >>> writer = ResultWriter(data, eps=(0.5,), effort="fast", witnesses=True)
    >>> quiet = RunSpec(progress=False)
    >>> profs = profile_file(data, eps=(0.5,), effort="fast", on_profile=writer.add, execution=quiet)
    >>> writer.write("out.json")
    >>> with open("out.json") as f:
    ...     text = f.read()
    >>> text == json.dumps(result_json(data, profs, eps=(0.5,), effort="fast", witnesses=True))
    True
    """

    def __init__(
        self,
        data: MatrixInput,
        *,
        eps: Sequence[float],
        effort: str,
        witnesses: bool,
        engine: int | None = None,
    ) -> None:
        self.data = data
        self.eps = check_eps_grid(eps)
        self.effort = effort
        self.witnesses = bool(witnesses)
        self.engine = engine
        self._parts: dict[int, str] = {}

    def add(self, index: int, profile: Profile) -> None:
        """Encode matrix ``index``'s entry (a later call for the same index replaces it)."""
        entry = _matrix_json(self.data, index, profile, self.eps, self.witnesses)
        self._parts[index] = json.dumps(entry)

    def write(self, path: str | os.PathLike) -> None:
        """Write ``OUT.json`` to ``path`` through :func:`analysis.atomic.atomic_write`.

        Raises
        ------
        ParameterError
            Naming ``profile`` when some matrix of ``data`` was never added.
        """
        n = self.data.A.shape[0]
        missing = [i for i in range(n) if i not in self._parts]
        if missing:
            raise ParameterError(
                "profile", f"one per matrix of the input ({n})", f"none for {missing}"
            )
        # json.dumps's default separators; "matrices" is the last key of the head.
        head = json.dumps(_result_head(self.data, self.effort, self.engine))
        with atomic_write(path, mode="w") as f:
            f.write(head[:-1] + ', "matrices": [')
            for i in range(n):
                if i:
                    f.write(", ")
                f.write(self._parts[i])
            f.write("]}")


@dataclass(frozen=True)
class QueriesKeys:
    """Per-matrix queries and keys of an extract: ``Q``, ``K`` ``[H, L, d]``, logit scale
    ``[H]`` (the model's scale over the temperature), ``mask`` ``[L, L]`` (None when every
    key is allowed), ``bias`` ``[H, L, L]`` (the additive logit term at t = 1, None when the
    model adds none).

    Examples
    --------
    Queries and keys of two 4-key heads, the first with logits ``20 I`` (nearly the
    identity), the second uniform:

    >>> import numpy as np
    >>> from analysis.attention import softmax64
    >>> from analysis.brackets.io import QueriesKeys
    >>> Q = K = np.stack([np.eye(4), np.zeros((4, 4))])
    >>> qk = QueriesKeys(Q, K, np.array([20.0, 1.0]), None)
    >>> A = softmax64(qk.Q[1], qk.K[1], qk.scale[1], qk.mask)
    >>> A.tolist() == [[0.25] * 4] * 4
    True
    """

    Q: np.ndarray
    K: np.ndarray
    scale: np.ndarray
    mask: np.ndarray | None = None
    bias: np.ndarray | None = None

    def head(self, i: int) -> QueriesKeys:
        """Matrix ``i``'s: ``Q``, ``K`` ``[L, d]``, ``scale`` a float, ``bias`` ``[L, L]``
        (as :mod:`analysis.brackets.approximants` takes them)."""
        bias = None if self.bias is None else self.bias[i]
        return QueriesKeys(self.Q[i], self.K[i], self.scale[i], self.mask, bias)
