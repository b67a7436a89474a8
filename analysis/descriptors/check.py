"""Conformance kit for descriptor blocks: :func:`check_block` (as scikit-learn's
``check_estimator``).

A block, built in or from a plugin, must behave as the describe stage and the lock assume:
it returns a dict of real scalars named ``BLOCK__feature`` (one ``__``), the same covariate
names on every cell (those the lock records from the probe cell,
:func:`~analysis.descriptors.block_covariates`) and the same feature names on every cell of
one matrix; its values are finite unless the block declares the feature ``nonfinite``
(:func:`~analysis.descriptors.descriptor`); two runs on the same cells give equal values;
and the block survives a pickle round trip with the same output (worker processes receive
blocks pickled). ``attnrank prereg lock`` runs the kit on every plugin block of a design.
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


def _fail(block: Block, check: str, got: str) -> ParameterError:
    return ParameterError(
        "blocks", f"block {block.name!r} to pass check {check!r}: {CHECKS[check]}", got
    )


def _describe(block: Block, heads: dict[str, dict[str, Any]]) -> Rows:
    """``{(matrix, t, eps): {feature: value}}``, each matrix in a fresh cache."""
    rows: Rows = {}
    for name, head in heads.items():
        data = MatrixData(
            head["Q"],
            head["K"],
            head["scale"],
            head["mask"],
            eps_grid=EPS_GRID,
            temperatures=TEMPERATURES,
            bias=head["bias"],
        )
        for t in TEMPERATURES:
            for eps in EPS_GRID:
                where = f"matrix {name} (t={t}, eps={eps})"
                try:
                    row = run_block(block, Cell(data, t, eps))
                except ParameterError as exc:
                    raise _fail(block, "names", f"{where}: {exc}") from None
                except Exception as exc:
                    raise _fail(block, "runs", f"{where}: {type(exc).__name__}: {exc}") from exc
                rows[name, t, eps] = {c.split("__", 1)[1]: v for c, v in row.items()}
    return rows


def _check_names(block: Block, rows: Rows) -> None:
    covariates = set(block_covariates(block))
    first: dict[str, tuple[set[str], tuple]] = {}
    for (name, t, eps), row in rows.items():
        where = f"matrix {name} (t={t}, eps={eps})"
        bad = [f for f in row if "__" in f]
        if bad:
            raise _fail(block, "names", f"{where}: features {bad}")
        cov = {f for f in row if block.info(f).kind == "covariate"}
        if cov != covariates:
            got = f"{where}: covariates {sorted(cov)}, on the probe cell {sorted(covariates)}"
            raise _fail(block, "same_names", got)
        names, seen = first.setdefault(name, (set(row), (t, eps)))
        if set(row) != names:
            diff = sorted(set(row) ^ names)
            raise _fail(block, "same_names", f"{where}: features {diff} differ from t, eps={seen}")


def _check_finite(block: Block, rows: Rows) -> None:
    for (name, t, eps), row in rows.items():
        for f, v in row.items():
            if not np.isfinite(v) and not any(fnmatch.fnmatchcase(f, p) for p in block.nonfinite):
                raise _fail(block, "finite", f"{f}={v} on matrix {name} (t={t}, eps={eps})")


def _check_equal(block: Block, check: str, rows: Rows, again: Rows) -> None:
    for key, row in rows.items():
        other = again[key]
        for f, v in row.items():
            w = other.get(f)
            if w is None or not (v == w or (np.isnan(v) and np.isnan(w))):
                name, t, eps = key
                raise _fail(block, check, f"{f} on matrix {name} (t={t}, eps={eps}): {v} then {w}")
        if set(other) != set(row):
            raise _fail(block, check, f"features {sorted(set(other) ^ set(row))} on {key}")


def _round_trip(block: Block) -> Block:
    try:
        return pickle.loads(pickle.dumps(block))
    except Exception as exc:
        raise _fail(block, "picklable", f"{type(exc).__name__}: {exc}") from None


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
    analysis.validation.ParameterError: blocks: expected block 'keys' to pass check 'finite': ... got 'cond=inf on matrix rank_deficient (t=1.0, eps=0.05)'

    Declared ``nonfinite=("cond",)``, the block would pass this check; a block defined
    in a session (not in a module) still fails ``picklable``.
    """
    block = as_block(block)
    heads = kit_matrices()
    rows = _describe(block, heads)
    _check_names(block, rows)
    _check_finite(block, rows)
    _check_equal(block, "deterministic", rows, _describe(block, heads))
    _check_equal(block, "picklable", rows, _describe(_round_trip(block), heads))
