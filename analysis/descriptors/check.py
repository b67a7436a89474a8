"""Conformance kit for descriptor blocks: :func:`check_block` (as scikit-learn's
``check_estimator``).

A block, built in or from a plugin, must behave as the describe stage and the lock assume:
it returns a dict of real scalars named ``BLOCK__feature`` (one ``__``), the same covariate
names on every cell (those the lock records from the probe cell,
:func:`~analysis.descriptors.block_covariates`) and the same feature names on every cell of
one matrix; its values are finite unless the block declares the feature ``nonfinite``
(:func:`~analysis.descriptors.descriptor`); two runs on the same cells give equal values;
and the block survives a pickle round trip with the same output (worker processes receive
blocks pickled). ``attnrank prereg lock`` and ``amend`` run the kit on every plugin block
of the design's models and refuse one that fails it.
"""

from __future__ import annotations

import fnmatch
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np

from analysis.descriptors.registry import Block, Cell, MatrixData, as_block, run_block
from analysis.descriptors.versions import PROBE, block_covariates
from analysis.validation import ParameterError

__all__ = ["CHECKS", "check_block", "kit_matrices"]

#: The kit's checks, in the order they run: what each one requires.
CHECKS = {
    "runs": "to describe every cell of the kit's matrices without an error",
    "names": "a dict of real scalars with feature names like 'max_entry' (no '__')",
    "same_names": "the probe cell's covariate names on every cell, and one set of "
    "feature names on every cell of a matrix",
    "finite": "finite values, or a feature declared nonfinite=(...) in @descriptor",
    "deterministic": "equal values from two runs on the same cells",
    "picklable": "a pickle round trip, then equal values",
}

#: The kit's grid: every matrix is described at each (temperature, eps).
TEMPERATURES = (1.0, 2.0)
EPS_GRID = (0.05, 0.2)

#: ``{(matrix, t, eps): {feature: value}}``: a block's output on the kit's cells.
Rows = dict[tuple[str, float, float], dict[str, float]]


def kit_matrices() -> dict[str, dict[str, Any]]:
    """The kit's small heads (L = 6, d = 3): name -> ``Q``, ``K``, ``scale``, ``mask``, ``bias``.

    ``probe`` (the lock's probe head), ``rank_deficient`` (Q of rank 1, K of rank 2),
    ``zero_keys`` (K = 0: uniform attention, C = 0), ``duplicate_tokens`` (the last
    three tokens repeat the first three), ``causal`` (a lower-triangular mask) and
    ``logit_bias`` (an additive logit bias beside ``scale Q K^T``).

    Examples
    --------
    >>> from analysis.descriptors.check import kit_matrices
    >>> heads = kit_matrices()
    >>> list(heads)
    ['probe', 'rank_deficient', 'zero_keys', 'duplicate_tokens', 'causal', 'logit_bias']
    >>> int(np.linalg.matrix_rank(heads["rank_deficient"]["Q"]))
    1
    """
    rng = np.random.default_rng(PROBE["seed"])
    L, d = PROBE["L"], PROBE["d"]
    Q, K = rng.standard_normal((L, d)), rng.standard_normal((L, d))
    base = {"Q": Q, "K": K, "scale": 1.0 / np.sqrt(d), "mask": None, "bias": None}
    half = np.concatenate([Q[: L // 2]] * 2), np.concatenate([K[: L // 2]] * 2)
    return {
        "probe": base,
        "rank_deficient": {**base, "Q": np.outer(Q[:, 0], [1.0, -2.0, 0.5]), "K": K * [1, 1, 0]},
        "zero_keys": {**base, "K": np.zeros((L, d))},
        "duplicate_tokens": {**base, "Q": half[0], "K": half[1]},
        "causal": {**base, "mask": np.tril(np.ones((L, L), dtype=bool))},
        "logit_bias": {**base, "bias": rng.standard_normal((L, L))},
    }


def _fail(block: Block, check: str, where: tuple | str, what: str) -> ParameterError:
    if isinstance(where, tuple):
        where = "matrix {} (t={}, eps={})".format(*where)
    allowed = f"block {block.name!r} to pass check {check!r}: {CHECKS[check]}"
    return ParameterError("blocks", allowed, f"{where}: {what}")


def _describe(block: Block) -> Rows:
    """The block's output on every cell of the kit, each matrix in a fresh cache."""
    rows: Rows = {}
    for name, head in kit_matrices().items():
        data = MatrixData(**head, eps_grid=EPS_GRID, temperatures=TEMPERATURES)
        for key in ((name, t, eps) for t in TEMPERATURES for eps in EPS_GRID):
            try:
                row = run_block(block, Cell(data, key[1], key[2]))
            except ParameterError as exc:
                raise _fail(block, "names", key, str(exc)) from None
            except Exception as exc:
                raise _fail(block, "runs", key, f"{type(exc).__name__}: {exc}") from exc
            rows[key] = {c.split("__", 1)[1]: v for c, v in row.items()}
    return rows


def _check_rows(block: Block, rows: Rows) -> None:
    """The checks of one run: ``names``, ``same_names``, ``finite``."""
    covariates = set(block_covariates(block))
    first: dict[str, set[str]] = {}
    for key, row in rows.items():
        if any("__" in f for f in row):
            raise _fail(block, "names", key, f"features {[f for f in row if '__' in f]}")
        cov = {f for f in row if block.info(f).kind == "covariate"}
        if cov != covariates:
            got = f"covariates {sorted(cov)} (probe cell: {sorted(covariates)})"
            raise _fail(block, "same_names", key, got)
        names = first.setdefault(key[0], set(row))
        if set(row) != names:
            raise _fail(block, "same_names", key, f"features {sorted(set(row) ^ names)} vary")
        for f, v in row.items():
            if not np.isfinite(v) and not any(fnmatch.fnmatchcase(f, p) for p in block.nonfinite):
                raise _fail(block, "finite", key, f"{f}={v}")


def _check_equal(block: Block, check: str, rows: Rows, again: Rows) -> None:
    for key, row in rows.items():
        for f in row.keys() | again[key].keys():
            v, w = row.get(f), again[key].get(f)
            if v is None or w is None or not (v == w or (np.isnan(v) and np.isnan(w))):
                raise _fail(block, check, key, f"{f}: {v} then {w}")


def check_block(block: Block | Callable[..., Any]) -> None:
    """Run the conformance kit on one descriptor block; raise at the first failed check.

    The block describes every (temperature, eps) cell of :func:`kit_matrices` at
    temperatures ``(1, 2)`` and eps ``(0.05, 0.2)``, and must pass :data:`CHECKS` in
    order: ``runs``, ``names``, ``same_names``, ``finite``, ``deterministic`` (a second
    run, each matrix in a fresh cache, gives equal values; NaN equals NaN) and
    ``picklable``.

    Parameters
    ----------
    block : Block or function decorated with :func:`~analysis.descriptors.descriptor`

    Raises
    ------
    ParameterError
        Named ``blocks``; the message names the block, the failed check and where it
        failed (the matrix, the cell, the feature).

    Examples
    --------
    >>> from analysis.descriptors import builtin_registry, descriptor
    >>> from analysis.descriptors.check import check_block
    >>> check_block(builtin_registry().get("native"))  # passes: returns None
    >>> @descriptor("keys", needs=("K",))
    ... def keys(cell):
    ...     return {"cond": np.linalg.cond(cell.K)}  # inf for a singular K
    >>> check_block(keys)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: blocks: expected block 'keys' to pass check 'finite': ... got 'matrix rank_deficient (t=1.0, eps=0.05): cond=inf'

    Declared ``nonfinite=("cond",)``, the block would pass this check; a block defined
    in a session (not in a module) still fails ``picklable``.
    """
    block = as_block(block)
    rows = _describe(block)
    _check_rows(block, rows)
    _check_equal(block, "deterministic", rows, _describe(block))
    try:
        twin = pickle.loads(pickle.dumps(block))
    except Exception as exc:
        raise _fail(block, "picklable", "the block", f"{type(exc).__name__}: {exc}") from None
    _check_equal(block, "picklable", rows, _describe(twin))
