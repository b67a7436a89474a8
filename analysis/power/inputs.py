"""What a simulated study copies of a design, and what it assumes beyond it.

:class:`StudySizes` holds a design's sizes as the simulation sees them (heads and held-out
heads per checkpoint, cells per head, B, alpha, Holm family, covariate counts;
:func:`sizes_from_design` reads them from a design file), :class:`PowerAssumptions` the
one frozen set of assumptions the design does not fix (:mod:`analysis.power.widths` holds
how bracket widths are resampled). :mod:`analysis.power.simulate` simulates and decides
studies from them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from analysis.compare import BOOTSTRAPS
from analysis.prereg.design import load_design
from analysis.validation import ParameterError, check_int

__all__ = [
    "BASELINE_STRUCTURAL",
    "SIMULATED_BLOCKS",
    "PowerAssumptions",
    "StudySizes",
    "signal_block",
    "sizes_from_design",
]

MODELS = {
    "M0": ("baseline",),
    "M1": ("baseline", "native"),
    "M2": ("baseline", "intrinsic"),
    "M3": ("baseline", "native", "intrinsic"),
}
FAMILY = (("M0", "M1"), ("M0", "M2"), ("M0", "M3"))
#: Blocks that :func:`simulate_study` writes; a design's family may use only these.
SIMULATED_BLOCKS: tuple[str, ...] = ("baseline", "native", "intrinsic")
#: Baseline columns the simulated outcome is a function of (n, temperature, eps, entropy,
#: stable rank); a design's further baseline covariates are written as noisy proxies.
BASELINE_STRUCTURAL = 5


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
        0 = the lower end, 1 = the upper end. Default (2, 1): density ``2 u``, skewed to
        the upper end (why: docs/prereg.md, paragraph "The simulated study"); (1, 1) is
        uniform.
    width_bins : int
        Widths are resampled per eps within this many quantile bins of the bracket
        midpoint (default 4; 1 = per eps only, independent of the outcome).
    layer_share : float
        Share of the residual variance that is common to the heads of one layer
        (a (checkpoint, layer) random effect), in [0, icc] (default 0: heads independent).
        It is part of ``icc``: the head effect keeps ``icc - layer_share``.
    strata_effects : tuple of (label, offset, scale)
        Family heterogeneity per checkpoint stratum: ``offset`` (log2 units) is added to
        the outcome of the stratum's cells and ``scale`` multiplies its residual (head,
        layer and cell parts); default () = offset 0, scale 1 everywhere. A stratum of
        the study that is not listed is refused.
    fitted : str or None
        What the assumptions were fitted to (:mod:`analysis.power.fit`), or None
        when they were set by hand.
    tail_df, covariate_shift, held_out_signal : float
        Method-3 scenarios (:mod:`analysis.power.tails`): Student-t head and cell
        residuals (None: normal), held-out covariates shifted by this many SDs (0), the
        signal's scale on held-out heads (1).

    Examples
    --------
    >>> from analysis.power.inputs import PowerAssumptions
    >>> assumptions = PowerAssumptions(effect=0.2, truth_position=[1, 1])
    >>> assumptions.effect, assumptions.icc, assumptions.truth_position
    (0.2, 0.5, (1.0, 1.0))
    >>> assumptions.to_dict()["truth_position"]  # plain JSON types
    [1.0, 1.0]
    >>> PowerAssumptions(effect=1.5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: effect: expected a share in (0, 1), got 1.5
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
    layer_share: float = 0.0
    strata_effects: tuple[tuple[str, float, float], ...] = ()
    fitted: str | None = None
    tail_df: float | None = None
    covariate_shift: float = 0.0
    held_out_signal: float = 1.0

    def __post_init__(self) -> None:
        from analysis.power.tails import check_scenario_fields

        check_scenario_fields(self.tail_df, self.covariate_shift, self.held_out_signal)
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
        if not (_number(self.layer_share) and 0 <= self.layer_share <= self.icc):
            raise ParameterError(
                "layer_share", f"a share in [0, icc = {self.icc}]", self.layer_share
            )
        effects = []
        for row in self.strata_effects:
            ok = (
                isinstance(row, (tuple, list))
                and len(row) == 3
                and all(_number(x) and np.isfinite(x) for x in row[1:])
                and row[2] > 0
            )
            if not ok:
                raise ParameterError(
                    "strata_effects", "(label, offset, scale > 0) per stratum", row
                )
            effects.append((str(row[0]), float(row[1]), float(row[2])))
        object.__setattr__(self, "strata_effects", tuple(effects))
        if self.fitted is not None and not isinstance(self.fitted, str):
            raise ParameterError("fitted", "a description or None", self.fitted)

    def stratum_effect(self, label: str) -> tuple[float, float]:
        """``(offset, scale)`` of one stratum: (0, 1) without strata effects.

        Raises
        ------
        ParameterError
            Named ``strata_effects`` when there are strata effects and ``label`` has none.
        """
        if not self.strata_effects:
            return 0.0, 1.0
        for name, offset, scale in self.strata_effects:
            if name == label:
                return offset, scale
        known = [r[0] for r in self.strata_effects]
        raise ParameterError("strata_effects", f"an entry for stratum {label!r}", known)

    def to_dict(self) -> dict:
        """Every field as plain JSON types; the fields added with the fitted simulator
        (``layer_share``, ``strata_effects``, ``fitted``) and the scenarios only when
        set, so that the record (and the stored power key) of hand-set assumptions is
        unchanged."""
        out = asdict(self)
        out["truth_position"] = list(self.truth_position)
        out["strata_effects"] = [list(r) for r in self.strata_effects]
        for name in ("layer_share", "strata_effects", "fitted", "tail_df", "covariate_shift"):
            if out[name] in (0.0, [], None):
                del out[name]
        if out["held_out_signal"] == 1.0:
            del out["held_out_signal"]
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
    resampling_unit : {"head", "kv_group", "checkpoint_layer"}
        The design's ``[inference] cluster``: the unit its bootstrap resamples (the
        simulated table then carries the column of that name).
    refit_replicates : int
        The design's ``[inference] refit_replicates`` (refit-bootstrap sensitivity; its
        unadjusted p is recorded per simulated study, it decides nothing).
    checkpoint_effects : bool
        The design's ``[inference] checkpoint_effects``.
    layers : tuple of (label, heads per layer)
        Per stratum, the heads of one layer (from the design's population); simulated
        heads are grouped into layers of that size, in order (default: one head per
        layer when not given).
    kv_heads : tuple of (label, heads per KV group)
        Per stratum, the heads that share one key under grouped-query attention
        (default 1: every head its own group).

    Examples
    --------
    The default sizes (not a design's): 72 heads, 18 held out, 2 lengths x 3
    temperatures x 3 eps cells per head:

    >>> from analysis.power.inputs import PowerAssumptions, StudySizes
    >>> sizes = StudySizes()
    >>> sizes.cells_per_head, sizes.strata, sizes.hypotheses[0]
    (18, (('all', 72, 18),), ('M0<M1', 'confirmatory', 'M0', 'M1'))
    >>> sizes.feature_count("native", PowerAssumptions(native_features=4))  # an override
    4
    >>> StudySizes(n_heads=10, n_held_out=10)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: n_held_out: expected an integer in (0, 10), got 10
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
    resampling_unit: str = "head"
    refit_replicates: int = 0
    checkpoint_effects: bool = False
    layers: tuple[tuple[str, int], ...] = ()
    kv_heads: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        from analysis.prereg.options import RESAMPLING_UNITS

        if self.resampling_unit not in RESAMPLING_UNITS:
            raise ParameterError(
                "resampling_unit", " or ".join(RESAMPLING_UNITS), self.resampling_unit
            )
        check_int("refit_replicates", self.refit_replicates, minimum=0)
        if not isinstance(self.checkpoint_effects, bool):
            raise ParameterError("checkpoint_effects", "true or false", self.checkpoint_effects)
        for name in ("layers", "kv_heads"):
            rows = tuple(
                (str(lab), int(check_int(name, k, minimum=1))) for lab, k in getattr(self, name)
            )
            object.__setattr__(self, name, rows)
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
        """The ``ComparisonSpec`` fields the design fixes (as ``Design.comparison_kwargs``).

        Sensitivity pairs and secondary metrics are left out: they are outside the Holm
        family and the decision uses the primary metric alone, so they cannot change it.
        """
        out = {
            "family": [tuple(p) for p in self.family],
            "estimator": self.estimator,
            "metrics": (self.primary_metric,),
            "primary_metric": self.primary_metric,
            "n_boot": self.n_boot,
            "alpha": self.alpha,
            "ci_level": self.ci_level,
            "bootstrap": self.bootstrap,
        }
        if self.resampling_unit != "head" or self.refit_replicates or self.checkpoint_effects:
            # sensitivities decide nothing and cost refits: the simulation leaves them out
            out.update(
                checkpoint_effects=self.checkpoint_effects,
                resampling_unit=self.resampling_unit,
                refit_replicates=self.refit_replicates,
                sensitivities=False,
            )
        return out

    def group_size(self, kind: str, label: str) -> int:
        """Heads per layer (``kind="layers"``) or per KV group (``"kv_heads"``) of a
        stratum (1 when not given)."""
        return dict(getattr(self, kind)).get(label, 1)

    def to_dict(self) -> dict:
        """Every field as plain JSON types (tuples become lists); the resampling fields
        only when they differ from their defaults, so that the record (and the stored
        power key) of a design with head resampling is unchanged (its layer sizes follow
        from the population, which the lock freezes)."""
        out = json.loads(json.dumps(asdict(self)))
        if self.resampling_unit == "head":
            # layer sizes follow from the design's population, which its lock freezes
            del out["layers"], out["kv_heads"]
        defaults = {"resampling_unit": "head", "refit_replicates": 0, "checkpoint_effects": False}
        for k, v in defaults.items():
            if out[k] == v:
                del out[k]
        return out


def signal_block(sizes: StudySizes, pair: tuple[str, str], *, name: str = "pair") -> str:
    """The block that carries the simulated signal for ``pair``: the first simulated block
    (in :data:`SIMULATED_BLOCKS` order) that the rich model adds to the base model.

    Raises
    ------
    ParameterError
        Naming ``name`` when the rich model adds no simulated block.

    Examples
    --------
    With the default models (M1 adds ``native``, M2 ``intrinsic``, M3 both):

    >>> from analysis.power.inputs import StudySizes, signal_block
    >>> signal_block(StudySizes(), ("M0", "M3")), signal_block(StudySizes(), ("M1", "M3"))
    ('native', 'intrinsic')
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

    Examples
    --------
    A small design (8 heads of one checkpoint, 2 held out) written to the current
    folder, with covariate counts given:

    >>> from analysis.power.inputs import sizes_from_design
    >>> from analysis.datasets import write_example_design
    >>> _ = write_example_design("toy.toml")
    >>> sizes = sizes_from_design("toy.toml", features={"baseline": 11, "native": 13})
    >>> sizes.n_heads, sizes.n_held_out, sizes.strata, sizes.n_boot
    (8, 2, (('org/tiny', 8, 2),), 199)
    >>> sizes.family, sizes.features  # intrinsic, unused, keeps one column
    ((('M0', 'M1'),), (('baseline', 11), ('native', 13), ('intrinsic', 1)))
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
        resampling_unit=str(kw["resampling_unit"]),
        refit_replicates=int(kw["refit_replicates"]),
        checkpoint_effects=bool(kw["checkpoint_effects"]),
        layers=_layer_sizes(pop),
    )


def _layer_sizes(population: Sequence[str]) -> tuple[tuple[str, int], ...]:
    """Per checkpoint, the largest number of heads in one of its layers (head ids
    ``checkpoint:layer:head``)."""
    per: dict[tuple[str, str], int] = {}
    for hid in population:
        ck, layer, _ = hid.rsplit(":", 2)
        per[(ck, layer)] = per.get((ck, layer), 0) + 1
    out: dict[str, int] = {}
    for (ck, _), k in per.items():
        out[ck] = max(out.get(ck, 0), k)
    return tuple(sorted(out.items()))
