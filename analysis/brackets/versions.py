"""The engine versions the package can run, as values.

An engine version names one frozen witness search: its settings per effort and its
stages. Versions are added, never rewritten, so a profile of version 4 computed today is
the profile version 4 computed when a study was locked. A design pins the version its
outcomes use (``engine = 4``); plain commands and new designs take :data:`LATEST_ENGINE`.
Certificates do not depend on the version: every version's witnesses pass the same
verifier (:mod:`analysis.brackets.verify`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from analysis.brackets.settings import ROWSPAN_SETTINGS, SETTINGS, SWAP_SETTINGS
from analysis.validation import EFFORTS, ParameterError, check_choice

__all__ = ["ENGINE_VERSIONS", "LATEST_ENGINE", "EngineSpec", "check_engine", "engine_spec"]

ENGINE_VERSIONS: tuple[int, ...] = (4, 5, 6)
"""Engine versions this package runs, oldest first."""

LATEST_ENGINE: int = 5
"""The released engine version: the default of plain commands and new designs. Engine 6
(exchange-swapped lower-trial starts) runs when named but missed its targets
(docs/results/engine.md, "Engine 6 against engine 5"), so it is not the default."""


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
    analysis.validation.ParameterError: engine: expected one of the engine versions 4, 5, 6, got 3
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


@dataclass(frozen=True)
class EngineSpec:
    """One engine version as a value: its stages, in order, and its settings per effort.

    Attributes
    ----------
    version : int
    stages : tuple of str
        The stages the search runs, in order (names, for the record and the hash).
    settings : mapping of str to a frozen settings dataclass
        Per effort (:data:`analysis.validation.EFFORTS`):
        :class:`~analysis.brackets.settings.SearchSettings` for engine 4,
        :class:`~analysis.brackets.settings.RowSpanSettings` for engine 5,
        :class:`~analysis.brackets.settings.SwapSettings` for engine 6.

    Examples
    --------
    >>> from analysis.brackets import engine_spec
    >>> spec = engine_spec(5)
    >>> spec.version, spec.stages[:3]
    (5, ('trivial', 'cheap', 'rowspan-scan'))
    >>> len(spec.sha256("default")), spec.sha256("default") != engine_spec(4).sha256("default")
    (64, True)
    """

    version: int
    stages: tuple[str, ...]
    settings: Mapping[str, Any]

    def sha256(self, effort: str) -> str:
        """SHA-256 of ``{"version", "stages", "settings"}`` of ``effort`` as canonical JSON.

        The settings are the dataclass fields by name (nested for engine 5's ``base``),
        floats written by ``repr``, keys sorted, no spaces: any change of a stage or of a
        value changes the hash.
        """
        effort = check_choice("effort", effort, EFFORTS)
        doc = {
            "version": self.version,
            "stages": list(self.stages),
            "settings": dataclasses.asdict(self.settings[effort]),
        }
        text = json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


_SPECS = {
    4: EngineSpec(4, ("trivial", "cheap", "refine", "close", "prune"), SETTINGS),
    5: EngineSpec(
        5,
        ("trivial", "cheap", "rowspan-scan", "refine-rowspan", "close-inverse-transform", "prune"),
        ROWSPAN_SETTINGS,
    ),
    6: EngineSpec(
        6,
        (
            "trivial",
            "cheap",
            "rowspan-scan",
            "refine-rowspan-swapped-starts",
            "close-inverse-transform",
            "prune",
        ),
        SWAP_SETTINGS,
    ),
}


def engine_spec(version: Any = None) -> EngineSpec:
    """The :class:`EngineSpec` of an engine version (default :data:`LATEST_ENGINE`).

    Examples
    --------
    >>> from analysis.brackets import engine_spec
    >>> engine_spec(4).settings["default"].rounds
    6
    >>> engine_spec("7")
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: engine: expected one of the engine versions 4, 5, 6, got '7'
    """
    return _SPECS[check_engine(version)]
