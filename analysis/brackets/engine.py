"""The package's bracket engine as one picklable object, for callers that take an engine.

:func:`analysis.store.run_brackets` profiles a store's matrices with an engine it is given
(:class:`analysis.store.engine.BracketEngine`) and imports none; ``study`` and ``cli``
pass :func:`engine_for` of the version a design pins or a command names (plain commands:
:func:`default_engine`, the newest). This module adapts the search
(:mod:`analysis.brackets.search`) to that small interface; brackets itself imports nothing
of the store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from analysis.brackets.profile import Profile
from analysis.brackets.search import profile_matrix, profile_temperatures
from analysis.brackets.settings import EFFORTS
from analysis.brackets.versions import check_engine

__all__ = ["Engine", "default_engine", "engine_for"]


@dataclass(frozen=True, init=False)
class Engine:
    """The certified bracket search of one engine version, behind
    :class:`analysis.store.engine.BracketEngine`.

    Parameters
    ----------
    version : int or str, optional
        One of :data:`analysis.brackets.ENGINE_VERSIONS` (an int-valued string is
        accepted); None: :data:`analysis.brackets.LATEST_ENGINE`. Checked by
        :func:`analysis.brackets.check_engine` (a ParameterError naming ``engine``).

    Attributes
    ----------
    name : str
        ``"analysis.brackets"``.
    version : str
        The engine version as text (``"4"``); a store records ``"analysis.brackets 4"``
        with every profile and keeps the profiles of each version apart.
    number : int
        The same version as an int, as the search takes it (``engine=``).
    efforts : tuple of str
        :data:`analysis.brackets.EFFORTS`.

    Notes
    -----
    A value with one field, so it pickles by value: worker processes and executors
    receive it, version included, with every task. Every version's witnesses pass the
    same verifier; a version fixes which witnesses the search finds.

    Examples
    --------
    >>> from analysis.brackets.engine import Engine
    >>> engine = Engine(version=4)
    >>> engine.name, engine.version, engine.number, engine.efforts
    ('analysis.brackets', '4', 4, ('fast', 'default', 'thorough'))
    >>> Engine(version="4") == engine
    True
    >>> Engine(version=3)
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: engine: expected one of the engine versions 4, 5, 6, got 3
    """

    name: ClassVar[str] = "analysis.brackets"
    efforts: ClassVar[tuple[str, ...]] = EFFORTS

    version: str = ""

    def __init__(self, version: int | str | None = None):
        object.__setattr__(self, "version", str(check_engine(version)))

    @property
    def number(self) -> int:
        return int(self.version)

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
        The search is this engine's version (``engine=``). Several temperatures are
        :func:`analysis.brackets.profile_temperatures` (each
        profile records its temperature in ``stats``). A batch of one is
        :func:`analysis.brackets.profile_matrix`, the same search of one matrix; its
        profile records no temperature, as the store's profiles of a one-temperature run
        always have.
        """
        if len(matrices) == 1 and len(temperatures) == 1 and len(previous) == 1:
            prof = profile_matrix(
                matrices[0],
                eps=eps,
                effort=effort,
                previous=previous[0],
                device=device,
                engine=self.number,
            )
            return [prof]
        return profile_temperatures(
            matrices,
            temperatures,
            eps=eps,
            effort=effort,
            previous=previous,
            device=device,
            engine=self.number,
        )

    def load_profile(self, d: Mapping[str, Any]) -> Profile:
        """:meth:`analysis.brackets.Profile.from_dict` (unverified: the store re-verifies)."""
        return Profile.from_dict(d)  # type: ignore[arg-type]


def engine_for(version: int | str | None) -> Engine:
    """The package's engine of ``version`` (:class:`Engine`); None: the newest.

    Parameters
    ----------
    version : int, str or None
        One of :data:`analysis.brackets.ENGINE_VERSIONS`, as a design pins it
        (``engine = 4``) or a command names it (``--engine 4``).

    Raises
    ------
    ParameterError
        Naming ``engine``, the versions available and what came in.

    Examples
    --------
    >>> from analysis.brackets.engine import engine_for
    >>> engine_for(4).version
    '4'
    >>> engine_for("five")
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: engine: expected one of the engine versions 4, 5, 6, got 'five'
    """
    return Engine(version)


def default_engine() -> Engine:
    """The package's newest bracket engine (:data:`analysis.brackets.LATEST_ENGINE`), as
    plain commands pass it to :func:`analysis.store.run_brackets`.

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
    return Engine(None)
