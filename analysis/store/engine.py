"""What the store needs of a bracket engine: a small :class:`typing.Protocol`.

The store runs an engine over its matrices (:func:`analysis.store.run_brackets`) but never
imports one, by name or by string: ``study`` and ``cli`` build the engine of the version
a design pins or a command names (:func:`analysis.brackets.engine.engine_for`) and pass it
in. Any object with these
members will do, e.g. a stand-in in the tests. It must pickle (a module does not): with
``workers > 1`` or an executor, every task carries it to a worker process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["BracketEngine", "StoredProfile", "engine_label"]


@runtime_checkable
class StoredProfile(Protocol):
    """A profile as the store keeps it: brackets read off it, re-verified, serialized.

    Examples
    --------
    The package's :class:`~analysis.brackets.Profile` is one:

    >>> import numpy as np
    >>> from analysis.brackets import profile_matrix
    >>> from analysis.store import StoredProfile
    >>> prof = profile_matrix(np.eye(4), eps=(0.5,), effort="fast")
    >>> isinstance(prof, StoredProfile), prof.reverify(np.eye(4))
    (True, [])
    >>> isinstance({"upper": [], "lower": []}, StoredProfile)
    False
    """

    def bracket(self, eps: float) -> tuple[int, int]:
        """``(lo, hi)`` at ``eps``."""
        ...

    def reverify(self, A: np.ndarray) -> list[str]:
        """What no longer certifies against the matrix ``A`` (``[]``: every witness does)."""
        ...

    def to_dict(self, *, witnesses: bool = True, arrays: str = "lists") -> dict[str, Any]:
        """A JSON-able form that :meth:`BracketEngine.load_profile` restores."""
        ...


@runtime_checkable
class BracketEngine(Protocol):
    """A bracket engine, as :func:`analysis.store.run_brackets` calls it.

    Attributes
    ----------
    name : str
        Recorded with every stored profile, with ``version`` (``"analysis.brackets 4"``).
    version : str
        A store keys profiles by ``name version``: another engine's stay apart, never
        mixed with this engine's.
    efforts : tuple of str
        The ``effort`` values :meth:`profile_batch` accepts.

    Examples
    --------
    The package's engine satisfies it; an object without these members does not:

    >>> from analysis.brackets.engine import default_engine
    >>> from analysis.store import BracketEngine
    >>> isinstance(default_engine(), BracketEngine), isinstance(object(), BracketEngine)
    (True, False)
    """

    name: str
    version: str
    efforts: tuple[str, ...]

    def profile_batch(
        self,
        matrices: Sequence[np.ndarray],
        temperatures: Sequence[float],
        *,
        eps: Sequence[float],
        effort: str,
        previous: Sequence[StoredProfile | None],
        device: str | None = None,
    ) -> list[StoredProfile]:
        """Profiles of one matrix at several temperatures (``matrices[i]`` at
        ``temperatures[i]``), searched together; one per matrix, in order. ``previous``
        holds an earlier profile (or None) per matrix, to extend. The store sends either
        all the temperatures of a run for one matrix, or one (matrix, temperature) alone."""
        ...

    def load_profile(self, d: Mapping[str, Any]) -> StoredProfile:
        """The profile stored as ``d`` (what ``to_dict(witnesses=True, arrays=...)``
        wrote), unverified; raises ``KeyError``, ``TypeError`` or ``ValueError`` when ``d``
        is not one."""
        ...


def engine_label(engine: BracketEngine) -> str:
    """``"name version"``, recorded with every profile ``engine`` computes.

    Examples
    --------
    >>> from analysis.brackets.engine import engine_for
    >>> from analysis.store.engine import engine_label
    >>> engine_label(engine_for(4))
    'analysis.brackets 4'
    """
    return f"{engine.name} {engine.version}"
