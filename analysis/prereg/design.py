"""Design file: read and validate it, its canonical hash, and the held-out draw written into it.

The schema (which keys a design has, and the checks of each section) is
:mod:`analysis.prereg.schema`; :func:`load_design` parses a design file and validates it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.prereg.held_out import HeldOutRule, held_out_rule
from analysis.prereg.options import design_method, design_options
from analysis.prereg.schema import (
    LEAVE_ONE_HEAD_OUT,
    calibration_repeats,
    design_calibration,
    population,
    validate_design,
)
from analysis.validation import ParameterError

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10 with the tomli backport
    import tomli as tomllib  # type: ignore[no-redef]

__all__ = [
    "Design",
    "canonical_bytes",
    "design_sha256",
    "heads_sha256",
    "load_design",
    "draw_held_out",
    "write_held_out",
]


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
    def method(self) -> int:
        """Top-level ``method``: 2 (the default) or 3 (:data:`~analysis.prereg.options.METHODS`)."""
        return design_method(self.data)

    @property
    def held_out(self) -> tuple[str, ...]:
        return tuple(self.data["held_out"].get("heads", []))

    @property
    def held_out_rule(self) -> HeldOutRule:
        """How :attr:`held_out` is drawn: ``[held_out] stratify`` and ``unit``
        (:func:`~analysis.prereg.held_out.held_out_rule`)."""
        return held_out_rule(self.data)

    @property
    def models(self) -> dict[str, tuple[str, ...]]:
        return {k: tuple(v) for k, v in self.data["models"].items()}

    @property
    def calibration_folds(self) -> int | str | None:
        """K when ``[descriptors] calibration`` is cross-fitted by head with K folds,
        :data:`~analysis.prereg.schema.LEAVE_ONE_HEAD_OUT` when it leaves one head out,
        else None (in-sample; see :func:`~analysis.prereg.schema.design_calibration`)."""
        return design_calibration(self.data)

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
            :attr:`calibration_folds` folds, the inference seed and
            :func:`~analysis.prereg.schema.calibration_repeats` fold assignments, or
            in-sample).
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
            else Calibration(leave_one_out=True)
            if k == LEAVE_ONE_HEAD_OUT
            else Calibration(
                folds=k, seed=int(inf["seed"]), repeats=calibration_repeats(self.data)
            ),
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
    >>> from analysis.datasets import write_example_design
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


def draw_held_out(data: Mapping[str, Any]) -> list[str]:
    """Draw the held-out heads exactly as docs/prereg.md states ("Held-out draw").

    Parameters
    ----------
    data : mapping
        The parsed design: its ``[sampling]`` sources (the population), ``[held_out]``
        ``seed``, ``fraction`` and rule keys, and the top-level ``method``.

    Returns
    -------
    list of str
        The held-out head ids, sorted by (checkpoint, layer, head).

    Notes
    -----
    Population: the design's real-checkpoint heads sorted by (checkpoint, layer, head).
    ``rng = numpy.random.default_rng(held_out.seed)``. Without ``stratify`` and ``unit``
    (every design written before them, method 2): for each checkpoint in sorted order
    with n heads, ``rng.choice(n, size=round(fraction * n), replace=False)`` picks
    positions in that checkpoint's sorted list. ``stratify = ["checkpoint", "layer"]``
    (the method-3 default) draws ``min(round(fraction * n), n - 1)`` per (checkpoint,
    layer) with n >= 2 heads, and ``unit = "layer"`` draws whole layers per checkpoint:
    :meth:`analysis.prereg.held_out.HeldOutRule.draw`. The union is returned sorted.

    Examples
    --------
    >>> from analysis.prereg.design import draw_held_out
    >>> source = {"kind": "checkpoint", "checkpoint": "org/tiny", "layers": 2, "heads": 4}
    >>> data = {"sampling": {"sources": [source]}, "held_out": {"seed": 7, "fraction": 0.25}}
    >>> draw_held_out(data)  # round(0.25 * 8) = 2 heads, the same for the same seed
    ['org/tiny:1:1', 'org/tiny:1:2']
    >>> draw_held_out({**data, "method": 3})  # round(0.25 * 4) = 1 head of each layer
    ['org/tiny:0:3', 'org/tiny:1:2']
    """
    ho = data["held_out"]
    rule = held_out_rule(data)
    return rule.draw(population(data), seed=ho["seed"], fraction=float(ho["fraction"]))


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
