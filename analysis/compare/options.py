"""Options of :func:`~analysis.compare.compare_nested` that later designs may turn on.

:class:`ComparisonOptions` groups them so that the comparison's signature does not grow
with each one: a smallest effect size of interest (SESOI) per pair and metric, which
turns on the one-sided equivalence test (:mod:`analysis.compare.equivalence`), and
checkpoint fixed effects (:mod:`analysis.compare.offsets`). The default object changes
nothing: a comparison run with ``ComparisonOptions()`` gives the same values in the
same columns as one run without it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from analysis.validation import ParameterError

__all__ = ["RESAMPLING_UNITS", "SESOI_SOURCES", "ComparisonOptions"]

#: What the bootstrap resamples: whole heads (the default), whole KV groups (heads that
#: share their keys under grouped-query attention) or whole (checkpoint, layer) pairs.
#: A unit other than ``head`` is read from the table's column of that name, constant
#: within each head.
RESAMPLING_UNITS: tuple[str, ...] = ("head", "kv_group", "checkpoint_layer")

#: How a SESOI came about: declared in the design before the lock (``"pre-specified"``)
#: or supplied after outcomes, e.g. in a re-analysis of a design that predates SESOI
#: (``"exploratory"``). The comparisons table repeats it in its ``equivalence`` column.
SESOI_SOURCES: tuple[str, ...] = ("pre-specified", "exploratory")


def _check_sesoi(sesoi: object) -> Mapping[str, Mapping[str, float]]:
    if not isinstance(sesoi, Mapping):
        raise ParameterError("sesoi", 'a mapping "base<rich" -> {metric: SESOI}', sesoi)
    out: dict[str, Mapping[str, float]] = {}
    for pair, per_metric in sesoi.items():
        if not isinstance(pair, str) or pair.count("<") != 1:
            raise ParameterError("sesoi", 'pair keys written "base<rich"', pair)
        if not isinstance(per_metric, Mapping) or not per_metric:
            raise ParameterError(
                f"sesoi[{pair}]", "a non-empty mapping metric -> SESOI", per_metric
            )
        values = {}
        for metric, v in per_metric.items():
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            if not ok or v <= 0:
                raise ParameterError(f"sesoi[{pair}][{metric}]", "a finite number > 0", v)
            values[str(metric)] = float(v)
        out[pair] = MappingProxyType(values)
    return MappingProxyType(out)


@dataclass(frozen=True)
class ComparisonOptions:
    """Optional parts of a nested comparison; the defaults leave it as it was.

    Attributes
    ----------
    sesoi : mapping, default {}
        Pair (``"M0<M1"``) -> metric -> smallest effect size of interest, in the units
        of the metric's effect (``interval_sq_loss``: the held-out mean squared distance
        to the bracket, in squared log2 units, i.e. loss units; ``interval_loglik``:
        mean log-likelihood per cell; ``spearman_mid``: correlation). Each value finite
        and > 0. A (pair, metric) absent from it has no equivalence test.
    sesoi_source : {"pre-specified", "exploratory"}, default "pre-specified"
        Stamped in the ``equivalence`` column of each row with a SESOI.
    checkpoint_effects : bool, default False
        Checkpoint fixed effects in every model (M0 included), features constant within
        a checkpoint dropped, plus the checkpoint-equal estimand and the
        leave-one-family-out and width-stratified sensitivities
        (:mod:`analysis.compare.offsets`). Needs the table's ``stratum`` column.
    resampling_unit : {"head", "kv_group", "checkpoint_layer"}, default "head"
        The unit of the cluster bootstrap over held-out cells (:data:`RESAMPLING_UNITS`).
    refit_replicates : int, default 0
        R > 0 adds the refit-bootstrap sensitivity: R times, the training and the
        held-out units are resampled (within checkpoints when the table has them), every
        model is refitted and the effect recomputed, so fit uncertainty enters its CI
        (:func:`~analysis.compare.refit.refit_bootstrap_rows`).
    sensitivities : bool, default True
        With ``checkpoint_effects``: also compute the sensitivity rows (the
        leave-one-family-out refits are the costly part); the refits themselves run
        with False.

    Examples
    --------
    >>> from analysis.compare.options import ComparisonOptions
    >>> opts = ComparisonOptions(sesoi={"M0<M1": {"interval_sq_loss": 0.001}})
    >>> opts.sesoi_for("M0", "M1", "interval_sq_loss"), opts.sesoi_for("M0", "M1", "spearman_mid")
    (0.001, None)
    >>> ComparisonOptions(sesoi={"M0<M1": {"interval_sq_loss": 0.0}})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: sesoi[M0<M1][interval_sq_loss]: expected a finite number > 0...
    """

    sesoi: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    sesoi_source: str = "pre-specified"
    checkpoint_effects: bool = False
    resampling_unit: str = "head"
    refit_replicates: int = 0
    sensitivities: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "sesoi", _check_sesoi(self.sesoi))
        if self.sesoi_source not in SESOI_SOURCES:
            raise ParameterError("sesoi_source", " or ".join(SESOI_SOURCES), self.sesoi_source)
        if not isinstance(self.checkpoint_effects, bool):
            raise ParameterError("checkpoint_effects", "true or false", self.checkpoint_effects)
        if self.resampling_unit not in RESAMPLING_UNITS:
            raise ParameterError(
                "resampling_unit", " or ".join(RESAMPLING_UNITS), self.resampling_unit
            )
        r = self.refit_replicates
        if isinstance(r, bool) or not isinstance(r, int) or r < 0:
            raise ParameterError("refit_replicates", "an integer >= 0", r)
        if not isinstance(self.sensitivities, bool):
            raise ParameterError("sensitivities", "true or false", self.sensitivities)

    def sesoi_for(self, base: str, rich: str, metric: str) -> float | None:
        """The SESOI of one (pair, metric), or None when it has none."""
        return self.sesoi.get(f"{base}<{rich}", {}).get(metric)
