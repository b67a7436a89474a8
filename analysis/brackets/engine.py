"""The package's bracket engine as one picklable object, for callers that take an engine.

:func:`analysis.store.run_brackets` profiles a store's matrices with an engine it is given
(:class:`analysis.store.engine.BracketEngine`) and imports none; ``study`` and ``cli``
pass :func:`default_engine`. This module adapts the search (:mod:`analysis.brackets.search`)
to that small interface; brackets itself imports nothing of the store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from analysis.brackets.profile import Profile
from analysis.brackets.search import profile_matrix, profile_temperatures
from analysis.brackets.settings import EFFORTS

__all__ = ["Engine", "default_engine"]


def _version() -> str:
    from analysis.brackets import __version__

    return __version__


@dataclass(frozen=True)
class Engine:
    """The certified bracket search, behind :class:`analysis.store.engine.BracketEngine`.

    Stateless, so it pickles by reference to this class: worker processes and executors
    receive it with every task.

    Attributes
    ----------
    name : str
        ``"analysis.brackets"``.
    version : str
        ``analysis.brackets.__version__``; a store records ``"analysis.brackets 4"`` with
        every profile, and recomputes the profiles of any other version.
    efforts : tuple of str
        :data:`analysis.brackets.EFFORTS`.

    Examples
    --------
    >>> from analysis.brackets.engine import default_engine
    >>> engine = default_engine()
    >>> engine.name, engine.efforts
    ('analysis.brackets', ('fast', 'default', 'thorough'))
    """

    name: ClassVar[str] = "analysis.brackets"
    efforts: ClassVar[tuple[str, ...]] = EFFORTS

    @property
    def version(self) -> str:
        return _version()

    def profile_batch(
        self,
        matrices: Sequence[np.ndarray],
        temperatures: Sequence[float],
        *,
        eps: Sequence[float],
        effort: str,
        previous: Sequence[Profile | None],
        device: str | None = None,
    ) -> list[Profile]:
        """Profiles of one matrix at several temperatures, searched side by side.

        Parameters
        ----------
        matrices : sequence of array ``[M, N]``
            The matrix at each temperature (``matrices[i]`` at ``temperatures[i]``).
        temperatures : sequence of float
            Distinct, finite, > 0.
        eps, effort, device
            As in :func:`analysis.brackets.profile_matrix`.
        previous : sequence of Profile or None
            An earlier profile (or None) per matrix, extended.

        Returns
        -------
        list of Profile, one per matrix, in order.

        Notes
        -----
        Several temperatures are :func:`analysis.brackets.profile_temperatures` (each
        profile records its temperature in ``stats``). A batch of one is
        :func:`analysis.brackets.profile_matrix`, the same search of one matrix; its
        profile records no temperature, as the store's profiles of a one-temperature run
        always have.
        """
        if len(matrices) == 1 and len(temperatures) == 1 and len(previous) == 1:
            prof = profile_matrix(
                matrices[0], eps=eps, effort=effort, previous=previous[0], device=device
            )
            return [prof]
        return profile_temperatures(
            matrices, temperatures, eps=eps, effort=effort, previous=previous, device=device
        )

    def load_profile(self, d: Mapping[str, Any]) -> Profile:
        """:meth:`analysis.brackets.Profile.from_dict` (unverified: the store re-verifies)."""
        return Profile.from_dict(d)  # type: ignore[arg-type]


def default_engine() -> Engine:
    """The package's bracket engine (:class:`Engine`), as ``study`` and ``cli`` pass it to
    :func:`analysis.store.run_brackets`.

    Examples
    --------
    It satisfies the store's :class:`~analysis.store.engine.BracketEngine`; a batch of one
    matrix is :func:`~analysis.brackets.profile_matrix` (the 4 x 4 identity has
    ``r_eps = 4`` for eps < 1):

    >>> import numpy as np
    >>> from analysis.brackets.engine import default_engine
    >>> from analysis.store import BracketEngine
    >>> engine = default_engine()
    >>> isinstance(engine, BracketEngine)
    True
    >>> [prof] = engine.profile_batch(
    ...     [np.eye(4)], [1.0], eps=(0.5,), effort="fast", previous=[None]
    ... )
    >>> prof.bracket(0.5)
    Bracket(lo=4, hi=4)
    >>> engine.load_profile(prof.to_dict()).bracket(0.5)
    Bracket(lo=4, hi=4)
    """
    return Engine()
