"""Descriptor blocks for every (layer, head, temperature, eps) cell (``attnrank describe``)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.atomic import atomic_write
from analysis.attention import fixed_torch_threads, softmax64
from analysis.descriptors.builtin import build_registry, builtin_registry
from analysis.descriptors.registry import Block, Cell, MatrixData, Registry, run_block
from analysis.sources.files import QUERIES_KEYS, read_extract
from analysis.validation import ParameterError, check_eps_grid, check_int

KEY_COLUMNS = ("layer", "head", "temperature", "eps")
PARITY_TOL = 1e-4


def load_npz(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Load and check an ``extract``-layout npz (:func:`analysis.sources.files.read_extract`).

    Returns
    -------
    dict with ``Q``, ``K`` float64 ``[layer, head, L, d]``, ``scale`` float64
    ``[layer, head]``, ``mask`` bool ``[L, L]`` and, when stored, ``A`` and ``bias``
    ``[layer, head, L, L]`` (the model's additive logit term, float64).

    Raises
    ------
    FileNotFoundError
        The file does not exist.
    ParameterError
        Naming ``path``, the file and the array at fault (see ``read_extract``).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.descriptors.describe import load_npz
    >>> rng = np.random.default_rng(0)
    >>> np.savez("head.npz", Q=rng.normal(size=(1, 2, 5, 3)), K=rng.normal(size=(1, 2, 5, 3)),
    ...          scale=np.full((1, 2), 3 ** -0.5))
    >>> data = load_npz("head.npz")
    >>> sorted(data), data["Q"].dtype, bool(data["mask"].all())  # no mask stored: all allowed
    (['K', 'Q', 'mask', 'scale'], dtype('float64'), True)
    """
    data = read_extract(path, required=QUERIES_KEYS, optional=("mask", "causal", "A", "bias"))
    out = {name: data[name].astype(np.float64) for name in ("Q", "K", "scale")}
    L = out["Q"].shape[2]
    if "mask" in data:
        out["mask"] = data["mask"]
    else:
        out["mask"] = np.ones((L, L), dtype=bool)
        if "causal" in data and bool(data["causal"]):
            out["mask"] = np.tril(out["mask"])
    if "A" in data:
        out["A"] = data["A"]
    if "bias" in data:
        out["bias"] = data["bias"].astype(np.float64)
    return out


def _check_parity(data: dict[str, np.ndarray], layer: int, head: int) -> None:
    """The stored A (t = 1) must match softmax64 of the stored Q, K, scale, mask (, bias)."""
    if "A" not in data:
        return
    bias = data.get("bias")
    A64 = softmax64(
        data["Q"][layer, head],
        data["K"][layer, head],
        data["scale"][layer, head],
        data.get("mask"),
        bias=None if bias is None else bias[layer, head],
    )
    err = float(np.abs(A64 - data["A"][layer, head]).max())
    if not err <= PARITY_TOL:
        raise ParameterError(
            "A",
            f"softmax64(Q, K, scale, mask, bias) within {PARITY_TOL:g} (stored t = 1 matrix)",
            f"max deviation {err:.3g} at layer {layer}, head {head}",
        )


def _chosen_blocks(
    blocks: Sequence[str | Block] | None, registry: Registry | None = None
) -> list[Block]:
    """The blocks to compute, checked for duplicates and available inputs.

    ``blocks`` holds :class:`Block` objects or names of ``registry``'s blocks (default:
    the built-in registry); None means every block of ``registry``.
    """
    registry = builtin_registry() if registry is None else registry
    if blocks is None:
        blocks = list(registry)
    if isinstance(blocks, str) or not blocks:
        raise ParameterError("blocks", "a non-empty list of block names", blocks)
    chosen = [b if isinstance(b, Block) else registry.get(b) for b in blocks]
    if len({b.name for b in chosen}) != len(chosen):
        raise ParameterError("blocks", "distinct block names", list(blocks))
    available = {"Q", "K", "scale", "mask", "A", "bias"}  # mask, bias: None when absent
    for b in chosen:
        lacking = [n for n in b.needs if n not in available]
        if lacking:
            raise ParameterError(
                "blocks", f"blocks whose inputs exist ({b.name} needs {lacking})", b.name
            )
    return chosen


def _describe_one(
    Q: np.ndarray,
    K: np.ndarray,
    scale: float,
    mask: np.ndarray | None,
    *,
    eps_grid: tuple[float, ...],
    temperatures: tuple[float, ...],
    chosen: Sequence[Any],
    bias: np.ndarray | None = None,
    where: str = "",
) -> list[dict[str, float]]:
    """Rows ``{temperature, eps, BLOCK__feature...}`` of one head (SVDs shared across cells).

    A block that raises, or writes other feature names than on the head's first cell, is a
    one-line :class:`ParameterError` naming ``blocks``, the block and the cell (``where``
    says which head, e.g. ``"layer 0, head 1, "``).
    """
    mat = MatrixData(Q, K, scale, mask, eps_grid=eps_grid, temperatures=temperatures, bias=bias)
    rows = []
    first: dict[str, tuple[str, list[str]]] = {}
    for t in temperatures:
        for e in eps_grid:
            cell = Cell(mat, t, e)
            at = f"{where}t={t:g}, eps={e:g}"
            row: dict[str, float] = {"temperature": t, "eps": e}
            for b in chosen:
                out = _run_cell(b, cell, at)
                names = first.setdefault(b.name, (at, sorted(out)))
                if sorted(out) != names[1]:
                    raise _names_differ(b.name, at, sorted(out), *names)
                row.update(out)
            rows.append(row)
    return rows


def _run_cell(block: Block, cell: Cell, at: str) -> dict[str, float]:
    """:func:`run_block`, a block's own exception turned into one line naming block and cell."""
    try:
        return run_block(block, cell)
    except ParameterError as exc:  # the block's output is malformed: run_block names it
        raise ParameterError(exc.name, exc.allowed, f"{at}: {exc.got}") from exc
    except Exception as exc:  # a plugin's bug: one line, not a traceback
        text = (str(exc).splitlines() or [""])[0][:160]
        raise ParameterError(
            "blocks",
            f"block {block.name!r} to describe every cell without an error",
            f"{at}: {type(exc).__name__}: {text}",
        ) from exc


def _names_differ(
    name: str, at: str, got: list[str], first_at: str, first: list[str]
) -> ParameterError:
    """The one-line error of a block whose feature names differ between two cells."""
    prefix = f"{name}__"
    short = [[c.removeprefix(prefix) for c in cols] for cols in (got, first)]
    return ParameterError(
        "blocks",
        f"block {name!r} to write the same feature names on every cell",
        f"{at}: {short[0]}, but {first_at}: {short[1]}",
    )


def describe_matrix(
    Q: np.ndarray,
    K: np.ndarray,
    scale: float,
    mask: np.ndarray | None = None,
    *,
    eps: Iterable[float],
    temperatures: Iterable[float] = (1.0,),
    blocks: Sequence[str | Block] | None = None,
    bias: np.ndarray | None = None,
) -> pd.DataFrame:
    """Descriptor blocks of one head for every (temperature, eps) cell.

    Parameters
    ----------
    Q, K : ndarray ``[L, d]``
        Per-head queries and keys (float32 or float64; cast to float64).
    scale : float
    mask : bool ndarray ``[query, key]`` or None (True = allowed)
    eps, temperatures : iterable of float, keyword-only
        Finite, > 0.
    blocks : sequence of str or Block, or None, keyword-only
        Built-in block names or :class:`~analysis.descriptors.Block` objects (a plugin's
        blocks: ``registry.get(name)`` of a :func:`~analysis.descriptors.build_registry`
        registry), in output order; None = every built-in block.
    bias : ndarray ``[query, key]`` or None, keyword-only
        The model's additive logit term (logits ``scale Q K^T + bias`` at t = 1); None
        for models without one, whose output does not change with this argument.

    Returns
    -------
    pandas.DataFrame
        One row per (temperature, eps): those two columns, then ``BLOCK__feature``
        (float64). Threads are whatever the caller set (the study runner uses one).

    Examples
    --------
    The uniform matrix ``J / 4`` (every logit 0): each row's entropy is ``ln 4`` and its
    stable rank is 1.

    >>> import numpy as np
    >>> from analysis.descriptors import describe_matrix
    >>> from analysis.sources.synthetic import uniform_rows
    >>> head = uniform_rows(4)
    >>> df = describe_matrix(head.Q, head.K, head.scale, eps=[0.1, 0.2], blocks=["baseline"])
    >>> df[["temperature", "eps", "baseline__entropy_mean", "baseline__stable_rank"]].round(6)
       temperature  eps  baseline__entropy_mean  baseline__stable_rank
    0          1.0  0.1                1.386294                    1.0
    1          1.0  0.2                1.386294                    1.0
    """
    eps_grid = check_eps_grid(eps, name="eps")
    temps = check_eps_grid(temperatures, name="temperatures")
    rows = _describe_one(
        np.asarray(Q),
        np.asarray(K),
        float(scale),
        None if mask is None else np.asarray(mask, dtype=bool),
        eps_grid=eps_grid,
        temperatures=temps,
        chosen=_chosen_blocks(blocks),
        bias=None if bias is None else np.asarray(bias),
    )
    df = pd.DataFrame(rows)
    # one astype for all columns: assigning df[feat] column by column costs more than the
    # baseline and native blocks together at L = 128
    return df.astype(dict.fromkeys(df.columns, np.float64))


def describe_arrays(
    data: dict[str, np.ndarray],
    *,
    eps: Iterable[float],
    temperatures: Iterable[float] = (1.0,),
    blocks: Sequence[str | Block] | None = None,
    progress: bool = False,
    threads: int = 1,
) -> pd.DataFrame:
    """Compute descriptor blocks for every (layer, head, temperature, eps) cell.

    Parameters
    ----------
    data : dict
        As returned by :func:`load_npz` (``Q``, ``K`` ``[layer, head, L, d]``, ``scale``
        ``[layer, head]``, ``mask`` ``[L, L]``, optional ``A`` and ``bias``).
    eps, temperatures : iterable of float, keyword-only
        Finite, > 0.
    blocks : sequence of str or Block, or None, keyword-only
        As in :func:`describe_matrix`: built-in block names or ``Block`` objects, in
        output order; None = every built-in block.
    progress : bool, keyword-only
        Show a tqdm bar over heads.
    threads : int, keyword-only
        BLAS / torch threads while computing (1 keeps results independent of the machine).

    Returns
    -------
    pandas.DataFrame
        One row per cell, columns ``layer, head, temperature, eps`` then ``BLOCK__feature``
        (float64), blocks in the given order.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.descriptors.describe import describe_arrays
    >>> rng = np.random.default_rng(0)
    >>> data = {"Q": rng.normal(size=(1, 2, 5, 3)), "K": rng.normal(size=(1, 2, 5, 3)),
    ...         "scale": np.full((1, 2), 3 ** -0.5)}
    >>> df = describe_arrays(data, eps=[0.1], temperatures=[1.0, 2.0], blocks=["baseline"])
    >>> df[["layer", "head", "temperature", "eps"]]
       layer  head  temperature  eps
    0      0     0          1.0  0.1
    1      0     0          2.0  0.1
    2      0     1          1.0  0.1
    3      0     1          2.0  0.1
    """
    eps_grid = check_eps_grid(eps, name="eps")
    temps = check_eps_grid(temperatures, name="temperatures")
    threads = check_int("threads", threads, minimum=1)
    chosen = _chosen_blocks(blocks)
    from tqdm.auto import tqdm

    n_layer, n_head = data["Q"].shape[:2]
    heads = [(li, hi) for li in range(n_layer) for hi in range(n_head)]
    bias = data.get("bias")
    rows: list[dict[str, float]] = []
    first: tuple[str, dict[str, float]] | None = None  # every head writes the first's names
    with fixed_torch_threads(threads):
        for li, hi in tqdm(heads, desc="describe", unit="head", disable=not progress):
            _check_parity(data, li, hi)
            where = f"layer {li}, head {hi}, "
            head_rows = _describe_one(
                data["Q"][li, hi],
                data["K"][li, hi],
                data["scale"][li, hi],
                data.get("mask"),
                eps_grid=eps_grid,
                temperatures=temps,
                chosen=chosen,
                bias=None if bias is None else bias[li, hi],
                where=where,
            )
            at = f"{where}t={temps[0]:g}, eps={eps_grid[0]:g}"
            first = (at, head_rows[0]) if first is None else first
            for b in chosen:
                got, was = ([c for c in r if c.startswith(f"{b.name}__")]
                            for r in (head_rows[0], first[1]))  # fmt: skip
                if sorted(got) != sorted(was):
                    raise _names_differ(b.name, at, sorted(got), first[0], sorted(was))
            rows += [{"layer": li, "head": hi, **row} for row in head_rows]
    df = pd.DataFrame(rows)
    return df.astype({c: np.int64 if c in ("layer", "head") else np.float64 for c in df.columns})


def write_csv_atomic(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write ``df`` to ``path`` as CSV, atomically (:func:`analysis.atomic.atomic_write`).

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.descriptors.describe import write_csv_atomic
    >>> write_csv_atomic(pd.DataFrame({"a": [1, 2]}), "out/table.csv").read_text()
    'a\\n1\\n2\\n'
    """
    path = Path(path)
    with atomic_write(path, mode="wb") as fh:
        fh.write(df.to_csv(index=False).encode("utf-8"))
    return path


def describe_file(
    path: str | os.PathLike,
    *,
    eps: Iterable[float],
    temperatures: Iterable[float] = (1.0,),
    blocks: Sequence[str] | None = None,
    plugins: Sequence[str] = (),
    versions: Mapping[str, int] | None = None,
    progress: bool = False,
    threads: int = 1,
) -> pd.DataFrame:
    """Read an ``extract`` npz and describe it (see :func:`describe_arrays`).

    The blocks come from ``build_registry(plugins, versions)``: the built-in blocks (each
    at the version ``versions`` gives it, else version 1; ``{"native": 2}``), then each
    plugin module's ``BLOCKS`` in the order given. ``blocks=None`` means every block of
    that registry (built-in ones, then plugins).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.descriptors import describe_file
    >>> rng = np.random.default_rng(0)
    >>> np.savez("head.npz", Q=rng.normal(size=(1, 2, 5, 3)), K=rng.normal(size=(1, 2, 5, 3)),
    ...          scale=np.full((1, 2), 3 ** -0.5))
    >>> df = describe_file("head.npz", eps=[0.1, 0.2], blocks=["baseline"])
    >>> df.shape[0], list(df.columns[:4])  # 2 heads x 2 eps
    (4, ['layer', 'head', 'temperature', 'eps'])
    >>> v2 = describe_file("head.npz", eps=[0.1], blocks=["native"], versions={"native": 2})
    >>> int(v2["native__q_rank"].max())  # version 2 adds the numerical ranks
    3
    """
    registry = build_registry(plugins, versions)
    eps_grid = check_eps_grid(eps, name="eps")
    temps = check_eps_grid(temperatures, name="temperatures")
    chosen = [registry.get(b) for b in (list(registry) if blocks is None else blocks)]
    data = load_npz(path)
    return describe_arrays(
        data, eps=eps_grid, temperatures=temps, blocks=chosen, progress=progress, threads=threads
    )
