"""Descriptor registry: blocks of named features, computed per cell, with feature metadata.

A *block* is a function declared with :func:`descriptor`. It is called once per cell
``(matrix, temperature, eps)`` with a :class:`Cell` and returns a dict of named scalar
features; the output column of feature ``f`` of block ``b`` is ``b__f``. Expensive work
that does not depend on eps (or on the temperature) goes through :meth:`Cell.cached`, which
memoizes per matrix, so an SVD or a kappa solve is done once per matrix and reused by every
(temperature, eps) cell.

A :class:`Registry` is an explicit, immutable object that holds blocks in order: the
built-in blocks first (:func:`analysis.descriptors.builtin_registry`), then the plugin
modules a design lists, in the design's order, each module's blocks in the order of its
module-level ``BLOCKS`` list (:meth:`Registry.with_plugins`, :func:`plugin_blocks`).
Importing a module registers nothing; a study builds its registry once.

Feature metadata (for the comparison stage): every feature has a ``kind`` (``"covariate"``
or ``"diagnostic"``: diagnostics are written but never enter a model), a ``log_scale`` flag
(positive scale features, entered as natural logs) and an ``integer`` flag. Block metadata
for the comparison stage: whether a block's covariates are isotonically calibrated
(``calibrated``) and the order in which blocks enter the collinearity screen (the
registry's order, :meth:`Registry.block_order`). :meth:`Registry.covariate_kwargs` hands
these facts to ``analysis.compare``, which knows no block by name.
"""

from __future__ import annotations

import fnmatch
import importlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from analysis.attention import softmax64
from analysis.validation import ParameterError

ARRAYS = ("A", "Q", "K", "scale", "mask", "bias")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class FeatureInfo:
    """Metadata of one output column ``block__feature``.

    Examples
    --------
    >>> from analysis.descriptors import builtin_registry
    >>> info = builtin_registry().feature_info("intrinsic__q_r3")
    >>> info.block, info.feature, info.kind, info.log_scale
    ('intrinsic', 'q_r3', 'diagnostic', False)
    """

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
    nonfinite : tuple of str
        ``fnmatch`` patterns over the features that may be NaN or infinite on some cells
        (undefined there, or an unbounded ratio); every other feature must be finite
        (:func:`analysis.descriptors.check.check_block`).

    Examples
    --------
    >>> from analysis.descriptors import builtin_registry
    >>> block = builtin_registry().get("native")
    >>> block.name, block.needs, block.calibrated
    ('native', ('Q', 'K', 'scale', 'mask', 'bias'), False)
    >>> builtin_registry().get("intrinsic").info("q_r3").kind  # matched by a diagnostics pattern
    'diagnostic'
    """

    name: str
    func: Callable[[Cell], Mapping[str, Any]]
    needs: tuple[str, ...]
    diagnostics: tuple[str, ...] = ()
    log_scale: tuple[str, ...] = ()
    integers: tuple[str, ...] = ()
    description: str = ""
    calibrated: bool = False
    nonfinite: tuple[str, ...] = ()

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


def descriptor(
    name: str,
    *,
    needs: Iterable[str] = ("A",),
    diagnostics: Iterable[str] = (),
    log_scale: Iterable[str] = (),
    integers: Iterable[str] = (),
    calibrated: bool = False,
    nonfinite: Iterable[str] = (),
) -> Callable[[Callable[[Cell], Mapping[str, Any]]], Callable[[Cell], Mapping[str, Any]]]:
    """Declare a function a descriptor block (decorator).

    The decorator registers nothing: it attaches the block's declaration to the function
    as ``func.descriptor_block`` (a :class:`Block`) and returns the function unchanged.
    A :class:`Registry` holds blocks: a plugin module lists its blocks in a module-level
    ``BLOCKS`` sequence, which :func:`plugin_blocks` reads.

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
    nonfinite : iterable of str, keyword-only
        ``fnmatch`` patterns over the features that may be NaN or infinite (see
        :class:`Block`).

    Returns
    -------
    The decorator; it returns the function with its ``descriptor_block`` attribute.

    Examples
    --------
    >>> @descriptor("mine", needs=("A",), log_scale=("max_entry",))
    ... def mine(cell):
    ...     return {"max_entry": float(cell.A.max())}
    >>> mine.descriptor_block.name, mine.descriptor_block.log_scale
    ('mine', ('max_entry',))
    >>> BLOCKS = [mine]  # in a plugin module: the blocks it declares, in order
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
        func.descriptor_block = Block(  # type: ignore[attr-defined]
            name=name,
            func=func,
            needs=needs,
            diagnostics=tuple(diagnostics),
            log_scale=tuple(log_scale),
            integers=tuple(integers),
            description=(func.__doc__ or "").strip().split("\n")[0],
            calibrated=calibrated,
            nonfinite=tuple(nonfinite),
        )
        return func

    return wrap


def as_block(entry: Any) -> Block:
    """A :class:`Block` itself, or the block a :func:`descriptor` decorator declared.

    Raises :class:`ParameterError` naming ``blocks`` for anything else.

    Examples
    --------
    >>> from analysis.descriptors.registry import as_block, descriptor
    >>> @descriptor("size")
    ... def size(cell):
    ...     return {"n_keys": cell.A.shape[1]}
    >>> block = as_block(size)
    >>> block.name, as_block(block) is block
    ('size', True)
    >>> as_block(len)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: blocks: expected a Block or a function decorated with @descriptor...
    """
    if isinstance(entry, Block):
        return entry
    block = getattr(entry, "descriptor_block", None)
    if isinstance(block, Block):
        return block
    raise ParameterError("blocks", "a Block or a function decorated with @descriptor", entry)


class Registry:
    """Descriptor blocks by name, in the order a study compares them.

    An immutable, ordered collection of :class:`Block` objects, built explicitly: the
    built-in blocks first (``baseline``, ``baseline_plus``, ``native``, ``intrinsic``;
    :func:`analysis.descriptors.builtin_registry`), then the design's plugin modules in
    the design's order, each module's ``BLOCKS`` in their listed order
    (:meth:`with_plugins`, :func:`analysis.descriptors.build_registry`). Nothing is
    registered by importing a module.

    The order is the comparison's block order: the collinearity screen drops columns in
    it, so one fixed order for every model keeps a nested pair's kept columns nested.

    Parameters
    ----------
    blocks : iterable of Block (or functions decorated with :func:`descriptor`)
        In order; names must be distinct.

    Raises
    ------
    ParameterError
        Naming ``blocks`` for an entry that is not a block, or a name given twice.

    Examples
    --------
    >>> from analysis.descriptors import builtin_registry
    >>> reg = builtin_registry()
    >>> reg.block_order()
    ('baseline', 'baseline_plus', 'native', 'intrinsic')
    >>> reg.calibrated_blocks()
    ('baseline', 'baseline_plus')
    >>> reg.feature_info("intrinsic__q_r3").kind
    'diagnostic'
    """

    def __init__(self, blocks: Iterable[Any] = ()) -> None:
        by_name: dict[str, Block] = {}
        for entry in blocks:
            block = as_block(entry)
            if block.name in by_name:
                raise ParameterError("blocks", "distinct block names", block.name)
            by_name[block.name] = block
        self._blocks = by_name

    def with_plugins(self, modules: Iterable[str]) -> Registry:
        """A new registry: these blocks, then each module's ``BLOCKS`` in the given order.

        Raises :class:`ParameterError` naming ``module`` when a module cannot be imported,
        has no ``BLOCKS`` of blocks, or declares a name already present.
        """
        if isinstance(modules, str):
            raise ParameterError("plugins", "a list of module paths", modules)
        blocks = list(self._blocks.values())
        for module in modules:
            taken = {b.name for b in blocks}
            for b in plugin_blocks(module):
                if b.name in taken:
                    raise ParameterError(
                        "module", f"blocks with names not declared yet ({b.name!r} is)", module
                    )
                taken.add(b.name)
                blocks.append(b)
        return Registry(blocks)

    @property
    def blocks(self) -> Mapping[str, Block]:
        """Block name -> :class:`Block`, in the registry's order (read-only)."""
        return MappingProxyType(self._blocks)

    def __iter__(self) -> Iterator[str]:
        return iter(self._blocks)

    def __len__(self) -> int:
        return len(self._blocks)

    def __contains__(self, name: object) -> bool:
        return name in self._blocks

    def __repr__(self) -> str:
        return f"Registry({list(self._blocks)})"

    def get(self, name: str) -> Block:
        """The block called ``name``; a :class:`ParameterError` naming ``blocks`` otherwise."""
        if name not in self._blocks:
            raise ParameterError(
                "blocks", "registered block names: " + ", ".join(self._blocks), name
            )
        return self._blocks[name]

    def block_order(self) -> tuple[str, ...]:
        """Block names in the comparison's order (built-in blocks first, then plugins)."""
        return tuple(self._blocks)

    def calibrated_blocks(self) -> tuple[str, ...]:
        """Names of the blocks declared ``calibrated``, in :meth:`block_order`."""
        return tuple(b for b, block in self._blocks.items() if block.calibrated)

    def feature_info(self, column: str) -> FeatureInfo:
        """Metadata of an output column ``block__feature`` (its block must be here)."""
        block, sep, feature = column.partition("__")
        if not sep or not feature:
            raise ParameterError("column", "a name 'block__feature'", column)
        return self.get(block).info(feature)

    def diagnostic_columns(self, columns: Iterable[str]) -> tuple[str, ...]:
        """The ``block__feature`` columns among ``columns`` whose feature is a diagnostic.

        Diagnostics (per-r columns such as ``intrinsic__q_r3``, and the others each block
        declares) are written by ``describe`` but never enter a model. Columns without
        ``__`` are skipped; a column of a block not in the registry raises (see
        :meth:`feature_info`).
        """
        return tuple(c for c in columns if "__" in c and self.feature_info(c).kind == "diagnostic")

    def covariate_kwargs(self, columns: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """What the registry tells the comparison about a table with these columns.

        Returns
        -------
        dict
            ``block_order`` (:meth:`block_order`), ``calibrate_blocks``
            (:meth:`calibrated_blocks`) and ``diagnostic_columns``
            (:meth:`diagnostic_columns` of ``columns``): the keyword arguments of
            fields of ``analysis.compare.ComparisonSpec`` and ``HeadLevelSpec`` and the
            keyword arguments of ``prepare_covariates`` that carry descriptor facts.
        """
        return {
            "block_order": self.block_order(),
            "calibrate_blocks": self.calibrated_blocks(),
            "diagnostic_columns": self.diagnostic_columns(columns),
        }

    def feature_table(self, columns: Iterable[str]) -> Any:
        """A pandas DataFrame of :class:`FeatureInfo` rows for the ``block__feature`` columns.

        Columns other than ``block__feature`` ones (``layer``, ``head``, ...) are skipped.
        """
        import pandas as pd

        rows = [self.feature_info(c).__dict__ for c in columns if "__" in c]
        return pd.DataFrame(rows, columns=list(FeatureInfo.__dataclass_fields__))


def plugin_blocks(module: str) -> tuple[Block, ...]:
    """The blocks a plugin module declares: its module-level ``BLOCKS``, in order.

    ``BLOCKS`` is a list or tuple of functions decorated with :func:`descriptor` (or of
    :class:`Block` objects). Importing the module registers nothing; the caller adds the
    blocks to a :class:`Registry` (:meth:`Registry.with_plugins`).

    Raises
    ------
    ParameterError
        Naming ``module`` when it cannot be imported or has no ``BLOCKS`` sequence of
        blocks.

    Examples
    --------
    A plugin is usually a file on the study's path; here a module object stands in:

    >>> import sys
    >>> import types
    >>> from analysis.descriptors.registry import descriptor, plugin_blocks
    >>> @descriptor("size")
    ... def size(cell):
    ...     return {"n_keys": cell.A.shape[1]}
    >>> plugin = types.ModuleType("my_plugin")
    >>> plugin.BLOCKS = [size]
    >>> sys.modules["my_plugin"] = plugin  # as if importable
    >>> [block.name for block in plugin_blocks("my_plugin")]
    ['size']
    >>> del sys.modules["my_plugin"]
    >>> plugin_blocks("json")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: module: expected a module with a list BLOCKS ...
    """
    if not isinstance(module, str) or not module:
        raise ParameterError("module", "an importable module path like pkg.mod", module)
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise ParameterError(
            "module", "an importable module path like pkg.mod", f"{module} ({exc})"
        ) from None
    entries = getattr(mod, "BLOCKS", None)
    if not isinstance(entries, (list, tuple)):
        raise ParameterError(
            "module",
            "a module with a list BLOCKS of its @descriptor blocks (BLOCKS = [my_block])",
            module,
        )
    try:
        return tuple(as_block(e) for e in entries)
    except ParameterError as exc:
        raise ParameterError("module", f"a BLOCKS list of blocks only ({exc})", module) from None


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

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.descriptors.registry import MatrixData
    >>> data = MatrixData(
    ...     np.eye(2), np.eye(2), np.log(3.0), None, eps_grid=(0.1,), temperatures=(1.0,)
    ... )
    >>> data.attention(1.0).round(6).tolist()  # logits log 3 on the diagonal
    [[0.75, 0.25], [0.25, 0.75]]
    >>> data.attention(1.0) is data.attention(1.0)  # computed once per temperature
    True
    >>> data.cached("answer", lambda: 42), data.cached("answer", lambda: 0)
    (42, 42)
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

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.descriptors.registry import Cell, MatrixData
    >>> data = MatrixData(
    ...     np.eye(2), np.eye(2), np.log(3.0), None, eps_grid=(0.1,), temperatures=(1.0,)
    ... )
    >>> cell = Cell(data, temperature=1.0, eps=0.1)
    >>> cell.A.round(6).tolist(), round(cell.scale, 6), cell.mask is None  # scale = log 3
    ([[0.75, 0.25], [0.25, 0.75]], 1.098612, True)
    >>> Cell(data, temperature=2.0, eps=0.1).A.round(6).tolist()  # logits halved: sqrt 3
    [[0.633975, 0.366025], [0.366025, 0.633975]]
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

    Examples
    --------
    A 3 x 3 head with logits ``log(3) I``: each row is ``(3, 1, 1) / 5`` up to order.

    >>> import numpy as np
    >>> from analysis.descriptors.registry import Cell, MatrixData, as_block, descriptor
    >>> from analysis.descriptors.registry import run_block
    >>> Q = K = np.eye(3)
    >>> data = MatrixData(Q, K, np.log(3.0), None, eps_grid=(0.1,), temperatures=(1.0,))
    >>> @descriptor("peak")
    ... def peak(cell):
    ...     return {"max_entry": cell.A.max(), "n_keys": cell.A.shape[1]}
    >>> row = run_block(as_block(peak), Cell(data, temperature=1.0, eps=0.1))
    >>> sorted(row), round(row["peak__max_entry"], 12), row["peak__n_keys"]
    (['peak__max_entry', 'peak__n_keys'], 0.6, 3.0)
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
