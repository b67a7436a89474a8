"""Descriptor registry: blocks of named features, computed per cell, with feature metadata.

A *block* is a function registered with :func:`descriptor`. It is called once per cell
``(matrix, temperature, eps)`` with a :class:`Cell` and returns a dict of named scalar
features; the output column of feature ``f`` of block ``b`` is ``b__f``. Expensive work
that does not depend on eps (or on the temperature) goes through :meth:`Cell.cached`, which
memoizes per matrix, so an SVD or a kappa solve is done once per matrix and reused by every
(temperature, eps) cell.

Feature metadata (for the comparison stage): every feature has a ``kind`` (``"covariate"``
or ``"diagnostic"``: diagnostics are written but never enter a model), a ``log_scale`` flag
(positive scale features, entered as natural logs) and an ``integer`` flag. Block metadata
for the comparison stage: whether a block's covariates are isotonically calibrated
(``calibrated``) and the order in which blocks enter the collinearity screen
(:func:`block_order`: built-in blocks first, plugins after in registration order).
:func:`covariate_kwargs` hands these facts to ``analysis.compare``, which knows no block
by name.
"""

from __future__ import annotations

import fnmatch
import importlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from analysis.attention import softmax64
from analysis.validation import ParameterError

ARRAYS = ("A", "Q", "K", "scale", "mask", "bias")
KINDS = ("covariate", "diagnostic")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class FeatureInfo:
    """Metadata of one output column ``block__feature``."""

    column: str
    block: str
    feature: str
    kind: str
    log_scale: bool
    integer: bool


@dataclass(frozen=True)
class Block:
    """A registered descriptor block.

    Attributes
    ----------
    name : str
        Block name, the column prefix before ``__``.
    func : callable ``(Cell) -> dict[str, float]``
    needs : tuple of str
        Arrays the block reads, a subset of ``("A", "Q", "K", "scale", "mask", "bias")``.
    diagnostics, log_scale, integers : tuple of str
        ``fnmatch`` patterns over feature names: which are diagnostics (not covariates),
        which are positive scale features (natural logs downstream), which are integers.
    description : str
    calibrated : bool
        Whether the comparison replaces the block's covariates by isotonic calibrations
        of the outcome (see :func:`calibrated_blocks`).
    """

    name: str
    func: Callable[[Cell], Mapping[str, Any]]
    needs: tuple[str, ...]
    diagnostics: tuple[str, ...] = ()
    log_scale: tuple[str, ...] = ()
    integers: tuple[str, ...] = ()
    description: str = ""
    calibrated: bool = False

    def info(self, feature: str) -> FeatureInfo:
        """Metadata of one of this block's features."""

        def match(patterns: tuple[str, ...]) -> bool:
            return any(fnmatch.fnmatchcase(feature, p) for p in patterns)

        return FeatureInfo(
            column=f"{self.name}__{feature}",
            block=self.name,
            feature=feature,
            kind="diagnostic" if match(self.diagnostics) else "covariate",
            log_scale=match(self.log_scale),
            integer=match(self.integers),
        )


_REGISTRY: dict[str, Block] = {}


def descriptor(
    name: str,
    *,
    needs: Iterable[str] = ("A",),
    diagnostics: Iterable[str] = (),
    log_scale: Iterable[str] = (),
    integers: Iterable[str] = (),
    calibrated: bool = False,
    replace: bool = False,
) -> Callable[[Callable[[Cell], Mapping[str, Any]]], Callable[[Cell], Mapping[str, Any]]]:
    """Register a descriptor block (decorator).

    Parameters
    ----------
    name : str
        Block name: a letter, then letters, digits or single underscores (no ``__``).
    needs : iterable of str, keyword-only
        Arrays the block reads, from ``("A", "Q", "K", "scale", "mask", "bias")``
        (``mask`` and ``bias`` may be None for a given head).
    diagnostics, log_scale, integers : iterable of str, keyword-only
        ``fnmatch`` patterns over the block's feature names (see :class:`Block`).
        Features not matched by ``diagnostics`` are covariates.
    calibrated : bool, keyword-only
        Whether the comparison calibrates the block's covariates (isotonic regression on
        training midpoints). Built in: ``baseline`` and ``baseline_plus``; plugin blocks
        are usually not calibrated.
    replace : bool, keyword-only
        Allow replacing an existing block of the same name.

    Returns
    -------
    The decorator; it returns the function unchanged.

    Examples
    --------
    >>> @descriptor("mine", needs=("A",), log_scale=("max_entry",))
    ... def mine(cell):
    ...     return {"max_entry": float(cell.A.max())}
    """
    if not isinstance(name, str) or not _NAME.match(name) or "__" in name:
        raise ParameterError("name", "a letter then letters, digits, single underscores", name)
    if not isinstance(calibrated, bool):
        raise ParameterError("calibrated", "True or False", calibrated)
    needs = tuple(needs)
    for n in needs:
        if n not in ARRAYS:
            raise ParameterError("needs", "names from " + ", ".join(ARRAYS), n)

    def wrap(func: Callable[[Cell], Mapping[str, Any]]) -> Callable[[Cell], Mapping[str, Any]]:
        if name in _REGISTRY and not replace and _REGISTRY[name].func is not func:
            raise ParameterError("name", "a block name not registered yet", name)
        _REGISTRY[name] = Block(
            name=name,
            func=func,
            needs=needs,
            diagnostics=tuple(diagnostics),
            log_scale=tuple(log_scale),
            integers=tuple(integers),
            description=(func.__doc__ or "").strip().split("\n")[0],
            calibrated=calibrated,
        )
        return func

    return wrap


def unregister(name: str) -> None:
    """Remove a block (for tests and interactive use); unknown names are ignored."""
    _REGISTRY.pop(name, None)


BUILTIN_MODULES = (
    "analysis.descriptors.baseline",
    "analysis.descriptors.native",
    "analysis.descriptors.intrinsic",
)


def _ensure_builtin() -> None:
    # Importing the block modules runs their decorators (once: imports are cached).
    for module in BUILTIN_MODULES:
        importlib.import_module(module)


def registered() -> dict[str, Block]:
    """All registered blocks by name, in registration order.

    Built-in blocks are registered on first use, so a plugin loaded before that comes
    first here; :func:`block_order` gives the canonical order.
    """
    _ensure_builtin()
    return dict(_REGISTRY)


def block_order() -> tuple[str, ...]:
    """Registered block names in the comparison's order.

    Built-in blocks first, in the order of :data:`BUILTIN_MODULES` and of registration
    within a module (``baseline``, ``baseline_plus``, ``native``, ``intrinsic``), then
    plugin blocks in registration order. The comparison screens collinear columns in this
    order, so one fixed order for every model keeps a nested pair's kept columns nested.
    """
    blocks = registered()

    def rank(name: str) -> int:
        module = blocks[name].func.__module__
        return BUILTIN_MODULES.index(module) if module in BUILTIN_MODULES else len(BUILTIN_MODULES)

    return tuple(sorted(blocks, key=rank))  # stable: registration order within a rank


def calibrated_blocks() -> tuple[str, ...]:
    """Names of the blocks declared ``calibrated``, in :func:`block_order`."""
    blocks = registered()
    return tuple(b for b in block_order() if blocks[b].calibrated)


def diagnostic_columns(columns: Iterable[str]) -> tuple[str, ...]:
    """The ``block__feature`` columns among ``columns`` whose feature is a diagnostic.

    Diagnostics (per-r columns such as ``intrinsic__q_r3``, and the others each block
    declares) are written by ``describe`` but never enter a model. Columns without
    ``__`` are skipped; a column of an unregistered block raises (see
    :func:`feature_info`).
    """
    return tuple(c for c in columns if "__" in c and feature_info(c).kind == "diagnostic")


def covariate_kwargs(columns: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """What the registry tells the comparison about a table with these columns.

    Returns
    -------
    dict
        ``block_order`` (:func:`block_order`), ``calibrate_blocks``
        (:func:`calibrated_blocks`) and ``diagnostic_columns``
        (:func:`diagnostic_columns` of ``columns``): the keyword arguments of
        ``analysis.compare.compare_nested``, ``head_level_analysis`` and
        ``prepare_covariates`` that carry descriptor facts.
    """
    return {
        "block_order": block_order(),
        "calibrate_blocks": calibrated_blocks(),
        "diagnostic_columns": diagnostic_columns(columns),
    }


def get_block(name: str) -> Block:
    """The block called ``name``; a :class:`ParameterError` naming ``blocks`` otherwise."""
    blocks = registered()
    if name not in blocks:
        raise ParameterError("blocks", "registered block names: " + ", ".join(blocks), name)
    return blocks[name]


def load_plugin(module: str) -> None:
    """Import a user module whose :func:`descriptor` decorators register new blocks.

    Raises :class:`ParameterError` naming ``module`` when it cannot be imported.
    """
    if not isinstance(module, str) or not module:
        raise ParameterError("module", "an importable module path like pkg.mod", module)
    try:
        importlib.import_module(module)
    except ParameterError as exc:  # e.g. a block name that is already registered
        raise ParameterError(
            "module", f"a module whose blocks register cleanly ({exc})", module
        ) from None
    except ImportError as exc:
        raise ParameterError(
            "module", "an importable module path like pkg.mod", f"{module} ({exc})"
        ) from None


def feature_info(column: str) -> FeatureInfo:
    """Metadata of an output column ``block__feature`` (the block must be registered)."""
    block, sep, feature = column.partition("__")
    if not sep or not feature:
        raise ParameterError("column", "a name 'block__feature'", column)
    return get_block(block).info(feature)


def feature_table(columns: Iterable[str]) -> Any:
    """A pandas DataFrame of :class:`FeatureInfo` rows for the ``block__feature`` columns.

    Columns other than ``block__feature`` ones (``layer``, ``head``, ...) are skipped.
    """
    import pandas as pd

    rows = [feature_info(c).__dict__ for c in columns if "__" in c]
    return pd.DataFrame(rows, columns=list(FeatureInfo.__dataclass_fields__))


class MatrixData:
    """One attention head's stored arrays plus a per-matrix cache.

    Parameters
    ----------
    Q, K : array ``[L, d]``
    scale : float
    mask : bool array ``[L, L]`` or None (True = allowed)
    eps_grid, temperatures : tuple of float
        The whole grid this matrix will be described on (blocks may use them to skip work
        no cell needs).
    bias : array ``[L, L]`` or None, keyword-only
        The model's additive logit term beside ``scale Q K^T`` (None for most models);
        the logits are ``scale Q K^T + bias`` at t = 1.
    """

    def __init__(
        self,
        Q: np.ndarray,
        K: np.ndarray,
        scale: float,
        mask: np.ndarray | None,
        *,
        eps_grid: tuple[float, ...],
        temperatures: tuple[float, ...],
        bias: np.ndarray | None = None,
    ) -> None:
        self.Q = np.asarray(Q, dtype=np.float64)
        self.K = np.asarray(K, dtype=np.float64)
        self.scale = float(scale)
        self.mask = None if mask is None else np.asarray(mask, dtype=bool)
        self.bias = None if bias is None else np.asarray(bias, dtype=np.float64)
        self.eps_grid = tuple(eps_grid)
        self.temperatures = tuple(temperatures)
        self._cache: dict[Any, Any] = {}

    def cached(self, key: Any, fn: Callable[[], Any]) -> Any:
        """Compute ``fn()`` once per matrix and ``key``; later calls return the stored value."""
        if key not in self._cache:
            self._cache[key] = fn()
        return self._cache[key]

    def attention(self, t: float) -> np.ndarray:
        """``softmax64(Q, K, scale, mask, t, bias)``, computed once per temperature."""
        return self.cached(
            ("A", float(t)),
            lambda: softmax64(self.Q, self.K, self.scale, self.mask, t, self.bias),
        )


@dataclass
class Cell:
    """What a block sees: one (matrix, temperature, eps).

    Attributes
    ----------
    matrix : MatrixData
    temperature : float
    eps : float
    """

    matrix: MatrixData
    temperature: float
    eps: float

    @property
    def A(self) -> np.ndarray:
        """float64 ``[L, L]`` attention at this cell's temperature (cached per matrix, t)."""
        return self.matrix.attention(self.temperature)

    @property
    def Q(self) -> np.ndarray:
        return self.matrix.Q

    @property
    def K(self) -> np.ndarray:
        return self.matrix.K

    @property
    def scale(self) -> float:
        return self.matrix.scale

    @property
    def mask(self) -> np.ndarray | None:
        return self.matrix.mask

    @property
    def bias(self) -> np.ndarray | None:
        """The additive logit term at t = 1 (None for most models); at t it is ``bias / t``."""
        return self.matrix.bias

    @property
    def eps_grid(self) -> tuple[float, ...]:
        return self.matrix.eps_grid

    @property
    def temperatures(self) -> tuple[float, ...]:
        return self.matrix.temperatures

    def cached(self, key: Any, fn: Callable[[], Any]) -> Any:
        """Per-matrix memo (see :meth:`MatrixData.cached`); include t in ``key`` if it matters."""
        return self.matrix.cached(key, fn)


def run_block(block: Block, cell: Cell) -> dict[str, float]:
    """Call one block on one cell and return ``{"block__feature": float64}``.

    Raises :class:`ParameterError` naming ``blocks`` when the block returns something
    other than a mapping of valid feature names to real scalars.
    """
    out = block.func(cell)
    if not isinstance(out, Mapping):
        raise ParameterError("blocks", f"block {block.name!r} to return a dict", type(out).__name__)
    row: dict[str, float] = {}
    for key, value in out.items():
        if not isinstance(key, str) or not _NAME.match(key):
            raise ParameterError("blocks", f"feature names of {block.name!r} like 'max_entry'", key)
        try:
            row[f"{block.name}__{key}"] = float(np.float64(value))
        except (TypeError, ValueError):
            raise ParameterError(
                "blocks", f"real scalar features from {block.name!r}", f"{key}={value!r}"
            ) from None
    return row
