"""Parameter validation shared by every stage.

All user-facing checks live here so that every error message has the same shape:
the parameter's name, what is allowed, and what came in.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np


class ParameterError(ValueError):
    """A user-supplied parameter is invalid; the message names it."""

    def __init__(self, name: str, allowed: str, got: Any):
        self.name = name
        self.allowed = allowed
        self.got = got
        super().__init__(f"{name}: expected {allowed}, got {_short(got)}")


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_positive_finite(name: str, value: Any) -> float:
    """Return ``value`` as a float, requiring it finite and > 0."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ParameterError(name, "a finite number > 0", value) from None
    if not math.isfinite(x) or x <= 0:
        raise ParameterError(name, "a finite number > 0", value)
    return x


def check_eps_grid(values: Iterable[Any], name: str = "eps") -> tuple[float, ...]:
    """Validate an eps grid: a non-empty sequence of finite numbers > 0 (order kept)."""
    vals = list(values) if not isinstance(values, (int, float)) else [values]
    if not vals:
        raise ParameterError(name, "at least one value", vals)
    return tuple(check_positive_finite(name, v) for v in vals)


def check_choice(name: str, value: Any, allowed: Sequence[Any]) -> Any:
    if value not in allowed:
        raise ParameterError(name, "one of " + ", ".join(map(str, allowed)), value)
    return value


def check_int(name: str, value: Any, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ParameterError(name, "an integer", value)
    if minimum is not None and value < minimum:
        raise ParameterError(name, f"an integer >= {minimum}", value)
    return int(value)


def check_random_state(value: Any, name: str = "random_state") -> np.random.Generator:
    """Turn ``None``, an int seed or a Generator into a ``numpy.random.Generator``."""
    if value is None or isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return np.random.default_rng(value)
    if isinstance(value, np.random.Generator):
        return value
    raise ParameterError(name, "None, an int seed or a numpy.random.Generator", value)
