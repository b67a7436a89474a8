"""Descriptor blocks for every (layer, head, temperature, eps) cell (``attnrank describe``)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.atomic import atomic_write
from analysis.attention import check_attention, fixed_torch_threads, softmax64
from analysis.descriptors.builtin import build_registry, builtin_registry
from analysis.descriptors.intrinsic import double_center
from analysis.descriptors.intrinsic import intrinsic as _intrinsic
from analysis.descriptors.registry import Block, Cell, MatrixData, Registry, run_block
from analysis.sources.files import QUERIES_KEYS, read_extract
from analysis.validation import ParameterError, check_eps_grid, check_int

KEY_COLUMNS = ("layer", "head", "temperature", "eps")
PARITY_TOL = 1e-4

#: Block functions that read Q, K, scale and bias only through the logits
#: ``scale Q K^T + bias`` (gauge-invariant): a bare matrix's ``log A`` feeds them.
_LOGIT_BLOCKS = (_intrinsic,)

#: A bare matrix's interaction ``C = P log A P`` loses its singular values at or below
#: ``BARE_NOISE sqrt(M N) eps(A.dtype)``: rounding noise of A's precision. A float32 model
#: probability is off by a few ulps, so ``log A`` by a few eps per entry, and such an
#: error matrix has spectral norm near ``2 sqrt(N)`` times that (MiniLM heads at N = 128:
#: noise components up to 9e-6 = 75 eps, true ones above 0.4; the bound is 4 N eps = 6e-5).
BARE_NOISE = 4.0


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
    _check_head_parity(
        data["A"][layer, head],
        (data["Q"][layer, head], data["K"][layer, head], data["scale"][layer, head]),
        data.get("mask"),
        None if bias is None else bias[layer, head],
        f" at layer {layer}, head {head}",
    )


def _check_head_parity(
    A: np.ndarray,
    head: tuple[np.ndarray, np.ndarray, float],
    mask: np.ndarray | None,
    bias: np.ndarray | None,
    where: str = "",
) -> None:
    """A must match ``softmax64(Q, K, scale, mask, bias)`` of ``head = (Q, K, scale)``."""
    A64 = softmax64(*head, mask, bias=bias)
    if np.shape(A) != A64.shape:
        raise ParameterError("A", f"the shape of softmax64(Q, K, ...), {A64.shape}", np.shape(A))
    err = float(np.abs(A64 - A).max())
    if not err <= PARITY_TOL:
        raise ParameterError(
            "A",
            f"softmax64(Q, K, scale, mask, bias) within {PARITY_TOL:g} (stored t = 1 matrix)",
            f"max deviation {err:.3g}{where}",
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
    mat: MatrixData, *, chosen: Sequence[Any], where: str = ""
) -> list[dict[str, float]]:
    """Rows ``{temperature, eps, BLOCK__feature...}`` of one head (SVDs shared across cells).

    A block that raises, or writes other feature names than on the head's first cell, is a
    one-line :class:`ParameterError` naming ``blocks``, the block and the cell (``where``
    says which head, e.g. ``"layer 0, head 1, "``).
    """
    rows = []
    first: dict[str, tuple[str, list[str]]] = {}
    for t in mat.temperatures:
        for e in mat.eps_grid:
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


def _bare_blocks(
    blocks: Sequence[str | Block] | None, masked: bool
) -> tuple[list[Block], tuple[str, ...]]:
    """The blocks a bare matrix can feed, and the names of the built-in ones it cannot.

    A bare matrix has A (and a mask) but no Q, K or scale. Its logits ``log A`` stand in
    for ``scale Q K^T + bias`` in the blocks that read the head only through its logits
    (:data:`_LOGIT_BLOCKS`); those need every logit, so not on a masked matrix. Named
    blocks that need more raise a :class:`ParameterError` naming ``Q``; ``blocks=None``
    leaves them out.
    """
    logit_ok = () if masked else _LOGIT_BLOCKS

    def fits(b: Block) -> bool:
        return set(b.needs) <= {"A", "mask"} or b.func in logit_ok

    if blocks is None:
        chosen = _chosen_blocks(None)
        return [b for b in chosen if fits(b)], tuple(b.name for b in chosen if not fits(b))
    chosen = _chosen_blocks(blocks)
    for b in chosen:
        if fits(b):
            continue
        if b.func in _LOGIT_BLOCKS:
            raise ParameterError(
                "mask",
                f"no masked entry for block {b.name!r} without Q and K (its interaction "
                "P log A P needs every logit; give Q, K and scale for a masked head)",
                "a mask with False entries",
            )
        raise ParameterError(
            "Q",
            f"Q, K and scale for block {b.name!r} (it reads {', '.join(b.needs)}; a bare "
            "matrix A feeds the baseline, baseline_plus and intrinsic blocks)",
            None,
        )
    return chosen, ()


class _BareMatrix(MatrixData):
    """A bare attention matrix A described as a head with logits ``log A`` and no Q or K.

    Blocks see A's own logits in :meth:`attention`: A at t = 1 (rows renormalized in
    float64), ``A^(1/t)`` renormalized at t. The logits the intrinsic block reads
    (``bias``, with empty Q and K) are ``log A`` less the singular components of
    ``C = P log A P`` at or below :data:`BARE_NOISE` ``sqrt(M N)`` times the machine epsilon
    of A's dtype (with ``denoise``): a float32 A's rounding gives C about N - 1 components
    of a few 1e-6, each of which would cost the block a kappa solve.
    """

    def __init__(
        self,
        A: np.ndarray,
        mask: np.ndarray | None,
        *,
        eps_grid: tuple[float, ...],
        temperatures: tuple[float, ...],
        denoise: bool,
    ) -> None:
        given = np.asarray(A)
        A = check_attention(given, name="A")[0]
        M, N = A.shape
        if mask is not None:
            mask = np.asarray(mask, dtype=bool)
            if mask.shape != A.shape:
                raise ParameterError("mask", f"a bool array of A's shape {A.shape}", mask.shape)
            outside = np.argwhere(~mask & (A != 0))
            if outside.size:
                raise ParameterError(
                    "mask", "False only where A is 0", f"A > 0 at {outside[0].tolist()}"
                )
        allowed = np.ones(A.shape, dtype=bool) if mask is None else mask
        zero = np.argwhere(allowed & (A <= 0))
        if zero.size:
            raise ParameterError(
                "A",
                "entries > 0 wherever mask allows a key (its logits are log A; pass "
                "mask=A > 0 for a masked head)",
                f"0 at {zero[0].tolist()}",
            )
        logits = np.zeros(A.shape)
        np.log(A, out=logits, where=allowed)  # masked logits 0: no logit block reads them
        self.logits = logits
        if denoise:
            C = double_center(logits)
            U, sv, Vt = np.linalg.svd(C, full_matrices=False)
            tail = sv <= BARE_NOISE * np.sqrt(M * N) * np.finfo(given.dtype).eps
            logits = logits - (U[:, tail] * sv[tail]) @ Vt[tail]
        super().__init__(
            np.zeros((M, 0)),
            np.zeros((N, 0)),
            1.0,
            mask,
            eps_grid=eps_grid,
            temperatures=temperatures,
            bias=logits,
        )

    def attention(self, t: float) -> np.ndarray:
        """``softmax64`` of A's own logits ``log A / t`` (once per temperature)."""
        return self.cached(
            ("A", float(t)), lambda: softmax64(self.Q, self.K, 1.0, self.mask, t, self.logits)
        )


def _covariates_only(df: pd.DataFrame, chosen: Sequence[Block]) -> pd.DataFrame:
    """``df`` without the columns its blocks declare diagnostics (:meth:`Block.info`)."""
    drop = [
        f"{b.name}__{feat}"
        for b in chosen
        for c in df.columns
        if c.startswith(f"{b.name}__")
        and b.info(feat := c.removeprefix(f"{b.name}__")).kind == "diagnostic"
    ]
    return df.drop(columns=drop)


def describe_matrix(
    A: np.ndarray | None = None,
    *,
    Q: np.ndarray | None = None,
    K: np.ndarray | None = None,
    scale: float | None = None,
    mask: np.ndarray | None = None,
    bias: np.ndarray | None = None,
    eps: Iterable[float],
    temperatures: Iterable[float] = (1.0,),
    blocks: Sequence[str | Block] | None = None,
    diagnostics: bool = False,
) -> pd.DataFrame:
    """Descriptor blocks of one attention matrix, or one head, for every (temperature, eps).

    Give a bare matrix ``A``, or a head's ``Q``, ``K`` and ``scale`` (then A, if given
    too, must be their softmax). Every keyword after ``A`` is keyword-only.

    Parameters
    ----------
    A : ndarray ``[M, N]`` or None
        An attention matrix at t = 1: rows summing to 1 within 1e-4 (float32 or float64;
        cast to float64), entries > 0 wherever ``mask`` allows a key. Without Q and K its
        logits are ``log A``; blocks that need the head's queries and keys (``native``) are
        then left out, or refused if named (see Raises). With Q, K and scale: checked
        against ``softmax64(Q, K, scale, mask, bias)`` within 1e-4, not used otherwise.
    Q, K : ndarray ``[L, d]`` or None, keyword-only
        A head's queries and keys (float32 or float64; cast to float64), with ``scale``.
    scale : float or None, keyword-only
    mask : bool ndarray ``[query, key]`` or None, keyword-only
        True = allowed; None = every key allowed. A bare matrix must be 0 where it is
        False, and a masked bare matrix feeds only the blocks that read A alone.
    bias : ndarray ``[query, key]`` or None, keyword-only
        With Q and K: the model's additive logit term (logits ``scale Q K^T + bias`` at
        t = 1); None for models without one, whose output does not change with this
        argument. Not allowed with a bare matrix (its logits are ``log A``).
    eps, temperatures : iterable of float, keyword-only
        Finite, > 0.
    blocks : sequence of str or Block, or None, keyword-only
        Built-in block names or :class:`~analysis.descriptors.Block` objects (a plugin's
        blocks: ``registry.get(name)`` of a :func:`~analysis.descriptors.build_registry`
        registry), in output order; None = every built-in block the input feeds.
    diagnostics : bool, default False, keyword-only
        False: the covariates only (the columns a comparison models); True: also the
        diagnostics each block declares (per-rank columns such as ``intrinsic__q_r3``;
        :meth:`~analysis.descriptors.Registry.diagnostic_columns`), as a study stores them.

    Returns
    -------
    pandas.DataFrame
        One row per (temperature, eps): those two columns, then ``BLOCK__feature``
        (float64).

    Raises
    ------
    ParameterError
        Naming ``A`` for a matrix that is not row-stochastic or has a zero where a key
        is allowed, or when neither A nor Q, K and scale are given; ``Q`` (``K``,
        ``scale``) when one of the three is missing or a named block needs them;
        ``mask`` when it disagrees with A or masks a bare matrix for ``intrinsic``;
        ``bias`` with a bare matrix.

    Notes
    -----
    A bare matrix is described as the head whose logits are ``S = log A`` (defined up to
    a constant per row, which no block sees): at temperature t its attention is
    ``A^(1/t)`` with rows renormalized, and the intrinsic block's interaction is
    ``C = P_M log(A) P_N`` (the same for any head whose softmax is A: double centring
    removes the row constants) less its singular components at A's rounding level
    (:data:`BARE_NOISE`). Computed on one BLAS thread (small LAPACK calls
    on several threads spin against each other: a 64 x 64 matrix took 54 s instead of
    under 2 s on a loaded two-core host), which also makes the result independent of the
    machine's thread count.

    Examples
    --------
    A bare 3 x 3 attention matrix: the covariates of the baseline and intrinsic blocks
    (the native block needs Q and K).

    >>> import numpy as np
    >>> from analysis.descriptors import describe_matrix
    >>> A = np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]])
    >>> df = describe_matrix(A, eps=[0.1, 0.2])
    >>> df[["eps", "baseline__svd_rank_l2", "intrinsic__interaction_dim"]]
       eps  baseline__svd_rank_l2  intrinsic__interaction_dim
    0  0.1                    3.0                         2.0
    1  0.2                    3.0                         2.0
    >>> any(c.startswith("native__") for c in df.columns), "intrinsic__q_r1" in df.columns
    (False, False)
    >>> "intrinsic__q_r1" in describe_matrix(A, eps=[0.1], diagnostics=True).columns
    True

    A head's queries and keys: the uniform matrix ``J / 4`` (every logit 0), whose rows
    have entropy ``ln 4`` and whose stable rank is 1.

    >>> from analysis.sources.synthetic import uniform_rows
    >>> head = uniform_rows(4)
    >>> df = describe_matrix(Q=head.Q, K=head.K, scale=head.scale, eps=[0.1, 0.2])
    >>> df[["temperature", "eps", "baseline__entropy_mean", "baseline__stable_rank"]].round(6)
       temperature  eps  baseline__entropy_mean  baseline__stable_rank
    0          1.0  0.1                1.386294                    1.0
    1          1.0  0.2                1.386294                    1.0
    >>> describe_matrix(A, eps=[0.1], blocks=["native"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: Q: expected Q, K and scale for block 'native' ...
    """
    from threadpoolctl import threadpool_limits

    eps_grid = check_eps_grid(eps, name="eps")
    temps = check_eps_grid(temperatures, name="temperatures")
    if not isinstance(diagnostics, bool):
        raise ParameterError("diagnostics", "True or False", diagnostics)
    given = {"Q": Q, "K": K, "scale": scale}
    missing = [n for n, v in given.items() if v is None]
    if len(missing) < 3:
        if missing:
            raise ParameterError(
                missing[0], "Q, K and scale together (a head's queries, keys and scale)", None
            )
        chosen = _chosen_blocks(blocks)
        head = (np.asarray(Q), np.asarray(K), float(scale))  # type: ignore[arg-type]
        m = None if mask is None else np.asarray(mask, dtype=bool)
        b = None if bias is None else np.asarray(bias)
        if A is not None:
            _check_head_parity(check_attention(A, name="A")[0], head, m, b)
        mat = MatrixData(*head, m, eps_grid=eps_grid, temperatures=temps, bias=b)
    elif A is None:
        raise ParameterError("A", "an attention matrix, or Q, K and scale", None)
    else:
        if bias is not None:
            raise ParameterError(
                "bias", "None with a bare matrix (its logits are log A)", "an array"
            )
        masked = mask is not None and not np.asarray(mask, dtype=bool).all()
        chosen, _ = _bare_blocks(blocks, masked=masked)
        logit_blocks = any(b.func in _LOGIT_BLOCKS for b in chosen)
    with threadpool_limits(1):
        if Q is None:
            mat = _BareMatrix(A, mask, eps_grid=eps_grid, temperatures=temps, denoise=logit_blocks)
        rows = _describe_one(mat, chosen=chosen)
    df = _float_frame(rows)
    return df if diagnostics else _covariates_only(df, chosen)


def _float_frame(rows: list[dict[str, float]]) -> pd.DataFrame:
    """``pd.DataFrame(rows)`` cast to float64, built as one array (missing keys NaN).

    Casting a frame of many columns (the intrinsic block's per-rank diagnostics: over
    1,700 at N = 256) column by column cost more than the baseline and native blocks
    together; one float64 array gives the same frame.
    """
    cols = list(dict.fromkeys(k for row in rows for k in row))
    nan = float("nan")
    vals = [[nan if (v := row.get(c, nan)) is None else v for c in cols] for row in rows]
    return pd.DataFrame(
        np.array(vals, dtype=np.float64).reshape(len(rows), len(cols)), columns=cols
    )


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
            mat = MatrixData(
                data["Q"][li, hi],
                data["K"][li, hi],
                data["scale"][li, hi],
                data.get("mask"),
                eps_grid=eps_grid,
                temperatures=temps,
                bias=None if bias is None else bias[li, hi],
            )
            head_rows = _describe_one(mat, chosen=chosen, where=where)
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
