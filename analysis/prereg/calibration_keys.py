"""The design's calibration keys: ``[descriptors] calibration`` and ``calibration_repeats``.

:func:`parse_calibration` reads the key's text, :func:`design_calibration` adds method 3's
default (leave one head out), :func:`calibration_repeats` gives R, the fold assignments a
K-fold cross-fit averages. :mod:`analysis.prereg.schema` re-exports all of them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from analysis.prereg.options import design_method
from analysis.validation import ParameterError

__all__ = [
    "CALIBRATION_REPEATS_V3",
    "CROSS_FITTED_CALIBRATION",
    "LEAVE_ONE_HEAD_OUT",
    "calibration_repeats",
    "design_calibration",
    "parse_calibration",
]

#: The accepted cross-fitted ``[descriptors] calibration``, with K the number of folds.
CROSS_FITTED_CALIBRATION = "cross-fitted by head, K folds"
_CROSS_FITTED_RE = re.compile(r"^cross-fitted by head, ([0-9]+) folds$")
#: The ``[descriptors] calibration`` that leaves one training head out (K = the number
#: of training heads, found at run time; no fold seed); the default under method 3.
LEAVE_ONE_HEAD_OUT = "cross-fitted by head, leave one head out"
#: ``[descriptors] calibration_repeats`` of a cross-fitted design under top-level
#: ``method = 3`` that does not state it (under method 2: 1, a single fold assignment);
#: chosen by measurement, docs/results/crossfit.md.
CALIBRATION_REPEATS_V3 = 20


def parse_calibration(value: Any, *, name: str = "descriptors.calibration") -> int | str | None:
    """The cross-fitting folds a design's ``[descriptors] calibration`` states.

    Parameters
    ----------
    value : str or None
        The key's value (None when the design has no such key).
    name : str, keyword-only
        Named in errors.

    Returns
    -------
    int, str or None
        K for ``"cross-fitted by head, K folds"`` (K an integer >= 2);
        :data:`LEAVE_ONE_HEAD_OUT` for that exact text; None for the
        in-sample calibration: ``"in-sample"``, a missing key, or the free text of a
        design written before the key was parsed (any text that mentions neither
        "cross" nor "fold", such as the first shipped designs' description of the
        isotonic fit). Older designs keep their in-sample calibration that way.

    Raises
    ------
    ParameterError
        Named ``name``: not a string, or text that mentions cross-fitting or folds in
        any other form than the exact one (a misspelt cross-fit is never read as
        in-sample), or K < 2.

    Examples
    --------
    >>> from analysis.prereg.schema import parse_calibration
    >>> parse_calibration("cross-fitted by head, 5 folds"), parse_calibration("in-sample")
    (5, None)
    >>> parse_calibration("cross-fitted by head, leave one head out")
    'cross-fitted by head, leave one head out'
    >>> parse_calibration("cross-fitted, 5 folds")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: descriptors.calibration: expected "cross-fitted by head, K folds" ...
    """
    if value is None:
        return None
    allowed = (
        f'"{CROSS_FITTED_CALIBRATION}" (K an integer >= 2), "{LEAVE_ONE_HEAD_OUT}" or "in-sample"'
    )
    if not isinstance(value, str):
        raise ParameterError(name, allowed, value)
    if value == LEAVE_ONE_HEAD_OUT:
        return LEAVE_ONE_HEAD_OUT
    m = _CROSS_FITTED_RE.match(value)
    if m:
        k = int(m.group(1))
        if k < 2:
            raise ParameterError(name, allowed, value)
        return k
    low = value.lower()
    if "cross" in low or "fold" in low:
        raise ParameterError(name, allowed, value)
    return None  # "in-sample", or the legacy free-text description


def design_calibration(data: Mapping[str, Any]) -> int | str | None:
    """The calibration a design asks for: :func:`parse_calibration` of its
    ``[descriptors] calibration``, or, when a design under top-level ``method = 3`` does
    not state the key, :data:`LEAVE_ONE_HEAD_OUT` (under method 2 a missing key is the
    in-sample calibration, None).

    Examples
    --------
    >>> from analysis.prereg.schema import design_calibration
    >>> design_calibration({"descriptors": {}}) is None
    True
    >>> design_calibration({"method": 3, "descriptors": {}})
    'cross-fitted by head, leave one head out'
    >>> design_calibration({"method": 3, "descriptors": {"calibration": "in-sample"}}) is None
    True
    """
    desc = data.get("descriptors", {})
    if "calibration" not in desc and design_method(data) == 3:
        return LEAVE_ONE_HEAD_OUT
    return parse_calibration(desc.get("calibration"))


def calibration_repeats(data: Mapping[str, Any]) -> int:
    """R, the fold assignments a cross-fitted calibration averages over.

    ``[descriptors] calibration_repeats`` when the design states it, else
    :data:`CALIBRATION_REPEATS_V3` under top-level ``method = 3`` and 1 (one assignment,
    the rule of every design written before the key) under method 2. An in-sample
    calibration and leave one head out have no random folds: 1, and a stated R > 1 is
    refused.

    Parameters
    ----------
    data : mapping
        The parsed design.

    Returns
    -------
    int
        R >= 1.

    Raises
    ------
    ParameterError
        Named ``descriptors.calibration_repeats``: not an integer >= 1, or R > 1 with an
        in-sample calibration or leave one head out.

    Examples
    --------
    >>> from analysis.prereg.schema import calibration_repeats
    >>> desc = {"calibration": "cross-fitted by head, 5 folds"}
    >>> calibration_repeats({"descriptors": desc}), calibration_repeats(
    ...     {"method": 3, "descriptors": desc})
    (1, 20)
    >>> calibration_repeats({"method": 3, "descriptors": {**desc, "calibration_repeats": 1}})
    1
    """
    desc = data.get("descriptors", {})
    name = "descriptors.calibration_repeats"
    folds = design_calibration(data)
    if "calibration_repeats" not in desc:
        if not isinstance(folds, int):
            return 1
        return CALIBRATION_REPEATS_V3 if design_method(data) == 3 else 1
    value = desc["calibration_repeats"]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ParameterError(name, "an integer >= 1", value)
    if not isinstance(folds, int) and value != 1:
        raise ParameterError(
            name, 'a cross-fitted calibration ("cross-fitted by head, K folds")', value
        )
    return int(value)
