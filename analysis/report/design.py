"""What the report shows of a design: a typed, read-only view filled by the study layer.

The report never reads a design file and never repeats the defaults of the comparison:
:func:`analysis.study.report_design` fills a :class:`ReportDesign` from the parsed and
validated ``analysis.prereg.Design`` (its ``comparison_kwargs()``, the arguments the
comparison actually ran with), and the report renders those values. ``analysis.report``
may not import ``analysis.prereg`` (the import contracts in ``pyproject.toml``), so the
view is the report's own type. A field left at its default (``None`` or empty) is
"not stated", and the report says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["ReportDesign", "ReportHypothesis"]


@dataclass(frozen=True)
class ReportHypothesis:
    """One hypothesis of the design.

    Attributes
    ----------
    id : str
        ``"H1"``.
    kind : str
        ``"confirmatory"``, ``"secondary"`` or ``"sensitivity"``.
    base, rich : str
        The pair's models (``"M0"``, ``"M1"``).
    statement : str

    Examples
    --------
    >>> h = ReportHypothesis("H2", "secondary", "M1", "M2")
    >>> h.pair, h.statement
    ('M1<M2', '')
    """

    id: str
    kind: str
    base: str
    rich: str
    statement: str = ""

    @property
    def pair(self) -> str:
        """``"M0<M1"``."""
        return f"{self.base}<{self.rich}"


@dataclass(frozen=True)
class ReportDesign:
    """The design as the report shows it (every field as the study ran it).

    Attributes
    ----------
    hypotheses : tuple of ReportHypothesis
    models : mapping
        Model name -> its descriptor blocks, in the design's order.
    outcome : mapping
        ``quantity``, ``transform``, ``observed_as`` (empty when not stated).
    primary_metric : str or None
    secondary_metrics : tuple of str
        The other metrics the comparison computes (the primary one excluded).
    estimator : str or None
    alpha, ci_level : float or None
    family : tuple of (str, str)
        The Holm family's pairs.
    sensitivity_pairs : tuple of (str, str)
    decision : str or None
        The design's decision rule, as written.
    bootstrap : str or None
        ``"cluster"`` or ``"studentized"``.
    cluster : str or None
        What the bootstrap resamples (``"head"``).
    bootstrap_replicates : int or None
    seed : int or None
        The inference seed.
    held_out : tuple of str
        The held-out head ids.
    held_out_fraction : float or None
    held_out_seed : int or None
    held_out_estimand : str or None
        What the held-out comparison estimates, for a design whose held-out draw is
        stratified by (checkpoint, layer) or holds out whole layers
        (``analysis.prereg.held_out.HeldOutRule.sentence``); None for the per-checkpoint
        draw of head units.
    exclusion_rules : tuple of str
    calibration : str or None
        The design's ``[descriptors] calibration`` text.
    by_checkpoint : bool
        Whether the design asks for the secondary by-checkpoint effects.
    by_length : bool
        Whether the design asks for the secondary effects by input length.

    Examples
    --------
    >>> d = ReportDesign(hypotheses=(ReportHypothesis("H1", "confirmatory", "M0", "M1"),),
    ...                  family=(("M0", "M1"),))
    >>> d.hypotheses[0].pair, sorted(d.family_pairs)
    ('M0<M1', ['M0<M1'])
    """

    hypotheses: tuple[ReportHypothesis, ...] = ()
    models: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    outcome: Mapping[str, str] = field(default_factory=dict)
    primary_metric: str | None = None
    secondary_metrics: tuple[str, ...] = ()
    estimator: str | None = None
    alpha: float | None = None
    ci_level: float | None = None
    family: tuple[tuple[str, str], ...] = ()
    sensitivity_pairs: tuple[tuple[str, str], ...] = ()
    decision: str | None = None
    bootstrap: str | None = None
    cluster: str | None = None
    bootstrap_replicates: int | None = None
    seed: int | None = None
    held_out: tuple[str, ...] = ()
    held_out_fraction: float | None = None
    held_out_seed: int | None = None
    held_out_estimand: str | None = None
    exclusion_rules: tuple[str, ...] = ()
    calibration: str | None = None
    by_checkpoint: bool = False
    by_length: bool = False

    @property
    def family_pairs(self) -> frozenset[str]:
        """The Holm family as ``"M0<M1"`` labels."""
        return frozenset(f"{a}<{b}" for a, b in self.family)

    @property
    def metrics(self) -> tuple[str, ...]:
        """The primary metric, then the secondary ones (none when nothing is stated)."""
        first = (self.primary_metric,) if self.primary_metric else ()
        return first + tuple(m for m in self.secondary_metrics if m not in first)
