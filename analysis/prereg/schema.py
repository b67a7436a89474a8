"""The design file's schema: :func:`validate_design`, one validator per section.

A design is a TOML file with these top-level keys (see ``docs/prereg.md``):

``title``, ``effort``, ``engine``, ``method``, ``[[hypotheses]]``, ``[sampling]`` (with
``[[sampling.sources]]``), ``[held_out]``, ``[outcome]``, ``[models]``, ``[descriptors]``, ``[metrics]``,
``[inference]``, ``[exclusions]``, ``[exploratory]``.

Validation errors are :class:`~analysis.validation.ParameterError` whose name is the
dotted key (``"inference.alpha"``, ``"sampling.sources[0].layers"``, ...).
:func:`population` lists the heads a valid design samples.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from analysis.prereg.calibration_keys import (
    CALIBRATION_REPEATS_V3,
    CROSS_FITTED_CALIBRATION,
    LEAVE_ONE_HEAD_OUT,
    calibration_repeats,
    design_calibration,
    parse_calibration,
)
from analysis.prereg.corpora import (  # noqa: F401 - re-exported: the design's corpus names
    IMAGE_CORPORA,
    SPEECH_CORPORA,
    TEXT_CORPORA,
    WINDOWS,
    check_windows,
)
from analysis.prereg.descriptor_versions import design_block_versions
from analysis.prereg.engine_pin import check_design_engine
from analysis.prereg.held_out import held_out_rule
from analysis.prereg.known_keys import REQUIRED_SECTIONS, check_known_keys
from analysis.prereg.options import check_design_options
from analysis.validation import EFFORTS, ParameterError

__all__ = [
    "REQUIRED_SECTIONS",
    "KNOWN_METRICS",
    "BOOTSTRAP_METHODS",
    "CALIBRATION_REPEATS_V3",
    "CROSS_FITTED_CALIBRATION",
    "LEAVE_ONE_HEAD_OUT",
    "calibration_repeats",
    "design_calibration",
    "parse_calibration",
    "validate_design",
    "population",
]

KNOWN_METRICS: tuple[str, ...] = ("interval_sq_loss", "interval_loglik", "spearman_mid")
#: ``inference.bootstrap``: ``"cluster"`` = the percentile cluster bootstrap over held-out
#: heads; ``"studentized"`` = its bootstrap-t (``analysis.compare.BOOTSTRAPS``).
BOOTSTRAP_METHODS: tuple[str, ...] = ("cluster", "studentized")
_BLOCK_RE = re.compile(r"^[a-z][a-z0-9_]*$")


def _need(section: Mapping[str, Any], key: str, prefix: str) -> Any:
    if key not in section:
        near = difflib.get_close_matches(key, [str(k) for k in section], n=1)
        typo = f"; is {near[0]} a misspelling of it?" if near else ""
        raise ParameterError(f"{prefix}{key}", f"a value (missing{typo})", None)
    return section[key]


def _need_table(data: Mapping[str, Any], key: str, prefix: str = "") -> Mapping[str, Any]:
    value = _need(data, key, prefix)
    if not isinstance(value, Mapping):
        raise ParameterError(f"{prefix}{key}", "a table", value)
    return value


def _str_list(name: str, value: Any, *, nonempty: bool = True) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ParameterError(name, "a list of strings", value)
    if nonempty and not value:
        raise ParameterError(name, "a non-empty list of strings", value)
    return value


def _num_list(name: str, value: Any, *, positive: bool = True) -> list[float]:
    if not isinstance(value, list) or not value:
        raise ParameterError(name, "a non-empty list of numbers", value)
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ParameterError(name, "finite numbers", value)
        if positive and v <= 0:
            raise ParameterError(name, "numbers > 0", value)
        out.append(float(v))
    return out


def _index_set(name: str, value: Any) -> list[int]:
    """``n`` (int: 0..n-1) or an explicit list of distinct non-negative ints."""
    if isinstance(value, bool):
        raise ParameterError(name, "a count (int >= 1) or a list of distinct ints >= 0", value)
    if isinstance(value, int):
        if value < 1:
            raise ParameterError(name, "a count >= 1", value)
        return list(range(value))
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
        and len(set(value)) == len(value)
    ):
        return sorted(value)
    raise ParameterError(name, "a count (int >= 1) or a list of distinct ints >= 0", value)


def validate_design(data: Mapping[str, Any], *, require_held_out: bool = True) -> None:
    """Check a parsed design against the schema; raise naming the offending key.

    One validator per section, in this order: the required sections and ``effort``,
    ``[models]``, ``[descriptors]``, ``[[hypotheses]]``, ``[sampling]``, ``[held_out]``,
    ``[outcome]``, ``[metrics]``, ``[inference]`` (with the hypotheses' pairs checked
    against its family and sensitivity pairs), then ``[exclusions]`` and
    ``[exploratory]``; then every key against the sections' known keys
    (:func:`~analysis.prereg.known_keys.check_known_keys`: an unknown key is named with
    the nearest known one). The first offending key is the one named.

    Parameters
    ----------
    data : mapping
        Parsed TOML.
    require_held_out : bool, keyword-only
        Require ``held_out.heads`` to be present and non-empty.

    Raises
    ------
    ParameterError
        Named by the dotted key, e.g. ``models.M1`` or ``inference.family[0]``.

    Examples
    --------
    :func:`load_design` calls it on the parsed TOML; the first offending key is named:

    >>> from analysis.prereg.schema import REQUIRED_SECTIONS, validate_design
    >>> validate_design({"title": "toy"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: hypotheses: expected a value (missing)...
    >>> sections = {name: {} for name in REQUIRED_SECTIONS}
    >>> validate_design({**sections, "effort": "quick"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: effort: expected one of fast, default, thorough, got 'quick'
    """
    for section in REQUIRED_SECTIONS:
        _need(data, section, "")
    if "effort" in data and data["effort"] not in EFFORTS:
        raise ParameterError("effort", "one of " + ", ".join(EFFORTS), data["effort"])
    if "engine" in data:  # which versions exist is checked where they are known
        check_design_engine(data["engine"])
    models = _check_models(data)
    folds = _check_descriptors(data, models)
    hyps = _check_hypotheses(data, models)
    _check_sampling(data)
    _check_held_out(data, folds, require_held_out=require_held_out)
    _check_outcome(data)
    _check_metrics(data)
    _check_inference(data, models, hyps)
    check_design_options(data)
    _need_table(data, "exclusions")
    _need_table(data, "exploratory")
    check_known_keys(data)  # last: a section's own message wins over "unknown key"


def _int_at_least(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ParameterError(name, f"an integer >= {minimum}", value)


def _unit_fraction(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise ParameterError(name, "a number in (0, 1)", value)


def _check_models(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """``[models]``: each model a list of distinct snake_case block names."""
    models = _need_table(data, "models")
    if not models:
        raise ParameterError("models", "at least one model", models)
    for name, blocks in models.items():
        _str_list(f"models.{name}", blocks)
        for b in blocks:
            if not _BLOCK_RE.match(b) or "__" in b:
                raise ParameterError(f"models.{name}", "block names in snake_case", b)
        if len(set(blocks)) != len(blocks):
            raise ParameterError(f"models.{name}", "distinct block names", blocks)
    return models


def _check_descriptors(data: Mapping[str, Any], models: Mapping[str, Any]) -> int | str | None:
    """``[descriptors]``: plugins, calibration, versions; every model block built in
    without plugins.

    Returns the calibration's folds (:func:`design_calibration`; None: in-sample).
    """
    desc = _need_table(data, "descriptors")
    plugins = _str_list(
        "descriptors.plugins", _need(desc, "plugins", "descriptors."), nonempty=False
    )
    folds = design_calibration(data)
    design_block_versions(data)  # the optional versions table: built-in blocks' versions
    calibration_repeats(data)
    builtin = {"baseline", "baseline_plus", "native", "intrinsic"}
    # A plugin module may declare blocks under any name, so without plugins every block
    # must be built in; with plugins the runner checks, once its registry is built, that
    # every block of every model is in it.
    for name, blocks in models.items():
        for b in blocks:
            if b not in builtin and not plugins:
                raise ParameterError(
                    f"models.{name}",
                    "blocks among baseline, baseline_plus, native, intrinsic, or blocks "
                    "registered by a module listed in descriptors.plugins",
                    b,
                )
    return folds


def _check_hypotheses(data: Mapping[str, Any], models: Mapping[str, Any]) -> list[Any]:
    """``[[hypotheses]]``: id, kind, a nested pair of defined models, statement."""
    hyps = _need(data, "hypotheses", "")
    if not isinstance(hyps, list) or not hyps:
        raise ParameterError("hypotheses", "an array of tables ([[hypotheses]])", hyps)
    seen: dict[Any, int] = {}
    for i, h in enumerate(hyps):
        p = f"hypotheses[{i}]."
        if not isinstance(h, Mapping):
            raise ParameterError(f"hypotheses[{i}]", "a table", h)
        hid = _need(h, "id", p)
        if hid in seen:
            raise ParameterError(
                p + "id", f"an id no other hypothesis has (hypotheses[{seen[hid]}] has it)", hid
            )
        seen[hid] = i
        kind = _need(h, "kind", p)
        if kind not in ("confirmatory", "secondary", "sensitivity"):
            raise ParameterError(p + "kind", "confirmatory, secondary or sensitivity", kind)
        _check_pair(p + "pair", _need(h, "pair", p), models)
        _need(h, "statement", p)
    return hyps


def _check_sampling(data: Mapping[str, Any]) -> None:
    """``[sampling]``: sources (at least one real checkpoint), grids, inputs."""
    sampling = _need_table(data, "sampling")
    sources = _need(sampling, "sources", "sampling.")
    if not isinstance(sources, list) or not sources:
        raise ParameterError("sampling.sources", "an array of tables", sources)
    if "checkpoints_preexist" in sampling and not isinstance(
        sampling["checkpoints_preexist"], bool
    ):
        raise ParameterError(
            "sampling.checkpoints_preexist", "true or false", sampling["checkpoints_preexist"]
        )
    _num_list("sampling.temperatures", _need(sampling, "temperatures", "sampling."))
    eps = _num_list("sampling.eps", _need(sampling, "eps", "sampling."))
    if any(e >= 1 for e in eps):
        raise ParameterError("sampling.eps", "values in (0, 1)", eps)
    n_real = sum(_check_source(i, src, sampling) for i, src in enumerate(sources))
    if n_real == 0:
        raise ParameterError("sampling.sources", 'at least one kind = "checkpoint" source', sources)
    inputs = _need_table(sampling, "inputs", "sampling.")
    _int_at_least("sampling.inputs.per_length", _need(inputs, "per_length", "sampling.inputs."), 1)
    _int_at_least("sampling.inputs.seed", _need(inputs, "seed", "sampling.inputs."), 0)
    if inputs.get("images", "whole") not in ("whole", "crops"):
        raise ParameterError("sampling.inputs.images", "whole or crops", inputs.get("images"))
    check_windows(inputs, sources, sampling.get("lengths"))  # validates the corpus keys too
    if "inputs" in data:  # a draft's top-level table: the keys live in [sampling.inputs]
        raise ParameterError(
            "inputs",
            "no top-level [inputs] table: name corpora in [sampling.inputs] as text_corpus, "
            "image_corpus, speech_corpus",
            data["inputs"],
        )


def _check_source(i: int, src: Any, sampling: Mapping[str, Any]) -> bool:
    """One ``[[sampling.sources]]`` table; True for a real checkpoint, False for synthetic."""
    p = f"sampling.sources[{i}]."
    if not isinstance(src, Mapping):
        raise ParameterError(f"sampling.sources[{i}]", "a table", src)
    kind = _need(src, "kind", p)
    if kind == "synthetic":
        _need(src, "family", p)
        if src.get("exploratory") is not True:
            raise ParameterError(
                p + "exploratory",
                "true (synthetic families are exploratory)",
                src.get("exploratory"),
            )
        return False
    if kind != "checkpoint":
        raise ParameterError(p + "kind", "checkpoint or synthetic", kind)
    ck = _need(src, "checkpoint", p)
    if not isinstance(ck, str) or not ck or ":" in ck:
        raise ParameterError(p + "checkpoint", "a Hugging Face id without ':'", ck)
    _index_set(p + "layers", _need(src, "layers", p))
    _index_set(p + "heads", _need(src, "heads", p))
    if src.get("exploratory", False):
        raise ParameterError(p + "exploratory", "false for a real checkpoint", True)
    lengths = src.get("lengths", sampling.get("lengths"))
    if not isinstance(lengths, list) or not lengths:
        raise ParameterError(p + "lengths", "a list of lengths (here or in [sampling])", lengths)
    for v in lengths:
        if isinstance(v, bool) or not isinstance(v, int) or v < 2:
            raise ParameterError(p + "lengths", "integers >= 2", lengths)
    return True


def _check_held_out(
    data: Mapping[str, Any], folds: int | str | None, *, require_held_out: bool
) -> None:
    """``[held_out]``: seed, fraction, the rule keys (``stratify``, ``unit``, ``estimand``,
    ``rule``: :func:`~analysis.prereg.held_out.held_out_rule`), and the drawn heads (sorted,
    distinct, known, and shaped as the rule draws them)."""
    ho = _need_table(data, "held_out")
    _int_at_least("held_out.seed", _need(ho, "seed", "held_out."), 0)
    _unit_fraction("held_out.fraction", _need(ho, "fraction", "held_out."))
    rule = held_out_rule(data)
    heads = ho.get("heads")
    if heads is None or heads == []:
        if require_held_out:
            raise ParameterError(
                "held_out.heads", "the drawn list (run `attnrank prereg draw`)", heads
            )
        return
    _str_list("held_out.heads", heads)
    if list(heads) != sorted(heads, key=_head_sort_key):
        raise ParameterError("held_out.heads", "ids sorted by (checkpoint, layer, head)", heads)
    if len(set(heads)) != len(heads):
        raise ParameterError("held_out.heads", "distinct head ids", heads)
    ordered = population(data)
    pop = set(ordered)
    unknown = [h for h in heads if h not in pop]
    if unknown:
        raise ParameterError("held_out.heads", "ids of the design's real-checkpoint heads", unknown)
    rule.check(ordered, heads)
    # the run checks again on the heads that have cells (exclusions can drop some)
    k = 2 if folds == LEAVE_ONE_HEAD_OUT else folds  # leaving one out needs 2 heads
    if isinstance(k, int) and k > len(pop) - len(heads):
        raise ParameterError(
            "descriptors.calibration",
            f"at most as many folds as training heads ({len(pop) - len(heads)})",
            data["descriptors"].get("calibration", LEAVE_ONE_HEAD_OUT),
        )


def _check_outcome(data: Mapping[str, Any]) -> None:
    """``[outcome]``: the log2 of the rank, observed as an interval."""
    outcome = _need_table(data, "outcome")
    for key in ("quantity", "transform", "observed_as"):
        _need(outcome, key, "outcome.")
    if outcome["transform"] != "log2":
        raise ParameterError("outcome.transform", "log2", outcome["transform"])
    if outcome["observed_as"] != "interval":
        raise ParameterError("outcome.observed_as", "interval", outcome["observed_as"])


def _check_metrics(data: Mapping[str, Any]) -> None:
    """``[metrics]``: a known primary metric and known secondary ones."""
    metrics = _need_table(data, "metrics")
    primary = _need(metrics, "primary", "metrics.")
    if primary not in KNOWN_METRICS:
        raise ParameterError("metrics.primary", "one of " + ", ".join(KNOWN_METRICS), primary)
    for m in _str_list("metrics.secondary", metrics.get("secondary", []), nonempty=False):
        if m not in KNOWN_METRICS:
            raise ParameterError("metrics.secondary", "among " + ", ".join(KNOWN_METRICS), m)


def _check_inference(
    data: Mapping[str, Any], models: Mapping[str, Any], hyps: Sequence[Any]
) -> None:
    """``[inference]``: bootstrap, seed, alpha, estimator, the Holm family and the
    sensitivity pairs; then each hypothesis's pair in the family (or, for a sensitivity
    hypothesis, among the sensitivity pairs)."""
    inf = _need_table(data, "inference")
    _int_at_least(
        "inference.bootstrap_replicates", _need(inf, "bootstrap_replicates", "inference."), 99
    )
    _int_at_least("inference.seed", _need(inf, "seed", "inference."), 0)
    _unit_fraction("inference.alpha", _need(inf, "alpha", "inference."))
    est = inf.get("estimator", "interval")
    if est not in ("interval", "ols", "ridge"):
        raise ParameterError("inference.estimator", "interval, ols or ridge", est)
    boot = inf.get("bootstrap", "cluster")
    if boot not in BOOTSTRAP_METHODS:
        raise ParameterError("inference.bootstrap", " or ".join(BOOTSTRAP_METHODS), boot)
    for key in ("by_checkpoint", "by_length"):
        if not isinstance(inf.get(key, False), bool):
            raise ParameterError(f"inference.{key}", "true or false", inf[key])
    fam = _need(inf, "family", "inference.")
    if not isinstance(fam, list) or not fam:
        raise ParameterError("inference.family", "a non-empty list of [base, rich] pairs", fam)
    for i, pair in enumerate(fam):
        _check_pair(f"inference.family[{i}]", pair, models)
    for i, pair in enumerate(inf.get("sensitivity_pairs", [])):
        _check_pair(f"inference.sensitivity_pairs[{i}]", pair, models)

    family = {tuple(p) for p in fam}
    sens = {tuple(p) for p in inf.get("sensitivity_pairs", [])}
    for i, h in enumerate(hyps):
        pair = tuple(h["pair"])
        if h["kind"] == "sensitivity" and pair not in sens:
            raise ParameterError(
                f"hypotheses[{i}].pair", "a pair listed in inference.sensitivity_pairs", list(pair)
            )
        if h["kind"] != "sensitivity" and pair not in family:
            raise ParameterError(
                f"hypotheses[{i}].pair",
                "a pair listed in inference.family (the Holm family)",
                list(pair),
            )


def _check_pair(name: str, pair: Any, models: Mapping[str, Any]) -> None:
    if not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(p, str) for p in pair):
        raise ParameterError(name, "a pair [base_model, rich_model]", pair)
    for m in pair:
        if m not in models:
            raise ParameterError(name, "model names defined in [models]", m)
    base, rich = (set(models[pair[0]]), set(models[pair[1]]))
    missing = sorted(base - rich)
    if missing:
        raise ParameterError(
            name,
            f"a nested pair ({pair[1]} lacks block(s) {', '.join(missing)} of {pair[0]})",
            pair,
        )
    if base == rich:
        raise ParameterError(name, "a rich model with at least one block more", pair)


def _head_sort_key(head_id: str) -> tuple[str, int, int]:
    ck, layer, head = head_id.rsplit(":", 2)
    return ck, int(layer), int(head)


def population(data: Mapping[str, Any]) -> list[str]:
    """The design's real-checkpoint heads, sorted by (checkpoint, layer, head).

    Returns
    -------
    list of str
        Head ids ``"<checkpoint>:<layer>:<head>"``. Synthetic sources are never included.

    Examples
    --------
    >>> from analysis.prereg.schema import population
    >>> source = {"kind": "checkpoint", "checkpoint": "org/tiny", "layers": 2, "heads": 4}
    >>> data = {"sampling": {"sources": [source]}, "held_out": {"seed": 7, "fraction": 0.25}}
    >>> population(data)  # 2 layers x 4 heads, sorted
    ['org/tiny:0:0', 'org/tiny:0:1', 'org/tiny:0:2', 'org/tiny:0:3',
     'org/tiny:1:0', 'org/tiny:1:1', 'org/tiny:1:2', 'org/tiny:1:3']
    """
    ids: set[tuple[str, int, int]] = set()
    for i, src in enumerate(data["sampling"]["sources"]):
        if src.get("kind") != "checkpoint":
            continue
        p = f"sampling.sources[{i}]."
        layers = _index_set(p + "layers", src["layers"])
        heads = _index_set(p + "heads", src["heads"])
        ids.update((src["checkpoint"], la, h) for la in layers for h in heads)
    return [f"{c}:{la}:{h}" for c, la, h in sorted(ids)]
