"""Simulated studies of a design, decided by the pre-specified comparison.

Simulated studies have a design's sizes (heads and held-out heads per checkpoint, cells per
head, B, alpha, Holm family; :func:`sizes_from_design`), its blocks' covariate counts (from
the lock or, in a study, after the collinearity screen on training cells), heads with a
random effect, and interval outcomes whose widths are resampled from real bracket widths
(never from a study's held-out heads) conditionally on eps and on where the cell's rank
lies. The full pipeline (calibration, standardization, collinearity screen, interval
fits, cluster bootstrap within checkpoints, Holm, decision rule) runs on each through
:func:`simulated_comparison`, called exactly as the confirmatory run calls it
(``compare_nested(table, models, **design.comparison_kwargs())``) with the design's
models, Holm family, estimator, primary metric, B, alpha and CI level, and with the
simulated blocks' covariate facts (:data:`SIMULATED_COVARIATES`) where the real run has
the descriptor registry's. What the design does not fix is one frozen
:class:`PowerAssumptions`. Error rates at both nulls, power and the minimum detectable
effect are in :mod:`analysis.prereg.validate`; power curves and the closed-form
approximation in :mod:`analysis.prereg.power_curve`.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from analysis.compare import BOOTSTRAPS, ComparisonResult, compare_nested
from analysis.executor import TaskPool, check_executor, task_pool
from analysis.prereg.design import load_design
from analysis.validation import ParameterError, check_int, check_random_state

__all__ = [
    "BASELINE_STRUCTURAL",
    "DECISION_COLUMNS",
    "DEFAULT_WIDTHS",
    "SIMULATED_BLOCKS",
    "SIMULATED_COVARIATES",
    "PowerAssumptions",
    "StudySizes",
    "WidthModel",
    "load_widths",
    "signal_block",
    "simulate_study",
    "simulated_comparison",
    "simulated_decisions",
    "sizes_from_design",
]

#: Where ``attnrank reference-widths`` writes MiniLM bracket widths (relative to a study root).
DEFAULT_WIDTHS = Path("data/reference/minilm_bracket_widths.csv")

MODELS = {
    "M0": ("baseline",),
    "M1": ("baseline", "native"),
    "M2": ("baseline", "intrinsic"),
    "M3": ("baseline", "native", "intrinsic"),
}
FAMILY = (("M0", "M1"), ("M0", "M2"), ("M0", "M3"))
LOG_COLUMNS = ("baseline__n", "baseline__temperature", "baseline__eps", "baseline__stable_rank")
#: Blocks that :func:`simulate_study` writes; a design's family may use only these.
SIMULATED_BLOCKS: tuple[str, ...] = ("baseline", "native", "intrinsic")
#: Baseline columns the simulated outcome is a function of (n, temperature, eps, entropy,
#: stable rank); a design's further baseline covariates are written as noisy proxies.
BASELINE_STRUCTURAL = 5
#: What the comparison is told about the simulated blocks, as the descriptor registry
#: tells it about the real ones: log-scale columns, the blocks' order in the collinearity
#: screen (the registry's), the calibrated block (the registry calibrates ``baseline``)
#: and no diagnostic columns (the simulation writes none).
SIMULATED_COVARIATES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "log_columns": LOG_COLUMNS,
        "block_order": SIMULATED_BLOCKS,
        "calibrate_blocks": ("baseline",),
        "diagnostic_columns": (),
    }
)
#: Columns of :func:`simulated_decisions`: the pair's primary-metric row of each study.
DECISION_COLUMNS: tuple[str, ...] = (
    "effect",
    "ci_low",
    "ci_high",
    "p_value",
    "p_holm",
    "adds_information",
)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float, np.floating, np.integer)) and not isinstance(v, bool)


@dataclass(frozen=True)
class PowerAssumptions:
    """What the simulation assumes that the design does not fix (validated by name).

    Attributes
    ----------
    effect : float
        The alternative: share of the variance M0 leaves that the signal block explains,
        in (0, 1) (default 0.10).
    icc : float
        Between-head share of the residual variance, in [0, 1) (0.5).
    residual_sd : float
        SD (log2 units) of what the true baseline function leaves, > 0 (0.75).
    native_head_share : float
        Share of each simulated native / intrinsic feature's variance that is between
        heads, in [0, 1] (0.5; measured on MiniLM training heads: about 0.77).
    native_features, intrinsic_features, baseline_features : int or None
        Column counts of the simulated blocks; None (default) takes the design's
        (:attr:`StudySizes.features`).
    truth_position : (float, float)
        ``(a, b)`` of the Beta law of where the true log2 rank lies inside its bracket,
        0 = the lower end, 1 = the upper end. Default (2, 1): density ``2 u``, mean 2/3,
        skewed to the upper end, as the engine's near misses suggest (their certified
        upper errors sit just above eps, their lower margins 10-20% short:
        docs/results/engine.md); (1, 1) is uniform.
    width_bins : int
        Widths are resampled per eps within this many quantile bins of the bracket
        midpoint (default 4; 1 = per eps only, independent of the outcome).
    """

    effect: float = 0.10
    icc: float = 0.5
    residual_sd: float = 0.75
    native_head_share: float = 0.5
    native_features: int | None = None
    intrinsic_features: int | None = None
    baseline_features: int | None = None
    truth_position: tuple[float, float] = (2.0, 1.0)
    width_bins: int = 4

    def __post_init__(self) -> None:
        if not (_number(self.effect) and 0 < self.effect < 1):
            raise ParameterError("effect", "a share in (0, 1)", self.effect)
        if not (_number(self.icc) and 0 <= self.icc < 1):
            raise ParameterError("icc", "a number in [0, 1)", self.icc)
        if not (_number(self.residual_sd) and np.isfinite(self.residual_sd)):
            raise ParameterError("residual_sd", "a finite number > 0", self.residual_sd)
        if not self.residual_sd > 0:
            raise ParameterError("residual_sd", "a finite number > 0", self.residual_sd)
        if not (_number(self.native_head_share) and 0 <= self.native_head_share <= 1):
            raise ParameterError("native_head_share", "a share in [0, 1]", self.native_head_share)
        for name in ("native_features", "intrinsic_features", "baseline_features"):
            v = getattr(self, name)
            if v is not None:
                check_int(name, v, minimum=1)
        tp = self.truth_position
        if not (
            isinstance(tp, (tuple, list))
            and len(tp) == 2
            and all(_number(x) and np.isfinite(x) and x > 0 for x in tp)
        ):
            raise ParameterError("truth_position", "Beta parameters (a, b), both > 0", tp)
        object.__setattr__(self, "truth_position", (float(tp[0]), float(tp[1])))
        check_int("width_bins", self.width_bins, minimum=1)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["truth_position"] = list(self.truth_position)
        return out


@dataclass(frozen=True)
class StudySizes:
    """The sizes of a study that the simulation copies.

    Attributes
    ----------
    name : str
        Where the sizes came from (a design path, or a description).
    n_heads, n_held_out : int
    lengths, temperatures, eps : tuple of float
    inputs_per_length : int
    n_boot : int
    alpha : float
    ci_level : float
    models : tuple of (name, blocks)
        The models of the Holm family (blocks among :data:`SIMULATED_BLOCKS`).
    family : tuple of (base, rich)
        The Holm family.
    confirmatory : (base, rich)
        The design's confirmatory pair (its rich model adds a simulated block).
    estimator, primary_metric : str
    bootstrap : {"cluster", "studentized"}
        The design's ``inference.bootstrap``: the percentile cluster bootstrap, or its
        studentized (bootstrap-t) form.
    strata : tuple of (label, heads, held_out)
        The held-out draw's strata (a design's checkpoints): heads and held-out heads of
        each; default one stratum ``("all", n_heads, n_held_out)``. The simulation draws
        the held-out heads per stratum and the bootstrap resamples within strata.
    features : tuple of (block, count)
        Covariate columns per block. The default (5 baseline, 1 native, 1 intrinsic) is
        the smallest simulated study, not a design's; :func:`sizes_from_design` reads a
        design's counts.
    features_note : str
        Where the counts come from.
    hypotheses : tuple of (id, kind, base, rich)
        The design's hypotheses (default: one per family pair).
    """

    name: str = "simulated study (default sizes, not a design)"
    n_heads: int = 72
    n_held_out: int = 18
    lengths: tuple[float, ...] = (64, 128)
    temperatures: tuple[float, ...] = (0.5, 1.0, 2.0)
    eps: tuple[float, ...] = (0.05, 0.1, 0.2)
    inputs_per_length: int = 1
    n_boot: int = 2000
    alpha: float = 0.05
    ci_level: float = 0.95
    models: tuple[tuple[str, tuple[str, ...]], ...] = tuple(MODELS.items())
    family: tuple[tuple[str, str], ...] = FAMILY
    confirmatory: tuple[str, str] = ("M0", "M1")
    estimator: str = "interval"
    primary_metric: str = "interval_sq_loss"
    bootstrap: str = "cluster"
    strata: tuple[tuple[str, int, int], ...] = ()
    features: tuple[tuple[str, int], ...] = (
        ("baseline", BASELINE_STRUCTURAL),
        ("native", 1),
        ("intrinsic", 1),
    )
    features_note: str = "the smallest simulated blocks (not a design's covariates)"
    hypotheses: tuple[tuple[str, str, str, str], ...] = ()

    def __post_init__(self) -> None:
        models = dict(self.models)
        used = {m for pair in self.family for m in pair}
        for m in sorted(used):
            if m not in models:
                raise ParameterError("models", "every model of the Holm family", m)
            extra = set(models[m]) - set(SIMULATED_BLOCKS)
            if extra:
                raise ParameterError(
                    f"models.{m}",
                    "blocks the simulation writes (" + ", ".join(SIMULATED_BLOCKS) + ")",
                    sorted(extra),
                )
        if tuple(self.confirmatory) not in {tuple(p) for p in self.family}:
            raise ParameterError("confirmatory", "a pair of the Holm family", self.confirmatory)
        signal_block(self, tuple(self.confirmatory), name="confirmatory")
        if self.bootstrap not in BOOTSTRAPS:
            raise ParameterError("bootstrap", " or ".join(BOOTSTRAPS), self.bootstrap)
        if not 0 < self.n_held_out < self.n_heads:
            raise ParameterError(
                "n_held_out", f"an integer in (0, {self.n_heads})", self.n_held_out
            )
        if not self.strata:
            object.__setattr__(self, "strata", (("all", self.n_heads, self.n_held_out),))
        strata = tuple((str(s), int(h), int(k)) for s, h, k in self.strata)
        if (
            sum(h for _, h, _ in strata) != self.n_heads
            or sum(k for _, _, k in strata) != self.n_held_out
            or any(not 0 <= k <= h for _, h, k in strata)
        ):
            raise ParameterError(
                "strata",
                f"(label, heads, held_out) summing to {self.n_heads} heads and "
                f"{self.n_held_out} held out",
                self.strata,
            )
        object.__setattr__(self, "strata", strata)
        feats = dict(self.features)
        for b in SIMULATED_BLOCKS:
            check_int(f"features.{b}", feats.get(b, 0), minimum=1)
        if not self.hypotheses:
            hyps = tuple(
                (f"{b}<{r}", "confirmatory" if (b, r) == tuple(self.confirmatory) else "secondary")
                + (b, r)
                for b, r in self.family
            )
            object.__setattr__(self, "hypotheses", hyps)

    @property
    def cells_per_head(self) -> int:
        return self.inputs_per_length * len(self.lengths) * len(self.temperatures) * len(self.eps)

    def feature_count(self, block: str, assumptions: PowerAssumptions | None = None) -> int:
        """Columns of a simulated block: the assumption's override, else the design's."""
        override = getattr(assumptions, f"{block}_features", None) if assumptions else None
        n = int(override if override is not None else dict(self.features)[block])
        return max(n, BASELINE_STRUCTURAL) if block == "baseline" else n

    def comparison_kwargs(self) -> dict:
        """What the design fixes for ``compare_nested`` (as ``Design.comparison_kwargs``).

        Sensitivity pairs and secondary metrics are left out: they are outside the Holm
        family and the decision uses the primary metric alone, so they cannot change it.
        """
        return {
            "family": [tuple(p) for p in self.family],
            "estimator": self.estimator,
            "metrics": (self.primary_metric,),
            "primary_metric": self.primary_metric,
            "n_boot": self.n_boot,
            "alpha": self.alpha,
            "ci_level": self.ci_level,
            "bootstrap": self.bootstrap,
        }


def signal_block(sizes: StudySizes, pair: tuple[str, str], *, name: str = "pair") -> str:
    """The block that carries the simulated signal for ``pair``: the first simulated block
    (in :data:`SIMULATED_BLOCKS` order) that the rich model adds to the base model.

    Raises
    ------
    ParameterError
        Naming ``name`` when the rich model adds no simulated block.
    """
    models = dict(sizes.models)
    base, rich = pair
    if base not in models or rich not in models:
        raise ParameterError(name, "a pair of the simulated models", pair)
    added = [b for b in SIMULATED_BLOCKS[1:] if b in models[rich] and b not in models[base]]
    if not added:
        raise ParameterError(
            name, "a pair whose rich model adds a simulated block (native, intrinsic)", pair
        )
    return added[0]


def sizes_from_design(
    path: str | Path,
    *,
    features: Mapping[str, Sequence[str] | int] | None = None,
    features_note: str | None = None,
) -> StudySizes:
    """The simulation sizes of a design file.

    Parameters
    ----------
    path : str or Path
    features : mapping, keyword-only
        Block -> its covariate names (or their number), e.g. after the collinearity
        screen on a study's training cells (``analysis.study.screened_features``).
        Default: the names the design's lock records for each block.
    features_note : str, keyword-only
        Where ``features`` come from (recorded in the result).

    Returns
    -------
    StudySizes
        Heads and held-out heads per checkpoint (the held-out list, or the draw's
        ``round(fraction * n)`` per checkpoint when the list is empty), grid, and what the
        confirmatory run takes from the design (``Design.comparison_kwargs``): the models
        of the Holm family, the family, estimator, primary metric, B, alpha, CI level; the
        confirmatory pair is the design's ``kind = "confirmatory"`` hypothesis (else the
        family's first pair).

    Raises
    ------
    ParameterError
        Naming ``features`` when no counts are given and the design has no lock that
        records its blocks' covariate names.
    """
    from analysis.prereg.lock import lock_path

    design = load_design(path, require_held_out=False)
    data = design.data
    pop = design.population()
    frac = float(data["held_out"]["fraction"])
    held = set(data["held_out"].get("heads") or [])
    by_ck: dict[str, list[str]] = {}
    for hid in pop:
        by_ck.setdefault(hid.rsplit(":", 2)[0], []).append(hid)
    strata = tuple(
        (
            ck,
            len(members),
            sum(h in held for h in members) if held else round(frac * len(members)),
        )
        for ck, members in sorted(by_ck.items())
    )
    s = data["sampling"]
    lengths = None
    for src in s["sources"]:
        if src.get("kind") == "checkpoint":
            lengths = src.get("lengths", s.get("lengths"))
            break
    kw = design.comparison_kwargs()
    family = tuple(tuple(p) for p in kw["family"])
    used = list(dict.fromkeys(m for p in family for m in p))
    conf = [tuple(h["pair"]) for h in data.get("hypotheses", []) if h.get("kind") == "confirmatory"]
    hyps = tuple(
        (str(h["id"]), str(h["kind"]), str(h["pair"][0]), str(h["pair"][1]))
        for h in data.get("hypotheses", [])
    )
    if features is None:
        lp = lock_path(path)
        blocks = {}
        if lp.is_file():
            import json

            blocks = json.loads(lp.read_text(encoding="utf-8")).get("blocks") or {}
        if not blocks:
            raise ParameterError(
                "features",
                "each block's covariate names (from the design's lock, or given)",
                str(lp),
            )
        features = {b: v["covariates"] for b, v in blocks.items()}
        features_note = features_note or (
            "the lock's covariate names (no collinearity screen: no study store with "
            "descriptors was read)"
        )
    counts = {b: (v if isinstance(v, int) else len(v)) for b, v in features.items()}
    used_blocks = {b for m in used for b in design.models[m]}
    for b in sorted(used_blocks & set(SIMULATED_BLOCKS)):
        if b not in counts:
            raise ParameterError("features", f"covariates of block {b}", sorted(counts))
    return StudySizes(
        name=str(path),
        n_heads=len(pop),
        n_held_out=sum(k for _, _, k in strata),
        lengths=tuple(lengths),
        temperatures=tuple(s["temperatures"]),
        eps=tuple(s["eps"]),
        inputs_per_length=int(s["inputs"]["per_length"]),
        n_boot=int(kw["n_boot"]),
        alpha=float(kw["alpha"]),
        ci_level=float(kw["ci_level"]),
        models=tuple((m, tuple(design.models[m])) for m in used),
        family=family,
        confirmatory=conf[0] if conf else family[0],
        estimator=str(kw["estimator"]),
        primary_metric=str(kw["primary_metric"]),
        bootstrap=str(kw["bootstrap"]),
        strata=strata,
        features=tuple((b, int(counts.get(b, 1))) for b in SIMULATED_BLOCKS),
        features_note=features_note or "given",
        hypotheses=hyps,
    )


def load_widths(path: str | Path) -> pd.DataFrame:
    """Read integer brackets (``eps``, ``lower``, ``upper``); add ``width`` and ``midpoint``
    (log2).

    Raises
    ------
    FileNotFoundError
        When the file is missing: widths are never invented.
    ParameterError
        On missing columns or brackets that are not ``1 <= lower <= upper`` integers.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"bracket widths file not found: {path}. It holds benchmark MiniLM brackets "
            "(columns eps, lower, upper) written by `attnrank reference-widths`; pass "
            "--widths FILE. Widths are never invented."
        )
    df = pd.read_csv(path)
    for c in ("eps", "lower", "upper"):
        if c not in df.columns:
            raise ParameterError("widths", f"a CSV with a column {c}", list(df.columns))
    lo = df["lower"].to_numpy(float)
    up = df["upper"].to_numpy(float)
    if (
        len(df) == 0
        or np.any(lo != np.round(lo))
        or np.any(up != np.round(up))
        or np.any(lo < 1)
        or np.any(up < lo)
    ):
        raise ParameterError("widths", "integer brackets with 1 <= lower <= upper", str(path))
    out = df.loc[:, ["eps", "lower", "upper"]].copy()
    out["width"] = np.log2(up) - np.log2(lo)
    out["midpoint"] = 0.5 * (np.log2(up) + np.log2(lo))
    return out


@dataclass(frozen=True)
class WidthModel:
    """Reference widths per eps, split into quantile bins of their bracket midpoints.

    Build it with :meth:`from_frame`; :meth:`draw` resamples a width for each simulated
    cell from the bin of its eps that matches the cell's position in the study.

    Attributes
    ----------
    bins : tuple of (eps, tuple of width arrays)
        Per eps, the reference widths of each midpoint bin, lowest midpoints first.
    """

    bins: tuple[tuple[float, tuple[np.ndarray, ...]], ...] = field(repr=False)

    @classmethod
    def from_frame(
        cls, widths: pd.DataFrame, eps: Sequence[float], *, n_bins: int = 4
    ) -> WidthModel:
        """Split each eps's reference rows (sorted by midpoint) into ``n_bins`` bins of
        equal size (``numpy.array_split``; fewer when an eps has fewer rows)."""
        n_bins = check_int("width_bins", n_bins, minimum=1)
        if "midpoint" not in widths.columns:
            widths = widths.assign(
                midpoint=0.5 * (np.log2(widths["lower"]) + np.log2(widths["upper"]))
            )
        out = []
        for e in eps:
            sel = np.isclose(widths["eps"].to_numpy(float), e)
            if not sel.any():
                raise ParameterError(
                    "eps", f"values present in the widths file ({sorted(set(widths['eps']))})", e
                )
            g = widths.loc[sel].sort_values(["midpoint", "width"], kind="stable")
            w = g["width"].to_numpy(float)
            parts = tuple(p for p in np.array_split(w, min(n_bins, w.size)) if p.size)
            out.append((float(e), parts))
        return cls(bins=tuple(out))

    def draw(self, eps: np.ndarray, y: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Widths for cells at ``eps`` with true values ``y``, from uniforms ``u``.

        Notes
        -----
        Within each eps, a cell's quantile ``q = rank(y) / n`` among the study's cells at
        that eps picks the bin ``floor(q * n_bins)``: the reference midpoints stand in for
        the unknown true ranks, and quantiles make the match free of the simulated
        outcome's scale. ``u`` (one uniform per cell) picks a width in the bin, so the
        random numbers used do not depend on the outcome (common random numbers across
        effect shares).
        """
        out = np.empty(eps.size)
        for val, parts in self.bins:
            sel = np.flatnonzero(np.isclose(eps, val))
            if sel.size == 0:
                continue
            k = len(parts)
            q = (np.argsort(np.argsort(y[sel], kind="stable"), kind="stable") + 0.5) / sel.size
            b = np.minimum((q * k).astype(int), k - 1)
            for j, ws in enumerate(parts):
                hit = sel[b == j]
                idx = np.minimum((u[hit] * ws.size).astype(int), ws.size - 1)
                out[hit] = ws[idx]
        return out


def _width_model(
    sizes: StudySizes, widths: pd.DataFrame | WidthModel, assumptions: PowerAssumptions
) -> WidthModel:
    if isinstance(widths, WidthModel):
        return widths
    if not isinstance(widths, pd.DataFrame):
        raise ParameterError("widths", "a DataFrame from load_widths or a WidthModel", widths)
    return WidthModel.from_frame(widths, sizes.eps, n_bins=assumptions.width_bins)


def simulate_study(
    sizes: StudySizes,
    widths: pd.DataFrame | WidthModel,
    *,
    share: float,
    assumptions: PowerAssumptions = PowerAssumptions(),
    signal: str = "native",
    random_state: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    """One simulated study as a tidy comparison table.

    Parameters
    ----------
    sizes : StudySizes
    widths : DataFrame from :func:`load_widths`, or a :class:`WidthModel`
    share : float, keyword-only
        Share of the variance M0 leaves that the signal block explains, in [0, 1)
        (0 = the simple null: no block carries information).
    assumptions : PowerAssumptions, keyword-only
    signal : {"native", "intrinsic"}, keyword-only
        The block that carries the signal (:func:`signal_block` of the tested pair).
    random_state : int, Generator or None, keyword-only

    Returns
    -------
    pandas.DataFrame
        ``cell_key``, ``cluster``, ``stratum``, ``held_out``, ``input_id``, ``length``,
        ``y_lower``, ``y_upper``, five baseline columns (``n``, ``temperature``,
        ``eps``, ``entropy``, ``stable_rank``) and ``baseline__p<j>`` proxies up to the
        design's baseline count, then the native (``native__x<j>``) and intrinsic
        (``intrinsic__z<j>``) columns, as many as the design's blocks have.

    Notes
    -----
    Cell c of head h: ``y* = f(baseline) + b w_c + u_h + e_c`` with an additive,
    monotone ``f`` of the baseline features, ``u_h ~ N(0, icc (1 - share) V)``,
    ``e_c ~ N(0, (1 - icc)(1 - share) V)``, ``V = residual_sd^2`` and
    ``b^2 = share V``, so the signal ``b w`` is ``share`` of the variance M0 leaves.
    ``w`` (unit variance, ``native_head_share`` of it between heads) is the part of the
    signal block's first column ``0.3 entropy + sqrt(0.91) w`` not shared with the
    baseline; the block's other columns, and every column of the other non-baseline
    block (column j correlated 0.5 with the signal block's column j mod its count), are
    noise with the same head structure. Extra baseline columns are noisy proxies
    ``0.6 entropy + 0.8 noise``.

    Held-out heads are drawn per stratum (``sizes.strata``, the design's checkpoints). The
    observed interval is ``[y* - P w_i, y* - P w_i + w_i]`` with ``P ~ Beta(a, b)``
    (``assumptions.truth_position``: where the truth lies, 0 = lower end) and ``w_i``
    resampled from the reference widths at the cell's eps within the bin of its rank
    (:meth:`WidthModel.draw`); width 0 gives a point. Every random number is drawn in a
    fixed order and amount that does not depend on ``share``, so one seed gives the same
    heads, noise, widths and positions at every share (common random numbers).
    """
    rng = check_random_state(random_state)
    if not (_number(share) and 0 <= share < 1):
        raise ParameterError("share", "a share in [0, 1)", share)
    if not isinstance(assumptions, PowerAssumptions):
        raise ParameterError("assumptions", "a PowerAssumptions", type(assumptions).__name__)
    if signal not in SIMULATED_BLOCKS[1:]:
        raise ParameterError("signal", "native or intrinsic", signal)
    wmodel = _width_model(sizes, widths, assumptions)
    H = sizes.n_heads
    grid = np.array(
        [
            (i, L, t, e)
            for i in range(sizes.inputs_per_length)
            for L in sizes.lengths
            for t in sizes.temperatures
            for e in sizes.eps
        ],
        dtype=float,
    )
    K = len(grid)
    n = H * K
    head = np.repeat(np.arange(H), K)
    inp, L, t, e = (np.tile(grid[:, j], H) for j in range(4))

    # held-out heads per stratum, drawn first (as the design draws per checkpoint)
    held_heads, labels, start = [], np.empty(H, dtype=object), 0
    for label, n_s, k_s in sizes.strata:
        labels[start : start + n_s] = label
        held_heads.extend(start + rng.choice(n_s, size=k_s, replace=False))
        start += n_s
    held = np.isin(head, np.asarray(held_heads, dtype=int))

    s_share = assumptions.native_head_share

    def mixed(size_h: int = 1) -> np.ndarray:
        a = rng.standard_normal((H, size_h))[head]
        b = rng.standard_normal((n, size_h))
        return np.sqrt(s_share) * a + np.sqrt(1 - s_share) * b

    zL = (np.log(L) - np.log(L).mean()) / (np.log(L).std() or 1.0)
    ze = (np.log(e) - np.log(e).mean()) / (np.log(e).std() or 1.0)
    zt = (np.log(t) - np.log(t).mean()) / (np.log(t).std() or 1.0)
    g = rng.standard_normal(H)[head]
    entropy = 0.7 * g + 0.5 * zt + 0.3 * zL + 0.4 * rng.standard_normal(n)
    stable_rank = np.exp(0.5 * entropy + 0.3 * rng.standard_normal(n) + 1.0)
    f = 2.5 + 0.45 * zL - 0.35 * ze + 0.5 * np.tanh(entropy) + 0.25 * entropy
    ent_z = entropy / entropy.std()

    w = mixed(1)[:, 0]
    k_base = sizes.feature_count("baseline", assumptions) - BASELINE_STRUCTURAL
    k = {b: sizes.feature_count(b, assumptions) for b in SIMULATED_BLOCKS[1:]}
    raw = {b: mixed(k[b]) for b in SIMULATED_BLOCKS[1:]}
    proxies = 0.6 * ent_z[:, None] + 0.8 * mixed(k_base) if k_base else np.zeros((n, 0))
    blocks = {signal: raw[signal].copy()}
    blocks[signal][:, 0] = 0.3 * ent_z + np.sqrt(0.91) * w
    for b in SIMULATED_BLOCKS[1:]:
        if b != signal:
            partner = blocks[signal][:, np.arange(k[b]) % k[signal]]
            blocks[b] = 0.5 * partner + np.sqrt(0.75) * raw[b]

    V = assumptions.residual_sd**2
    icc = assumptions.icc
    u = rng.standard_normal(H)[head] * np.sqrt(icc * (1 - share) * V)
    noise = rng.standard_normal(n) * np.sqrt((1 - icc) * (1 - share) * V)
    y = f + np.sqrt(share * V) * w + u + noise

    u_width = rng.uniform(size=n)
    position = rng.beta(*assumptions.truth_position, size=n)
    width = wmodel.draw(e, y, u_width)
    lower = y - position * width
    upper = lower + width
    point = width == 0
    lower[point] = upper[point] = y[point]

    cols = {
        "cell_key": [f"sim:{h}:{c}" for h in range(H) for c in range(K)],
        "cluster": [f"sim:{h}" for h in head],
        "stratum": labels[head].astype(str),
        "held_out": held,
        "input_id": inp.astype(int),
        "length": L.astype(int),
        "y_lower": lower,
        "y_upper": upper,
        "baseline__n": L,
        "baseline__temperature": t,
        "baseline__eps": e,
        "baseline__entropy": entropy,
        "baseline__stable_rank": stable_rank,
    }
    cols.update({f"baseline__p{j}": proxies[:, j] for j in range(k_base)})
    cols.update({f"native__x{j}": blocks["native"][:, j] for j in range(k["native"])})
    cols.update({f"intrinsic__z{j}": blocks["intrinsic"][:, j] for j in range(k["intrinsic"])})
    return pd.DataFrame(cols)


def simulated_comparison(
    sizes: StudySizes,
    table: pd.DataFrame,
    *,
    random_state: int | np.random.Generator | None = None,
) -> ComparisonResult:
    """Run the pre-specified comparison on one simulated table, as the confirmatory run.

    Parameters
    ----------
    sizes : StudySizes
        Its models and :meth:`StudySizes.comparison_kwargs` (the design's settings).
    table : pandas.DataFrame
        From :func:`simulate_study` (its ``stratum`` column makes the bootstrap resample
        within the design's checkpoints, as the study's comparison does).
    random_state : int, Generator or None, keyword-only
        Seeds the bootstrap.

    Returns
    -------
    ComparisonResult
        ``compare_nested(table, dict(sizes.models), random_state=random_state,
        **sizes.comparison_kwargs(), **SIMULATED_COVARIATES)``.
    """
    return compare_nested(
        table,
        dict(sizes.models),
        random_state=random_state,
        **sizes.comparison_kwargs(),
        **SIMULATED_COVARIATES,
    )


def one_study(
    sizes: StudySizes,
    widths: WidthModel,
    share: float,
    assumptions: PowerAssumptions,
    pair: tuple[str, str],
    seed: np.random.SeedSequence,
) -> dict:
    """Simulate one study from ``seed``, decide it, return the pair's primary-metric row.

    The study's data come from the child 0 of ``seed``, the bootstrap from child 1, so a
    study's data are the same at every share (common random numbers). The children are
    built from ``seed``'s entropy and spawn key, not with ``seed.spawn`` (which advances
    ``seed`` and would give other children on a second call in the same process).
    """
    data_seed, boot_seed = (
        np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, i)) for i in (0, 1)
    )
    table = simulate_study(
        sizes,
        widths,
        share=share,
        assumptions=assumptions,
        signal=signal_block(sizes, pair),
        random_state=np.random.default_rng(data_seed),
    )
    res = simulated_comparison(sizes, table, random_state=np.random.default_rng(boot_seed))
    f = res.frame
    base, rich = pair
    r = f[(f.base_model == base) & (f.rich_model == rich) & (f.metric == sizes.primary_metric)]
    r = r.iloc[0]
    return {
        "effect": float(r.effect),
        "ci_low": float(r.ci_low),
        "ci_high": float(r.ci_high),
        "p_value": float(r.p_value),
        "p_holm": float(r.p_holm),
        "adds_information": bool(r.adds_information),
    }


def seed_children(random_state: int | np.random.Generator | None, n: int) -> list:
    """``n`` independent child ``SeedSequence`` objects of ``random_state``."""
    rng = check_random_state(random_state)
    seq = getattr(rng.bit_generator, "seed_seq", None)
    if seq is None:  # a Generator without a SeedSequence: seed one from it
        seq = np.random.SeedSequence(int(rng.integers(2**63)))
    return list(seq.spawn(n))


def _worker_init() -> None:
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)  # one BLAS thread per process: workers, not threads, share cores


def _task(args: tuple) -> dict:
    return one_study(*args)


class StudyRunner:
    """Runs simulated studies in this process, in a pool of ``workers`` processes, or on
    the caller's ``executor`` (any :class:`concurrent.futures.Executor`, such as a dask
    cluster's from :func:`analysis.executor.open_executor`; ``workers`` must then be 1).

    Results do not depend on either: each study draws from its own seed. Use as a
    context manager (a pool of its own is shut down on exit; an executor is the caller's).
    """

    def __init__(self, workers: int = 1, *, executor: cf.Executor | None = None):
        self.workers = check_executor(executor, workers)
        self.executor = executor
        self._stack: contextlib.ExitStack | None = None
        self._pool: TaskPool | None = None

    def __enter__(self) -> StudyRunner:
        self._stack = contextlib.ExitStack()
        self._pool = self._stack.enter_context(
            task_pool(self.executor, self.workers, initializer=_worker_init)
        )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._stack is not None:
            self._stack.close()
        self._stack = self._pool = None

    def run(
        self,
        tasks: Sequence[tuple],
        progress: Callable[[int], None] | None = None,
    ) -> list[dict]:
        """``one_study(*task)`` for each task, in order; ``progress(1)`` after each."""
        if self._pool is None:
            out = []
            for t in tasks:
                out.append(_task(t))
                if progress is not None:
                    progress(1)
            return out
        results: list[dict | None] = [None] * len(tasks)
        calls = ((i, (t,)) for i, t in enumerate(tasks))
        with contextlib.closing(self._pool.imap(_task, calls)) as done:
            for i, res in done:
                results[i] = res
                if progress is not None:
                    progress(1)
        return results


def simulated_decisions(
    sizes: StudySizes,
    widths: pd.DataFrame | WidthModel,
    *,
    share: float,
    simulations: int,
    assumptions: PowerAssumptions = PowerAssumptions(),
    pair: tuple[str, str] | None = None,
    random_state: int | np.random.Generator | None = None,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    executor: cf.Executor | None = None,
) -> pd.DataFrame:
    """Simulate ``simulations`` studies at one share and decide each.

    Parameters
    ----------
    sizes : StudySizes
    widths : DataFrame from :func:`load_widths`, or a :class:`WidthModel`
    share : float, keyword-only
        Share of the variance M0 leaves that the pair's signal block explains (0 = null).
    simulations : int, keyword-only
    assumptions : PowerAssumptions, keyword-only
    pair : (base, rich), keyword-only
        The pair whose decision is recorded (default: the confirmatory pair); the signal
        sits in the block its rich model adds (:func:`signal_block`).
    random_state : int, Generator or None, keyword-only
        Study k draws from the k-th of ``simulations`` child seeds of it, so studies are
        independent of each other and of ``workers``.
    workers : int, keyword-only
        Processes.
    progress : callable or None, keyword-only
        Called as ``progress(done, simulations)`` after each study.
    executor : concurrent.futures.Executor, optional, keyword-only
        Run the studies there instead of ``workers`` processes (:class:`StudyRunner`).

    Returns
    -------
    pandas.DataFrame
        One row per study with :data:`DECISION_COLUMNS`: the pair's primary-metric row of
        :func:`simulated_comparison`.
    """
    simulations = check_int("simulations", simulations, minimum=1)
    if not (_number(share) and 0 <= share < 1):
        raise ParameterError("share", "a share in [0, 1)", share)
    pair = tuple(pair or sizes.confirmatory)
    signal_block(sizes, pair)
    wmodel = _width_model(sizes, widths, assumptions)
    seeds = seed_children(random_state, simulations)
    done = [0]

    def step(k: int) -> None:
        done[0] += k
        if progress is not None:
            progress(done[0], simulations)

    with StudyRunner(workers, executor=executor) as runner:
        rows = runner.run([(sizes, wmodel, share, assumptions, pair, s) for s in seeds], step)
    return pd.DataFrame(rows, columns=list(DECISION_COLUMNS))
