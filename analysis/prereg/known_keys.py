"""The keys a design may have, section by section; any other key is refused.

A misspelled key (``bootstrp_replicates``) would otherwise be ignored and its default
used in silence. :data:`KNOWN_KEYS` lists what the validators of
:mod:`analysis.prereg.schema` (and :mod:`~analysis.prereg.options`,
:mod:`~analysis.prereg.held_out`, :mod:`~analysis.prereg.corpora`,
:mod:`~analysis.prereg.calibration_keys`) read, plus the descriptive keys the shipped
designs state in words (``[inference] correction``, ``decision``, ...; docs/prereg.md,
"The design file"). :func:`check_known_keys` names an unknown key with the nearest known
one (:func:`difflib.get_close_matches`). Not checked: the model names of ``[models]``
and the block names of ``[descriptors] versions`` (their own validators name them).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from analysis.validation import ParameterError

__all__ = ["KNOWN_KEYS", "REQUIRED_SECTIONS", "check_known_keys"]

#: The sections every design must have (:func:`analysis.prereg.schema.validate_design`).
REQUIRED_SECTIONS: tuple[str, ...] = (
    "hypotheses",
    "sampling",
    "held_out",
    "outcome",
    "models",
    "descriptors",
    "metrics",
    "inference",
    "exclusions",
    "exploratory",
)

#: Section (dotted; ``[]`` for each table of an array) -> the keys it may have.
KNOWN_KEYS: dict[str, frozenset[str]] = {
    "": frozenset({"title", "effort", "engine", "method", "power", *REQUIRED_SECTIONS}),
    "hypotheses[]": frozenset({"id", "kind", "pair", "statement", "sesoi", "sesoi_share"}),
    "sampling": frozenset(
        {
            "sources",
            "checkpoints_preexist",
            "temperatures",
            "eps",
            "lengths",
            "inputs",
            "cell",  # in words
            "cluster",  # in words
        }
    ),
    "sampling.inputs": frozenset(
        {
            "seed",
            "per_length",
            "images",
            "source",  # in words
            "text_corpus",
            "image_corpus",
            "speech_corpus",
            "windows",
        }
    ),
    "sampling.sources[checkpoint]": frozenset(
        {
            "kind",
            "checkpoint",
            "layers",
            "heads",
            "exploratory",
            "lengths",
            "text_corpus",  # a source's own corpus (analysis.prereg.corpora.source_corpus)
            "image_corpus",
            "speech_corpus",
        }
    ),
    "sampling.sources[synthetic]": frozenset(
        {"kind", "family", "exploratory", "d", "n", "beta", "seeds", "lengths"}
    ),
    "held_out": frozenset({"heads", "seed", "fraction", "stratify", "unit", "estimand", "rule"}),
    "outcome": frozenset({"quantity", "transform", "observed_as", "source"}),
    "descriptors": frozenset(
        {
            "plugins",
            "calibration",
            "calibration_repeats",
            "versions",
            "log_scale",  # in words
            "standardize",  # in words
            "collinear",  # in words
        }
    ),
    "metrics": frozenset({"primary", "secondary"}),
    "inference": frozenset(
        {
            "bootstrap_replicates",
            "seed",
            "alpha",
            "family",
            "sensitivity_pairs",
            "estimator",
            "bootstrap",
            "by_checkpoint",
            "by_length",
            "checkpoint_effects",
            "cluster",
            "refit_replicates",
            "refit_bootstrap",
            "extrapolation",
            "input_effects",
            "resample",
            "ci_level",
            "correction",  # in words
            "decision",  # in words
            "secondary_tests",  # in words
            "sensitivity_estimators",  # in words
        }
    ),
    "exclusions": frozenset({"rules", "missing_data"}),
    "exploratory": frozenset({"analyses"}),
    "power": frozenset({"fit", "pilot_design", "pilot_input_seed", "unpiloted"}),
}


def _refuse_unknown(where: str, section: str, table: Mapping[str, Any]) -> None:
    known = KNOWN_KEYS[section]
    for key in table:
        if key in known:
            continue
        near = difflib.get_close_matches(str(key), sorted(known), n=1)
        hint = f"; did you mean {near[0]}?" if near else ""
        label = f"[{where}]" if where else "the top level"
        raise ParameterError(
            f"{where}.{key}" if where else str(key),
            f"a key of {label}: {', '.join(sorted(known))}{hint}",
            f"an unknown key {key!r}",
        )


def _tables(value: Any) -> Iterable[tuple[int, Mapping[str, Any]]]:
    if isinstance(value, list):
        yield from ((i, t) for i, t in enumerate(value) if isinstance(t, Mapping))


def check_known_keys(data: Mapping[str, Any]) -> None:
    """Refuse a key no section knows, naming it and the nearest known key.

    Parameters
    ----------
    data : mapping
        A parsed design (called by :func:`~analysis.prereg.schema.validate_design` once
        the sections' own checks have passed).

    Raises
    ------
    ParameterError
        Named by the dotted key, e.g. ``inference.bootstrp_replicates``.

    Examples
    --------
    >>> from analysis.prereg.known_keys import check_known_keys
    >>> check_known_keys({"inference": {"alpha": 0.05, "seed": 1}})
    >>> check_known_keys({"inference": {"bootstrp_replicates": 999}})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: inference.bootstrp_replicates: expected a key of [inference]: ...; did you mean bootstrap_replicates?, got "an unknown key 'bootstrp_replicates'"
    >>> check_known_keys({"hypotheses": [{"id": "H1", "statment": "s"}]})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: hypotheses[0].statment: expected a key of [hypotheses[0]]: ...; did you mean statement?, ...
    """
    _refuse_unknown("", "", data)
    for section in KNOWN_KEYS:
        if not section or "[" in section or "." in section:
            continue
        if isinstance(data.get(section), Mapping):
            _refuse_unknown(section, section, data[section])
    for i, h in _tables(data.get("hypotheses")):
        _refuse_unknown(f"hypotheses[{i}]", "hypotheses[]", h)
    sampling = data.get("sampling")
    if isinstance(sampling, Mapping):
        if isinstance(sampling.get("inputs"), Mapping):
            _refuse_unknown("sampling.inputs", "sampling.inputs", sampling["inputs"])
        for i, src in _tables(sampling.get("sources")):
            kind = "synthetic" if src.get("kind") == "synthetic" else "checkpoint"
            _refuse_unknown(f"sampling.sources[{i}]", f"sampling.sources[{kind}]", src)
