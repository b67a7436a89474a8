"""The engine versions the package can run, as values.

An engine version names one frozen witness search: its settings per effort and its
stages. Versions are added, never rewritten, so a profile of version 4 computed today is
the profile version 4 computed when a study was locked. A design pins the version its
outcomes use (``engine = 4``); plain commands and new designs take :data:`LATEST_ENGINE`.
Certificates do not depend on the version: every version's witnesses pass the same
verifier (:mod:`analysis.brackets.verify`).
"""

from __future__ import annotations

from typing import Any

from analysis.validation import ParameterError

__all__ = ["ENGINE_VERSIONS", "LATEST_ENGINE", "check_engine"]

ENGINE_VERSIONS: tuple[int, ...] = (4,)
"""Engine versions this package runs, oldest first."""

LATEST_ENGINE: int = ENGINE_VERSIONS[-1]
"""The newest engine version: the default of plain commands and new designs."""


def check_engine(engine: Any) -> int:
    """``engine`` as an int if the package has that engine version, else a clear error.

    ``None`` means :data:`LATEST_ENGINE`. An int-valued string (``"4"``, as a store label
    or a command line carries it) is accepted; a bool, a float or any other version is not.

    Examples
    --------
    >>> from analysis.brackets.versions import LATEST_ENGINE, check_engine
    >>> check_engine(4), check_engine("4"), check_engine(None) == LATEST_ENGINE
    (4, 4, True)
    >>> check_engine(3)
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: engine: expected one of the engine versions 4, got 3
    """
    if engine is None:
        return LATEST_ENGINE
    value: Any = engine
    if isinstance(engine, str) and engine.strip().isdigit():
        value = int(engine.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value not in ENGINE_VERSIONS:
        allowed = ", ".join(map(str, ENGINE_VERSIONS))
        raise ParameterError("engine", f"one of the engine versions {allowed}", engine)
    return int(value)
