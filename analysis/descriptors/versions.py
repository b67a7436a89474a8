"""What a preregistration lock records of a block: its covariate names and its version.

``attnrank prereg lock`` (and ``amend``) record, for every block of every model of a
design, the covariate names the block writes on a fixed probe cell, less its diagnostics
(:func:`block_covariates`, :data:`PROBE`), and a version (:func:`block_version`): the
SHA-256 of the block's declaration and of its module's source text, line endings
normalized to ``\n`` and a UTF-8 byte-order mark dropped. What each covers and why:
docs/prereg.md, "Descriptor blocks in the lock". ``attnrank run`` recomputes both before
any work and refuses a design whose blocks drifted from its lock (docs/prereg.md, "Lock,
check, amend"); the compare stage refuses a descriptor table whose covariate columns
differ from the lock. ``analysis.prereg`` never imports this package: the study layer and
the CLI compute these facts here and hand them to the prereg functions.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from pathlib import Path

import numpy as np

from analysis.descriptors.registry import Block, Cell, MatrixData, as_block, run_block
from analysis.validation import ParameterError

__all__ = ["PROBE", "block_covariates", "block_version"]

#: The probe cell's shape and grid: L queries and keys, head dimension d, t, eps, seed.
PROBE = {"L": 6, "d": 3, "temperature": 1.0, "eps": 0.1, "seed": 20261202}


def _probe_cell() -> Cell:
    rng = np.random.default_rng(PROBE["seed"])
    L, d = PROBE["L"], PROBE["d"]
    Q = rng.standard_normal((L, d))
    K = rng.standard_normal((L, d))
    t, eps = PROBE["temperature"], PROBE["eps"]
    data = MatrixData(Q, K, 1.0 / np.sqrt(d), None, eps_grid=(eps,), temperatures=(t,))
    return Cell(data, t, eps)


def block_covariates(block: Block) -> tuple[str, ...]:
    """Sorted covariate feature names (bare, e.g. ``log_n``) the block writes.

    Parameters
    ----------
    block : Block
        E.g. ``registry.get("native")`` (or a function decorated with ``@descriptor``).

    Raises
    ------
    ParameterError
        Naming ``blocks`` when ``block`` is not a block or fails on the probe cell.

    Examples
    --------
    >>> from analysis.descriptors import builtin_registry
    >>> from analysis.descriptors.versions import block_covariates
    >>> block_covariates(builtin_registry().get("intrinsic"))  # its q_r* are diagnostics
    ('Pi', 'interaction_dim', 'r_star')
    >>> block_covariates(builtin_registry().get("baseline_plus"))
    ('svd_proj_rank',)
    """
    block = as_block(block)
    name = block.name
    try:
        row = run_block(block, _probe_cell())
    except ParameterError:
        raise
    except Exception as exc:  # a plugin's own error: say which block and where
        raise ParameterError(
            "blocks",
            f"block {name!r} to describe the probe cell {PROBE} (the lock records the "
            "covariate names it writes there)",
            f"{type(exc).__name__}: {exc}",
        ) from exc
    feats = (col.split("__", 1)[1] for col in row)
    return tuple(sorted(f for f in feats if block.info(f).kind == "covariate"))


def _source_bytes(name: str, func: object) -> bytes:
    try:
        file = inspect.getsourcefile(func)  # type: ignore[arg-type]
    except TypeError:
        file = None
    if file is None or not Path(file).is_file():
        raise ParameterError(
            "blocks",
            f"block {name!r} defined in a Python source file (its version is a hash of "
            "that file's text)",
            getattr(func, "__module__", None),
        )
    data = Path(file).read_bytes()
    data = data.removeprefix(b"\xef\xbb\xbf")
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")


def block_version(block: Block) -> str:
    """SHA-256 (hex) of the block's declaration and of its module's source text.

    Parameters
    ----------
    block : Block
        E.g. ``registry.get("native")`` (or a function decorated with ``@descriptor``).

    Raises
    ------
    ParameterError
        Naming ``blocks`` when ``block`` is not a block or its function has no source
        file (defined interactively).

    Examples
    --------
    >>> from analysis.descriptors import builtin_registry
    >>> from analysis.descriptors.versions import block_version
    >>> registry = builtin_registry()
    >>> version = block_version(registry.get("native"))
    >>> len(version), version == block_version(registry.get("native"))
    (64, True)
    >>> block_version(registry.get("baseline")) == block_version(registry.get("baseline_plus"))
    False

    ``baseline`` and ``baseline_plus`` share a module but not a declaration, so their
    versions differ.
    """
    block = as_block(block)
    payload = {
        "block": block.name,
        "function": getattr(block.func, "__qualname__", repr(block.func)),
        "needs": list(block.needs),
        "diagnostics": list(block.diagnostics),
        "log_scale": list(block.log_scale),
        "integers": list(block.integers),
        "calibrated": block.calibrated,
        "source_sha256": hashlib.sha256(_source_bytes(block.name, block.func)).hexdigest(),
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
