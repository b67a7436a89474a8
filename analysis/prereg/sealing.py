"""Sealed access to held-out rows.

Exploratory code gets training rows only (:meth:`SealedCells.training`); the
confirmatory comparison gets every row, held-out included, once per run
(:meth:`SealedCells.release_confirmatory`), stamped with the lock hash. ``prereg``
decides which rows are held out (the lock's list); ``compare`` only reads the
``held_out`` column it is handed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from analysis.prereg.lock import Lock, PreregistrationError, require_locked
from analysis.validation import ParameterError

__all__ = ["ConfirmatoryData", "SealedCells"]


@dataclass(frozen=True)
class ConfirmatoryData:
    """The one release of held-out rows for a confirmatory run.

    Attributes
    ----------
    table : pandas.DataFrame
        All cells, with ``held_out`` set from the lock's list.
    lock_sha256 : str
        The locked design hash, to stamp on the result.
    held_out_sha256 : str
    missing_heads : tuple of str
        Locked held-out heads with no cell in the table (reported, never silently dropped).

    Examples
    --------
    Made by :meth:`SealedCells.release_confirmatory` (see :class:`SealedCells`); frozen:

    >>> import dataclasses
    >>> import pandas as pd
    >>> from analysis.prereg.sealing import ConfirmatoryData
    >>> data = ConfirmatoryData(pd.DataFrame(), "a" * 64, "b" * 64, missing_heads=())
    >>> data.lock_sha256 = "c" * 64  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    dataclasses.FrozenInstanceError: cannot assign to field 'lock_sha256'
    """

    table: pd.DataFrame
    lock_sha256: str
    held_out_sha256: str
    missing_heads: tuple[str, ...]


class SealedCells:
    """A cell table whose held-out rows only a locked confirmatory run may read.

    Parameters
    ----------
    table : pandas.DataFrame
        Tidy cells with a ``cluster`` column of head ids (other columns untouched).
    design_path : str or Path
        The locked design; :func:`~analysis.prereg.lock.require_locked` runs first.
    features : mapping, optional
        Block -> covariate names, checked against the lock's (a lock without them is
        refused; see :func:`~analysis.prereg.lock.require_locked`).
    cluster : str, keyword-only
        Name of the head-id column.
    lock : Lock, optional, keyword-only
        The lock of ``design_path`` as :func:`~analysis.prereg.lock.require_locked`
        returned it earlier in the same run (the study runner checks once per run); the
        design is then not read again. Not with ``features``.

    Examples
    --------
    A small design with its held-out list (two of eight heads), locked in the current
    folder:

    >>> import pandas as pd
    >>> from analysis.prereg.lock import lock_design
    >>> from analysis.prereg.sealing import SealedCells
    >>> from analysis.datasets import write_example_design
    >>> _ = write_example_design("toy.toml")
    >>> _ = lock_design("toy.toml")
    >>> heads = [f"org/tiny:{layer}:{head}" for layer in range(2) for head in range(4)]
    >>> sealed = SealedCells(pd.DataFrame({"cluster": heads[:-2]}), "toy.toml")
    >>> len(sealed.training())  # the held-out head org/tiny:1:1 is sealed
    5
    >>> release = sealed.release_confirmatory()
    >>> int(release.table["held_out"].sum()), release.missing_heads
    (1, ('org/tiny:1:2',))
    >>> release.lock_sha256 == sealed.lock_sha256, sealed.released
    (True, True)
    >>> sealed.release_confirmatory()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.prereg.lock.PreregistrationError: ...already released once in this run...
    """

    def __init__(
        self,
        table: pd.DataFrame,
        design_path: str | Path,
        *,
        features: Mapping[str, Sequence[str]] | None = None,
        cluster: str = "cluster",
        lock: Lock | None = None,
    ):
        if not isinstance(table, pd.DataFrame):
            raise ParameterError("table", "a pandas DataFrame", type(table).__name__)
        if cluster not in table.columns:
            raise ParameterError("cluster", "a column of the table", cluster)
        if lock is None:
            lock = require_locked(design_path, features=features)
        elif not isinstance(lock, Lock):
            raise ParameterError("lock", "a Lock from require_locked", type(lock).__name__)
        elif Path(lock.design.path).resolve() != Path(design_path).resolve():
            raise ParameterError("lock", f"the lock of {design_path}", str(lock.design.path))
        elif features is not None:
            raise ParameterError("features", "None when a verified lock is given", features)
        self._lock: Lock = lock
        held = table[cluster].astype(str).isin(set(self._lock.held_out))
        if "held_out" in table.columns and (table["held_out"].astype(bool) != held).any():
            raise PreregistrationError(
                "the table's held_out column disagrees with the locked held-out list",
                name="held_out",
            )
        self._held = held.to_numpy()
        self._table = table.assign(held_out=held.to_numpy())
        present = set(table[cluster].astype(str))
        self._missing = tuple(h for h in self._lock.held_out if h not in present)
        self._released = False

    @property
    def lock_sha256(self) -> str:
        return self._lock.sha256

    @property
    def released(self) -> bool:
        return self._released

    def training(self) -> pd.DataFrame:
        """Training rows only (a copy): the only rows exploratory code may see."""
        return self._table.loc[~self._held].copy()

    def release_confirmatory(self) -> ConfirmatoryData:
        """All rows, held-out included; allowed once per run.

        Raises
        ------
        PreregistrationError
            On a second call.
        """
        if self._released:
            raise PreregistrationError(
                "held-out rows were already released once in this run", name="held_out"
            )
        self._released = True
        return ConfirmatoryData(
            table=self._table.copy(),
            lock_sha256=self._lock.sha256,
            held_out_sha256=self._lock.held_out_sha256,
            missing_heads=self._missing,
        )
