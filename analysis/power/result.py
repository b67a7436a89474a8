"""What the power analysis gives: a validation's result per hypothesis and a fit's result.

:class:`ValidationResult` (of :func:`~analysis.power.error_rates.validate_comparison`) holds
one :class:`HypothesisPower` per tested hypothesis; :class:`FittedAssumptions` (of
:func:`~analysis.power.fit.fit_assumptions`) the simulator's parameters fitted to training
or pilot cells.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from analysis.power.inputs import PowerAssumptions
from analysis.power.rates import Rate
from analysis.power.simulate import DECISION_COLUMNS
from analysis.power.widths import StratumWidths

__all__ = ["RUN_COLUMNS", "FittedAssumptions", "HypothesisPower", "ValidationResult"]

#: Columns of :attr:`ValidationResult.runs`, one row per simulated study.
RUN_COLUMNS: tuple[str, ...] = (
    "hypothesis",
    "pair",
    "scenario",
    "share",
    "seeds",
    "simulation",
    *DECISION_COLUMNS,
)


@dataclass(frozen=True)
class HypothesisPower:
    """Size, power and minimum detectable effect of one hypothesis's decision.

    Attributes
    ----------
    hypothesis, kind : str
    pair : (base, rich)
    signal : str
        The block that carries the simulated signal.
    size_simple, size_boundary, power : Rate
        Rejection rates at the simple null (share 0), at the boundary null (share
        ``boundary_share``, fresh seeds) and at the assumed effect share.
    boundary_share : float
        The share at which the mean held-out effect is 0 (see
        :func:`~analysis.power.error_rates.validate_comparison`, Notes); 0 when the simple null's mean effect is
        already >= 0, NaN when no share up to 0.95 reaches it.
    boundary_mean_effect : float
        Mean effect at ``boundary_share`` on the calibration seeds (0 up to the
        calibration tolerance).
    size_ok : bool
        ``size_boundary.rate <= alpha + size_boundary.half_width``.
    mde, mde_low, mde_high : float
        The minimum detectable effect (share at power ``mde_target``, linear
        interpolation between the bracketing shares) and the bracket
        ``[mde_low, mde_high]`` the bisection ended with (its resolution); NaN when no
        share up to 0.95 reaches the target.
    mde_target : float
    curve : tuple of Rate
        Every share simulated on the calibration seeds, sorted.

    Examples
    --------
    Made by :func:`~analysis.power.error_rates.validate_comparison`, one per simulated hypothesis (here by
    :func:`analysis.datasets.example_validation`):

    >>> from analysis.datasets import example_validation
    >>> result = example_validation()  # 2 studies per share: far too few for real use
    >>> h = result.hypotheses[0]
    >>> h.hypothesis, h.pair, h.signal, h.size_simple.n
    ('M0<M1', ('M0', 'M1'), 'native', 2)
    >>> [rate.share for rate in h.curve] == sorted(rate.share for rate in h.curve)
    True
    >>> sorted(h.to_dict())[:4]
    ['boundary_mean_effect', 'boundary_share', 'curve', 'effect_loss']
    """

    hypothesis: str
    kind: str
    pair: tuple[str, str]
    signal: str
    size_simple: Rate
    size_boundary: Rate | None
    power: Rate
    boundary_share: float
    boundary_mean_effect: float
    size_ok: bool
    mde: float
    mde_low: float
    mde_high: float
    mde_target: float
    curve: tuple[Rate, ...] = field(repr=False)

    @property
    def simulated_m0_loss(self) -> float:
        """Mean held-out loss of the base model in the simulated studies at the null."""
        return self.size_simple.mean_base_value

    @property
    def effect_loss(self) -> float:
        """The alternative in loss units: the mean simulated held-out loss difference
        (base minus rich) at the assumed effect share."""
        return self.power.mean_effect

    @property
    def mde_loss(self) -> float:
        """The MDE in loss units: the mean simulated effect at the MDE share (linear
        interpolation on the simulated curve); NaN without an MDE."""
        if not np.isfinite(self.mde):
            return float("nan")
        shares = np.array([r.share for r in self.curve])
        effects = np.array([r.mean_effect for r in self.curve])
        return float(np.interp(self.mde, shares, effects))

    def loss_units(self) -> dict:
        """The effect share and the MDE beside their held-out loss differences and
        their shares of the simulated M0 loss."""
        m0 = self.simulated_m0_loss
        frac = (lambda x: x / m0) if np.isfinite(m0) and m0 > 0 else (lambda x: float("nan"))
        return {
            "effect_share": self.power.share,
            "effect_loss": self.effect_loss,
            "effect_share_of_m0_loss": frac(self.effect_loss),
            "mde_loss": self.mde_loss,
            "mde_share_of_m0_loss": frac(self.mde_loss),
            "simulated_m0_loss": m0,
        }

    def to_dict(self) -> dict:
        return {
            **self.loss_units(),
            "hypothesis": self.hypothesis,
            "kind": self.kind,
            "pair": f"{self.pair[0]}<{self.pair[1]}",
            "signal": self.signal,
            "size_simple": self.size_simple.to_dict(),
            "size_boundary": None if self.size_boundary is None else self.size_boundary.to_dict(),
            "power": self.power.to_dict(),
            "boundary_share": self.boundary_share,
            "boundary_mean_effect": self.boundary_mean_effect,
            "size_ok": self.size_ok,
            "mde": self.mde,
            "mde_low": self.mde_low,
            "mde_high": self.mde_high,
            "mde_target": self.mde_target,
            "curve": [r.to_dict() for r in self.curve],
        }

    def summary(self, alpha: float) -> str:
        pair = f"{self.pair[0]}<{self.pair[1]}"
        if self.size_boundary is None:
            boundary = "boundary null not reached below share 0.95"
        else:
            verdict = "ok" if self.size_ok else "ABOVE alpha + half-width"
            boundary = (
                f"size at the boundary null (share {self.boundary_share:.3f}) "
                f"{self.size_boundary} ({verdict}; unadjusted one-sided p < alpha in "
                f"{self.size_boundary.p_below_alpha:.3f})"
            )
        mde = (
            f"MDE {self.mde:.3f} (bracket [{self.mde_low:.3f}, {self.mde_high:.3f}])"
            if np.isfinite(self.mde)
            else f"MDE > {self.mde_low:.2f} (power {self.mde_target} not reached)"
        )
        u = self.loss_units()
        loss = (
            f" (held-out loss difference {u['effect_loss']:.3g}, "
            f"{u['effect_share_of_m0_loss']:.1%} of the simulated M0 loss "
            f"{u['simulated_m0_loss']:.3g})"
            if np.isfinite(u["simulated_m0_loss"])
            else ""
        )
        refit = ""
        if self.size_boundary is not None and np.isfinite(self.size_boundary.refit_p_below_alpha):
            refit = (
                "; refit-bootstrap p < alpha at the boundary null in "
                f"{self.size_boundary.refit_p_below_alpha:.3f}"
            )
        return (
            f"{self.hypothesis} ({pair}, signal in {self.signal}): size at the simple null "
            f"{self.size_simple}; {boundary}{refit}; power {self.power} at share "
            f"{self.power.share:g}{loss} (alpha {alpha:g}); {mde}"
            + (f" = loss {self.mde_loss:.3g}" if np.isfinite(self.mde_loss) else "")
        )


@dataclass(frozen=True)
class ValidationResult:
    """Outcome of :func:`~analysis.power.error_rates.validate_comparison`.

    Attributes
    ----------
    design : str
    simulations : int
        Simulated studies per scenario and share.
    alpha : float
    bootstrap : str
        The bootstrap the comparison used (``"cluster"``: percentile cluster bootstrap).
    assumptions : PowerAssumptions
    features : dict
        Block -> covariate columns simulated; ``features_note`` says where they came from.
    features_note : str
    strata : tuple of (label, heads, held_out)
    hypotheses : tuple of HypothesisPower
    skipped : dict
        Hypothesis id -> why it was not simulated.
    seed : int or None
    seconds : float
    runs : pandas.DataFrame
        :data:`RUN_COLUMNS`, one row per simulated study.
    reference_m0_loss : float or None
        The real M0 held-out loss the simulator is checked against (training or pilot
        cells, :func:`~analysis.power.fit.reference_m0_losses`); None when unknown.
    fit : dict or None
        :meth:`~analysis.power.result.FittedAssumptions.to_dict` when the
        assumptions were fitted.

    Examples
    --------
    Made by :func:`~analysis.power.error_rates.validate_comparison` (here by
    :func:`analysis.datasets.example_validation`):

    >>> from analysis.datasets import example_validation
    >>> result = example_validation()  # 2 studies per share: far too few for real use
    >>> result.confirmatory.hypothesis, result.simulations, result.alpha
    ('M0<M1', 2, 0.05)
    >>> from analysis.power.result import RUN_COLUMNS
    >>> list(result.runs.columns) == list(RUN_COLUMNS)
    True
    >>> print(result.summary())  # doctest: +ELLIPSIS
    validate-comparison on simulated study (default sizes, not a design): 2 simulations ...
    """

    design: str
    simulations: int
    alpha: float
    bootstrap: str
    assumptions: PowerAssumptions
    features: dict
    features_note: str
    strata: tuple
    hypotheses: tuple[HypothesisPower, ...]
    skipped: dict
    seed: int | None
    seconds: float
    runs: pd.DataFrame = field(repr=False)
    reference_m0_loss: float | None = None
    fit: dict | None = None

    @property
    def simulated_m0_loss(self) -> float | None:
        """Mean M0 held-out loss of the simulated studies at the null (the confirmatory
        hypothesis's simple-null studies)."""
        c = self.confirmatory
        if c is None or not np.isfinite(c.simulated_m0_loss):
            return None
        return float(c.simulated_m0_loss)

    @property
    def warnings(self) -> list[str]:
        """Design-check warnings: the simulated M0 loss more than 25% away from the
        reference (:func:`~analysis.power.rates.m0_loss_check`)."""
        from analysis.power.rates import m0_loss_check

        text = m0_loss_check(
            self.simulated_m0_loss, self.reference_m0_loss, fitted=self.fit is not None
        )
        return [] if text is None else [text]

    @property
    def confirmatory(self) -> HypothesisPower | None:
        for h in self.hypotheses:
            if h.kind == "confirmatory":
                return h
        return self.hypotheses[0] if self.hypotheses else None

    def to_dict(self) -> dict:
        """The JSON that ``attnrank validate-comparison --json`` prints.

        ``false_positive_rate`` (size at the simple null), ``size_boundary``, ``power``
        and ``mde`` repeat the confirmatory hypothesis's numbers at the top level.
        """
        c = self.confirmatory
        return {
            "design": self.design,
            "simulations": self.simulations,
            "alpha": self.alpha,
            "bootstrap": self.bootstrap,
            "effect": self.assumptions.effect,
            "icc": self.assumptions.icc,
            "assumptions": self.assumptions.to_dict(),
            "features": dict(self.features),
            "features_note": self.features_note,
            "strata": [list(s) for s in self.strata],
            "false_positive_rate": c.size_simple.rate if c else None,
            "size_boundary": c.size_boundary.rate if c and c.size_boundary else None,
            "power": c.power.rate if c else None,
            "mde": c.mde if c else None,
            "simulated_m0_loss": self.simulated_m0_loss,
            "reference_m0_loss": self.reference_m0_loss,
            "m0_loss_ratio": None
            if not (self.simulated_m0_loss and self.reference_m0_loss)
            else self.simulated_m0_loss / self.reference_m0_loss,
            "warnings": self.warnings,
            "fit": self.fit,
            "hypotheses": [h.to_dict() for h in self.hypotheses],
            "skipped": dict(self.skipped),
            "seed": self.seed,
            "seconds": round(self.seconds, 2),
        }

    def to_frame(self) -> pd.DataFrame:
        """One row per hypothesis: sizes with intervals, power, boundary share, MDE.

        ``calibration_mean_effect`` is the mean effect at the boundary share on the
        calibration seeds (0 up to the tolerance), ``boundary_mean_effect`` that on the
        fresh seeds the boundary size is measured on.
        """
        rows = []
        for h in self.hypotheses:
            sb = h.size_boundary
            rows.append(
                {
                    "hypothesis": h.hypothesis,
                    "pair": f"{h.pair[0]}<{h.pair[1]}",
                    "signal": h.signal,
                    "size_simple": h.size_simple.rate,
                    "size_simple_ci_low": h.size_simple.ci_low,
                    "size_simple_ci_high": h.size_simple.ci_high,
                    "boundary_share": h.boundary_share,
                    "size_boundary": sb.rate if sb else np.nan,
                    "size_boundary_ci_low": sb.ci_low if sb else np.nan,
                    "size_boundary_ci_high": sb.ci_high if sb else np.nan,
                    "calibration_mean_effect": h.boundary_mean_effect,
                    "boundary_mean_effect": sb.mean_effect if sb else np.nan,
                    "boundary_p_below_alpha": sb.p_below_alpha if sb else np.nan,
                    "size_ok": h.size_ok,
                    "effect": h.power.share,
                    "power": h.power.rate,
                    "power_ci_low": h.power.ci_low,
                    "power_ci_high": h.power.ci_high,
                    "mde": h.mde,
                    "mde_low": h.mde_low,
                    "mde_high": h.mde_high,
                    "simulations": self.simulations,
                }
            )
        return pd.DataFrame(rows)

    def summary(self) -> str:
        a = self.assumptions
        lines = [
            f"validate-comparison on {self.design}: {self.simulations} simulations per "
            f"scenario; alpha {self.alpha:g}; bootstrap {self.bootstrap}; "
            f"{len(self.strata)} stratum/strata of held-out heads; {self.seconds:.0f} s",
            f"  assumptions: effect {a.effect:g}, ICC {a.icc:g}, residual SD "
            f"{a.residual_sd:g}, head share {a.native_head_share:g}, truth in bracket "
            f"Beta{a.truth_position}, widths in {a.width_bins} midpoint bins per eps",
            "  features: "
            + ", ".join(f"{b} {n}" for b, n in self.features.items())
            + f" ({self.features_note})",
        ]
        if self.fit is not None:
            lines.append(
                f"  fitted to {self.fit['source']} ({self.fit['n_heads']} heads, "
                f"{self.fit['n_cells']} cells): layer share {a.layer_share:.3f}, "
                f"{len(a.strata_effects)} checkpoint offsets / scales, widths per checkpoint"
            )
        sim, ref = self.simulated_m0_loss, self.reference_m0_loss
        lines.append(
            "  M0 held-out loss: simulated "
            + ("n/a" if sim is None else f"{sim:.4g}")
            + ", reference "
            + ("not known" if ref is None else f"{ref:.4g}")
        )
        lines += ["  " + h.summary(self.alpha) for h in self.hypotheses]
        lines += [f"  {k}: not simulated: {v}" for k, v in self.skipped.items()]
        lines += [f"  WARNING: {w}" for w in self.warnings]
        return "\n".join(lines)


@dataclass(frozen=True)
class FittedAssumptions:
    """Simulator parameters estimated on training (or pilot) cells, and what they came from.

    Attributes
    ----------
    source : str
        What the parameters were fitted to (e.g. ``training heads of DESIGN``).
    n_heads, n_cells : int
    residual_sd : float
        Square root of ``V``, the variance of the true log2 rank that the base model's
        covariates leave (layer + head + cell components, the cell part net of where
        the truth lies in its bracket).
    icc : float
        Between-head share of ``V`` (layer and head components).
    layer_share : float
        Between-layer share of ``V`` (part of ``icc``); 0 when the cells hold one layer.
    native_head_share : float
        Median, over the signal block's columns, of their between-head variance share
        after the baseline (NaN when the table has no such block).
    strata : tuple of (label, heads, cells, offset, scale, mean_width)
        Per checkpoint: its offset (checkpoint coefficient, head-weighted mean 0), its
        residual scale relative to the pooled one (cell-weighted mean square 1) and its
        mean bracket width (log2).
    components : tuple of (name, variance)
        ``layer``, ``head``, ``cell`` (of the midpoints), ``bracket`` (subtracted from
        ``cell``: the variance of ``(1/2 - P) w``, P the truth's position, w the width).
    reference_m0_loss : float
        The base model's held-out loss by a cross-fit over the heads (NaN when not
        computed).
    reference_method : str
    reference_by_stratum : tuple of (label, loss)
        The reference per checkpoint stratum (what :mod:`analysis.power.calibrate`
        fits each checkpoint's scale to).
    method : str
    notes : tuple of str
    widths : StratumWidths
        Each checkpoint's bracket widths (not in :meth:`to_dict`).
    residual_kurtosis : float
        Excess kurtosis of the pooled fit's residual (the M0 residual; NaN when not
        computed; not in :meth:`to_dict`, so a method-2 power key is unchanged): the
        heavy-tail scenario's df (:mod:`analysis.power.tails`).

    Examples
    --------
    Made by :func:`fit_assumptions`; :meth:`assumptions` gives the simulator's record:

    >>> from analysis.power.result import FittedAssumptions
    >>> fit = FittedAssumptions(
    ...     source="example", n_heads=40, n_cells=360, residual_sd=0.25, icc=0.7,
    ...     layer_share=0.1, native_head_share=0.8,
    ...     strata=(("org/a", 40, 360, 0.0, 1.0, 0.6),), components=(),
    ...     reference_m0_loss=0.012, reference_method="5-fold cross-fit", method="MixedLM",
    ... )
    >>> a = fit.assumptions()
    >>> a.residual_sd, a.icc, a.layer_share, a.native_head_share, a.strata_effects
    (0.25, 0.7, 0.1, 0.8, (('org/a', 0.0, 1.0),))
    """

    source: str
    n_heads: int
    n_cells: int
    residual_sd: float
    icc: float
    layer_share: float
    native_head_share: float
    strata: tuple[tuple[str, int, int, float, float, float], ...]
    components: tuple[tuple[str, float], ...]
    reference_m0_loss: float
    reference_method: str
    method: str
    notes: tuple[str, ...] = ()
    widths: StratumWidths | None = field(default=None, repr=False, compare=False)
    reference_by_stratum: tuple[tuple[str, float], ...] = ()
    residual_kurtosis: float = float("nan")

    def assumptions(self, base: PowerAssumptions | None = None) -> PowerAssumptions:
        """``base`` (default :class:`PowerAssumptions`) with the fitted values."""
        base = base if base is not None else PowerAssumptions()
        head_share = (
            self.native_head_share
            if np.isfinite(self.native_head_share)
            else base.native_head_share
        )
        return replace(
            base,
            residual_sd=float(self.residual_sd),
            icc=float(min(self.icc, 0.999)),
            layer_share=float(min(self.layer_share, self.icc, 0.999)),
            native_head_share=float(head_share),
            strata_effects=tuple((s[0], s[3], s[4]) for s in self.strata),
            fitted=self.source,
        )

    def to_dict(self) -> dict:
        """Plain JSON types (the widths are summarized by each stratum's mean width)."""
        return {
            "source": self.source,
            "n_heads": self.n_heads,
            "n_cells": self.n_cells,
            "residual_sd": self.residual_sd,
            "icc": self.icc,
            "layer_share": self.layer_share,
            "native_head_share": None
            if not np.isfinite(self.native_head_share)
            else self.native_head_share,
            "strata": [
                dict(
                    zip(
                        ("stratum", "heads", "cells", "offset", "scale", "mean_width"),
                        s,
                        strict=True,
                    )
                )
                for s in self.strata
            ],
            "components": dict(self.components),
            "reference_m0_loss": None
            if not np.isfinite(self.reference_m0_loss)
            else self.reference_m0_loss,
            "reference_method": self.reference_method,
            "reference_by_stratum": dict(self.reference_by_stratum),
            "method": self.method,
            "notes": list(self.notes),
        }

    def summary(self) -> str:
        """A few lines for people."""
        lines = [
            f"simulator fitted to {self.source}: {self.n_heads} heads, {self.n_cells} cells",
            f"  residual SD {self.residual_sd:.3f} (log2), ICC {self.icc:.3f} "
            f"(layer share {self.layer_share:.3f}), native head share "
            + (
                f"{self.native_head_share:.3f}"
                if np.isfinite(self.native_head_share)
                else "not fitted"
            ),
            f"  reference M0 held-out loss {self.reference_m0_loss:.4g} ({self.reference_method})",
        ]
        for label, h, c, off, sc, w in self.strata:
            lines.append(
                f"  {label}: {h} heads, {c} cells, offset {off:+.3f}, residual scale "
                f"{sc:.2f}, mean bracket width {w:.2f}"
            )
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)
