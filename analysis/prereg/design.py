"""Design file: TOML schema, validation, canonical hash and the held-out draw.

A design is a TOML file with these top-level keys (see ``docs/prereg.md``):

``title``, ``effort``, ``[[hypotheses]]``, ``[sampling]`` (with ``[[sampling.sources]]``),
``[held_out]``, ``[outcome]``, ``[models]``, ``[descriptors]``, ``[metrics]``,
``[inference]``, ``[exclusions]``, ``[exploratory]``.

Validation errors are :class:`~analysis.validation.ParameterError` whose name is the
dotted key (``"inference.alpha"``, ``"sampling.sources[0].layers"``, ...).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from analysis.prereg.engine_pin import check_design_engine
from analysis.prereg.options import check_design_options, design_options
from analysis.validation import EFFORTS, ParameterError

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10 with the tomli backport
    import tomli as tomllib  # type: ignore[no-redef]

__all__ = [
    "REQUIRED_SECTIONS",
    "KNOWN_METRICS",
    "CROSS_FITTED_CALIBRATION",
    "parse_calibration",
    "Design",
    "canonical_bytes",
    "design_sha256",
    "heads_sha256",
    "load_design",
    "validate_design",
    "population",
    "draw_held_out",
    "write_held_out",
]

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
KNOWN_METRICS: tuple[str, ...] = ("interval_sq_loss", "interval_loglik", "spearman_mid")
#: ``inference.bootstrap``: ``"cluster"`` = the percentile cluster bootstrap over held-out
#: heads; ``"studentized"`` = its bootstrap-t (``analysis.compare.BOOTSTRAPS``).
BOOTSTRAP_METHODS: tuple[str, ...] = ("cluster", "studentized")
_BLOCK_RE = re.compile(r"^[a-z][a-z0-9_]*$")
#: The accepted cross-fitted ``[descriptors] calibration``, with K the number of folds.
CROSS_FITTED_CALIBRATION = "cross-fitted by head, K folds"
_CROSS_FITTED_RE = re.compile(r"^cross-fitted by head, ([0-9]+) folds$")


def parse_calibration(value: Any, *, name: str = "descriptors.calibration") -> int | None:
    """The number of cross-fitting folds K a design's ``[descriptors] calibration`` states.

    Parameters
    ----------
    value : str or None
        The key's value (None when the design has no such key).
    name : str, keyword-only
        Named in errors.

    Returns
    -------
    int or None
        K for ``"cross-fitted by head, K folds"`` (K an integer >= 2); None for the
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
    >>> from analysis.prereg.design import parse_calibration
    >>> parse_calibration("cross-fitted by head, 5 folds"), parse_calibration("in-sample")
    (5, None)
    >>> parse_calibration("cross-fitted, 5 folds")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: descriptors.calibration: expected "cross-fitted by head, K folds" ...
    """
    if value is None:
        return None
    allowed = f'"{CROSS_FITTED_CALIBRATION}" (K an integer >= 2) or "in-sample"'
    if not isinstance(value, str):
        raise ParameterError(name, allowed, value)
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


def canonical_bytes(parsed: Mapping[str, Any]) -> bytes:
    """Canonical serialization of a parsed design (docs/guide/conventions.md, "Design file and lock").

    Notes
    -----
    ``json.dumps(parsed, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
    default=str).encode()``. Comments, key order and whitespace of the TOML text do not
    change it; any change of a value does.

    Examples
    --------
    >>> from analysis.prereg.design import canonical_bytes
    >>> canonical_bytes({"b": [1, 2.5], "a": "x"})  # keys sorted, no spaces
    b'{"a":"x","b":[1,2.5]}'
    """
    return json.dumps(
        parsed, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    ).encode()


def design_sha256(parsed: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of :func:`canonical_bytes`.

    Examples
    --------
    >>> import hashlib
    >>> from analysis.prereg.design import design_sha256
    >>> design_sha256({"a": 1, "b": 2}) == design_sha256({"b": 2, "a": 1})  # key order
    True
    >>> design_sha256({"a": 1}) == hashlib.sha256(b'{"a":1}').hexdigest()
    True
    """
    return hashlib.sha256(canonical_bytes(parsed)).hexdigest()


def heads_sha256(heads: Sequence[str]) -> str:
    """SHA-256 (hex) of a held-out list, as the canonical JSON of the list in its order.

    Examples
    --------
    >>> import hashlib
    >>> from analysis.prereg.design import heads_sha256
    >>> heads_sha256(["org/m:0:1"]) == hashlib.sha256(b'["org/m:0:1"]').hexdigest()
    True
    >>> heads_sha256(["a:0:0", "a:0:1"]) == heads_sha256(["a:0:1", "a:0:0"])  # order counts
    False
    """
    return hashlib.sha256(canonical_bytes(list(heads))).hexdigest()  # type: ignore[arg-type]


@dataclass(frozen=True)
class Design:
    """A parsed and validated design file.

    Attributes
    ----------
    path : Path
        Where the design was read from.
    data : dict
        The parsed TOML (treat as read-only).
    sha256 : str
        Hash of the canonical form.

    Examples
    --------
    Made by :func:`load_design`; its properties read the parsed TOML:

    >>> from pathlib import Path
    >>> from analysis.prereg.design import Design
    >>> data = {
    ...     "models": {"M0": ["baseline"], "M1": ["baseline", "native"]},
    ...     "held_out": {"heads": ["org/tiny:1:1"]},
    ...     "descriptors": {"calibration": "cross-fitted by head, 5 folds"},
    ...     "inference": {"family": [["M0", "M1"]]},
    ... }
    >>> design = Design(Path("toy.toml"), data, sha256="0" * 64)
    >>> design.models, design.family, design.held_out
    ({'M0': ('baseline',), 'M1': ('baseline', 'native')}, (('M0', 'M1'),), ('org/tiny:1:1',))
    >>> design.calibration_folds, design.sensitivity_pairs, design.by_checkpoint
    (5, (), False)
    """

    path: Path
    data: dict
    sha256: str

    @property
    def held_out(self) -> tuple[str, ...]:
        return tuple(self.data["held_out"].get("heads", []))

    @property
    def models(self) -> dict[str, tuple[str, ...]]:
        return {k: tuple(v) for k, v in self.data["models"].items()}

    @property
    def calibration_folds(self) -> int | None:
        """K when ``[descriptors] calibration`` is cross-fitted by head, else None
        (in-sample; see :func:`parse_calibration`)."""
        return parse_calibration(self.data["descriptors"].get("calibration"))

    @property
    def family(self) -> tuple[tuple[str, str], ...]:
        return tuple((a, b) for a, b in self.data["inference"]["family"])

    @property
    def sensitivity_pairs(self) -> tuple[tuple[str, str], ...]:
        return tuple((a, b) for a, b in self.data["inference"].get("sensitivity_pairs", []))

    @property
    def by_checkpoint(self) -> bool:
        """``[inference] by_checkpoint``: the secondary by-checkpoint effects are computed
        after the confirmatory comparison (default False)."""
        return bool(self.data["inference"].get("by_checkpoint", False))

    @property
    def by_length(self) -> bool:
        """``[inference] by_length``: the secondary effects by input length are computed
        after the confirmatory comparison (default False)."""
        return bool(self.data["inference"].get("by_length", False))

    def population(self) -> list[str]:
        return population(self.data)

    def comparison_options(self) -> dict[str, Any]:
        """The ``analysis.compare.ComparisonSpec`` fields of the design's SESOIs,
        checkpoint effects, resampling unit and refit replicates
        (:func:`~analysis.prereg.options.design_options`)."""
        return design_options(self.data)

    def comparison_kwargs(self) -> dict:
        """Fields of ``analysis.compare.ComparisonSpec`` that the design fixes.

        Returns
        -------
        dict
            ``family``, ``extra_pairs``, ``estimator``, ``metrics``, ``primary_metric``,
            ``n_boot``, ``alpha``, ``ci_level``, ``random_state`` (the inference seed),
            ``calibration`` (``analysis.compare.Calibration``: cross-fitted by head with
            :attr:`calibration_folds` folds and the inference seed, or in-sample).
            ``bootstrap`` (``inference.bootstrap``, default ``"cluster"``) and the fields of
            :meth:`comparison_options`. The caller adds ``models`` (``self.models``),
            ``log_columns``, the lock hash and the registry's covariate facts.
        """
        from analysis.compare.covariates import Calibration  # sklearn: only when needed

        inf = self.data["inference"]
        k = self.calibration_folds
        met = self.data["metrics"]
        metrics = [met["primary"]] + [m for m in met.get("secondary", []) if m != met["primary"]]
        return {
            "family": list(self.family),
            "extra_pairs": list(self.sensitivity_pairs),
            "estimator": inf.get("estimator", "interval"),
            "metrics": tuple(metrics),
            "primary_metric": met["primary"],
            "n_boot": int(inf["bootstrap_replicates"]),
            "alpha": float(inf["alpha"]),
            "ci_level": float(inf.get("ci_level", 0.95)),
            "random_state": int(inf["seed"]),
            "calibration": Calibration()
            if k is None
            else Calibration(folds=k, seed=int(inf["seed"])),
            "bootstrap": str(inf.get("bootstrap", "cluster")),
            **self.comparison_options(),
        }


def load_design(path: str | Path, *, require_held_out: bool = True) -> Design:
    """Read and validate a design file.

    Parameters
    ----------
    path : str or Path
        The TOML file.
    require_held_out : bool, keyword-only
        When False, an empty or missing ``held_out.heads`` is accepted (``prereg draw``
        fills it).

    Returns
    -------
    Design

    Examples
    --------
    A small design, written to the current folder; its held-out list is not drawn yet:

    >>> from pathlib import Path
    >>> from analysis.prereg.design import draw_held_out, load_design, write_held_out
    >>> from analysis.prereg.examples import write_example_design
    >>> text = write_example_design("toy.toml", held_out=None).read_text(encoding="utf-8")
    >>> design = load_design("toy.toml", require_held_out=False)
    >>> design.models, design.family, len(design.sha256)
    ({'M0': ('baseline',), 'M1': ('baseline', 'native')}, (('M0', 'M1'),), 64)
    >>> write_held_out("toy.toml", draw_held_out(design.data))
    >>> load_design("toy.toml").held_out
    ('org/tiny:1:1', 'org/tiny:1:2')
    >>> _ = Path("bad.toml").write_text(text.replace("0.25", "1.5"), encoding="utf-8")
    >>> load_design("bad.toml", require_held_out=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: held_out.fraction: expected a number in (0, 1), got 1.5
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"design file not found: {path}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ParameterError("design", "valid TOML", f"{path}: {exc}") from None
    validate_design(data, require_held_out=require_held_out)
    return Design(path=path, data=data, sha256=design_sha256(data))


def _need(section: Mapping[str, Any], key: str, prefix: str) -> Any:
    if key not in section:
        raise ParameterError(f"{prefix}{key}", "a value (missing)", None)
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
    ``[exploratory]``. The first offending key is the one named.

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

    >>> from analysis.prereg.design import REQUIRED_SECTIONS, validate_design
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


def _check_descriptors(data: Mapping[str, Any], models: Mapping[str, Any]) -> int | None:
    """``[descriptors]``: plugins, calibration; every model block built in without plugins.

    Returns the number of cross-fitting folds the calibration states (None: in-sample).
    """
    desc = _need_table(data, "descriptors")
    plugins = _str_list(
        "descriptors.plugins", _need(desc, "plugins", "descriptors."), nonempty=False
    )
    folds = parse_calibration(desc.get("calibration"))
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
    for i, h in enumerate(hyps):
        p = f"hypotheses[{i}]."
        if not isinstance(h, Mapping):
            raise ParameterError(f"hypotheses[{i}]", "a table", h)
        _need(h, "id", p)
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


def _check_held_out(data: Mapping[str, Any], folds: int | None, *, require_held_out: bool) -> None:
    """``[held_out]``: seed, fraction, and the drawn heads (sorted, distinct, known)."""
    ho = _need_table(data, "held_out")
    _int_at_least("held_out.seed", _need(ho, "seed", "held_out."), 0)
    _unit_fraction("held_out.fraction", _need(ho, "fraction", "held_out."))
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
    pop = set(population(data))
    unknown = [h for h in heads if h not in pop]
    if unknown:
        raise ParameterError("held_out.heads", "ids of the design's real-checkpoint heads", unknown)
    # the run checks again on the heads that have cells (exclusions can drop some)
    if folds is not None and folds > len(pop) - len(heads):
        raise ParameterError(
            "descriptors.calibration",
            f"at most as many folds as training heads ({len(pop) - len(heads)})",
            data["descriptors"].get("calibration"),
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
    by_ck = inf.get("by_checkpoint", False)
    if not isinstance(by_ck, bool):
        raise ParameterError("inference.by_checkpoint", "true or false", by_ck)
    by_len = inf.get("by_length", False)
    if not isinstance(by_len, bool):
        raise ParameterError("inference.by_length", "true or false", by_len)
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
    >>> from analysis.prereg.design import population
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


def draw_held_out(data: Mapping[str, Any]) -> list[str]:
    """Draw the held-out heads exactly as docs/guide/conventions.md states ("Design file and lock").

    Notes
    -----
    Population: the design's real-checkpoint heads sorted by (checkpoint, layer, head).
    ``rng = numpy.random.default_rng(held_out.seed)``; for each checkpoint in sorted
    order with n heads, ``rng.choice(n, size=round(fraction * n), replace=False)`` picks
    positions in that checkpoint's sorted list. The union is returned sorted.

    Examples
    --------
    >>> from analysis.prereg.design import draw_held_out
    >>> source = {"kind": "checkpoint", "checkpoint": "org/tiny", "layers": 2, "heads": 4}
    >>> data = {"sampling": {"sources": [source]}, "held_out": {"seed": 7, "fraction": 0.25}}
    >>> draw_held_out(data)  # round(0.25 * 8) = 2 heads, the same for the same seed
    ['org/tiny:1:1', 'org/tiny:1:2']
    """
    ho = data["held_out"]
    rng = np.random.default_rng(ho["seed"])
    frac = float(ho["fraction"])
    pop = population(data)
    by_ck: dict[str, list[str]] = {}
    for hid in pop:
        by_ck.setdefault(hid.rsplit(":", 2)[0], []).append(hid)
    chosen: list[str] = []
    for ck in sorted(by_ck):
        members = by_ck[ck]
        n = len(members)
        idx = rng.choice(n, size=round(frac * n), replace=False)
        chosen.extend(members[int(i)] for i in idx)
    return sorted(chosen, key=_head_sort_key)


_HEADS_LINE = re.compile(r"^\s*heads\s*=")


def write_held_out(path: str | Path, heads: Sequence[str]) -> None:
    """Write ``heads = [...]`` on one line as the first key of ``[held_out]``.

    An existing one-line ``heads = ...`` in that section is replaced; comments and every
    other line are kept byte for byte.

    Examples
    --------
    >>> from pathlib import Path
    >>> from analysis.prereg.design import write_held_out
    >>> _ = Path("d.toml").write_text("[held_out]\\nseed = 7 # kept\\n", encoding="utf-8")
    >>> write_held_out("d.toml", ["org/tiny:1:1"])
    >>> write_held_out("d.toml", ["org/tiny:1:1", "org/tiny:1:2"])  # replaces the line
    >>> print(Path("d.toml").read_text(encoding="utf-8"), end="")
    [held_out]
    heads = ["org/tiny:1:1", "org/tiny:1:2"]
    seed = 7 # kept
    """
    path = Path(path)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if ln.strip() == "[held_out]"), None)
    if start is None:
        raise ParameterError("held_out", "a [held_out] section in the design", str(path))
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")),
        len(lines),
    )
    text = "heads = " + json.dumps(list(heads), ensure_ascii=False) + "\n"
    existing = [i for i in range(start + 1, end) if _HEADS_LINE.match(lines[i])]
    for i in existing:
        if not lines[i].split("#", 1)[0].rstrip().endswith("]"):
            raise ParameterError(
                "held_out.heads", "a one-line list (as `prereg draw` writes it)", lines[i].strip()
            )
    for i in reversed(existing):
        del lines[i]
    lines.insert(start + 1, text)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(lines), encoding="utf-8")
    tmp.replace(path)
