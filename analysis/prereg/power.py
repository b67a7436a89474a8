"""Power analysis of the pre-specified comparison by simulation (false-positive rate, power).

Simulated studies have a design's sizes (heads, held-out heads, cells per head, B, alpha,
Holm family; :func:`sizes_from_design`), heads with a random effect, and interval
outcomes whose widths are resampled from real bracket widths (never from a study's
held-out heads). The full pipeline (calibration, standardization, collinearity screen,
interval fits, cluster bootstrap, Holm, decision rule) runs on each through
:func:`simulated_comparison`, called exactly as the confirmatory run calls it
(``compare_nested(table, models, **design.comparison_kwargs())``) with the design's
models, Holm family, estimator, primary metric, B, alpha and CI level, and with the
simulated blocks' covariate facts (:data:`SIMULATED_COVARIATES`) where the real run has
the descriptor registry's. Power curves and the closed-form approximation that explains
the simulated power are in :mod:`analysis.prereg.power_curve`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pandas as pd

from analysis.compare import ComparisonResult, compare_nested
from analysis.prereg.design import load_design
from analysis.validation import ParameterError, check_int, check_random_state

__all__ = [
    "DEFAULT_WIDTHS",
    "INTRINSIC_FEATURES",
    "NATIVE_FEATURES",
    "SIMULATED_BLOCKS",
    "SIMULATED_COVARIATES",
    "StudySizes",
    "ValidationResult",
    "check_assumptions",
    "load_widths",
    "simulate_study",
    "simulated_comparison",
    "simulated_decisions",
    "sizes_from_design",
    "validate_comparison",
]

#: Where the engine benchmark writes MiniLM bracket widths (relative to a study root).
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
#: Covariate columns of the real blocks on the MiniLM grid (``attnrank describe``, lengths
#: 64 and 128, t in {0.5, 1, 2}, eps in {0.05, 0.1, 0.2}; constant ones excluded):
#: native has 13 features of which ``head_dim`` is constant; intrinsic has 7 of which
#: ``rank_C`` is constant (per-r diagnostics are never covariates).
NATIVE_FEATURES = 12
INTRINSIC_FEATURES = 6


@dataclass(frozen=True)
class StudySizes:
    """The sizes of a study that the simulation copies.

    Attributes
    ----------
    name : str
        Where the sizes came from (a design path or ``"offline-minilm (built-in)"``).
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
        The pair whose decision is counted (rich adds ``native`` to base).
    estimator, primary_metric : str
    """

    name: str = "offline-minilm (built-in sizes)"
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
        base, rich = self.confirmatory
        if tuple(self.confirmatory) not in {tuple(p) for p in self.family}:
            raise ParameterError("confirmatory", "a pair of the Holm family", self.confirmatory)
        if "native" in models[base] or "native" not in models[rich]:
            raise ParameterError(
                "confirmatory",
                "a pair whose rich model adds the native block to the base model",
                self.confirmatory,
            )
        if not 0 < self.n_held_out < self.n_heads:
            raise ParameterError(
                "n_held_out", f"an integer in (0, {self.n_heads})", self.n_held_out
            )

    @property
    def cells_per_head(self) -> int:
        return self.inputs_per_length * len(self.lengths) * len(self.temperatures) * len(self.eps)

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
        }


def sizes_from_design(path: str | Path) -> StudySizes:
    """The simulation sizes of a design file.

    Heads, held-out heads, grid, and what the confirmatory run takes from the design
    (``Design.comparison_kwargs``): the models of the Holm family, the family, estimator,
    primary metric, B, alpha, CI level; the confirmatory pair is the design's
    ``kind = "confirmatory"`` hypothesis (else the family's first pair).
    """
    design = load_design(path, require_held_out=False)
    data = design.data
    pop = design.population()
    frac = float(data["held_out"]["fraction"])
    held = data["held_out"].get("heads") or []
    n_held = len(held) if held else round(frac * len(pop))
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
    return StudySizes(
        name=str(path),
        n_heads=len(pop),
        n_held_out=n_held,
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
    )


def load_widths(path: str | Path) -> pd.DataFrame:
    """Read integer brackets (``eps``, ``lower``, ``upper``) and add ``width`` (log2).

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
            "(columns eps, lower, upper) written by the engine benchmark; pass --widths FILE."
            " Widths are never invented."
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
    return out


def _widths_by_eps(widths: pd.DataFrame, eps: tuple[float, ...]) -> dict[float, np.ndarray]:
    out = {}
    for e in eps:
        sel = np.isclose(widths["eps"].to_numpy(float), e)
        if not sel.any():
            raise ParameterError(
                "eps", f"values present in the widths file ({sorted(set(widths['eps']))})", e
            )
        out[e] = widths.loc[sel, "width"].to_numpy(float)
    return out


def check_assumptions(
    *,
    icc: float,
    residual_sd: float,
    native_head_share: float,
    native_features: int,
    intrinsic_features: int,
    names: dict[str, str] | None = None,
) -> None:
    """Validate the simulation's assumptions; ``names`` maps them to CLI flag names.

    Raises
    ------
    ParameterError
        Naming the first bad assumption (``names[assumption]`` when given): ``icc`` in
        [0, 1), ``residual_sd`` > 0, ``native_head_share`` in [0, 1], feature counts
        integers >= 1.
    """
    names = names or {}

    def num(v) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)

    if not (num(icc) and 0 <= icc < 1):
        raise ParameterError(names.get("icc", "icc"), "a number in [0, 1)", icc)
    if not (num(residual_sd) and residual_sd > 0):
        raise ParameterError(
            names.get("residual_sd", "residual_sd"), "a finite number > 0", residual_sd
        )
    if not (num(native_head_share) and 0 <= native_head_share <= 1):
        raise ParameterError(
            names.get("native_head_share", "native_head_share"),
            "a share in [0, 1]",
            native_head_share,
        )
    check_int(names.get("native_features", "native_features"), native_features, minimum=1)
    check_int(names.get("intrinsic_features", "intrinsic_features"), intrinsic_features, minimum=1)


def simulate_study(
    sizes: StudySizes,
    widths: pd.DataFrame | dict,
    *,
    effect: float,
    icc: float = 0.5,
    residual_sd: float = 0.75,
    native_head_share: float = 0.5,
    native_features: int = NATIVE_FEATURES,
    intrinsic_features: int = INTRINSIC_FEATURES,
    random_state: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    """One simulated study as a tidy comparison table.

    Parameters
    ----------
    sizes : StudySizes
    widths : DataFrame from :func:`load_widths` (or its per-eps dict)
    effect : float, keyword-only
        Share of the variance M0 leaves that the native block explains (0 = null).
    icc : float, keyword-only
        Between-head share of the remaining residual variance.
    residual_sd : float, keyword-only
        SD (log2 units) of what the true baseline function leaves.
    native_head_share : float, keyword-only
        Share of each native / intrinsic feature's variance that is between heads.
    native_features, intrinsic_features : int, keyword-only
        Columns of the simulated native and intrinsic blocks (defaults: the real blocks'
        non-constant covariates on the MiniLM grid, 12 and 6).
    random_state : int, Generator or None, keyword-only

    Returns
    -------
    pandas.DataFrame
        ``cell_key``, ``cluster``, ``held_out``, ``input_id``, ``length``, ``y_lower``,
        ``y_upper``, five baseline, ``native_features`` native and
        ``intrinsic_features`` intrinsic columns.

    Notes
    -----
    Cell c of head h: ``y* = f(baseline) + b w_c + u_h + e_c`` with an additive,
    monotone ``f`` of the baseline features, ``u_h ~ N(0, icc (1 - effect) V)``,
    ``e_c ~ N(0, (1 - icc)(1 - effect) V)``, ``V = residual_sd^2`` and
    ``b^2 = effect V``, so the native signal ``b w`` is ``effect`` of the variance M0
    leaves. ``w`` (unit variance, ``native_head_share`` of it between heads) is the part
    of ``native__x0 = 0.3 entropy + sqrt(0.91) w`` not shared with the baseline; the
    other native columns and the intrinsic ones are noise with the same head structure
    (intrinsic column j correlated 0.5 with native column j mod ``native_features``). The
    observed interval is ``[y* - U w_i, y* - U w_i + w_i]``, ``U ~ Uniform(0, 1)``, with
    ``w_i`` resampled from the real widths at the cell's eps; width 0 gives a point.
    """
    rng = check_random_state(random_state)
    if not (isinstance(effect, (int, float)) and 0 <= effect < 1):
        raise ParameterError("effect", "a share in [0, 1)", effect)
    check_assumptions(
        icc=icc,
        residual_sd=residual_sd,
        native_head_share=native_head_share,
        native_features=native_features,
        intrinsic_features=intrinsic_features,
    )
    wmap = widths if isinstance(widths, dict) else _widths_by_eps(widths, sizes.eps)
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

    def mixed(size_h: int = 1) -> np.ndarray:
        a = rng.standard_normal((H, size_h))[head]
        b = rng.standard_normal((n, size_h))
        return np.sqrt(native_head_share) * a + np.sqrt(1 - native_head_share) * b

    zL = (np.log(L) - np.log(L).mean()) / (np.log(L).std() or 1.0)
    ze = (np.log(e) - np.log(e).mean()) / (np.log(e).std() or 1.0)
    zt = (np.log(t) - np.log(t).mean()) / (np.log(t).std() or 1.0)
    g = rng.standard_normal(H)[head]
    entropy = 0.7 * g + 0.5 * zt + 0.3 * zL + 0.4 * rng.standard_normal(n)
    stable_rank = np.exp(0.5 * entropy + 0.3 * rng.standard_normal(n) + 1.0)
    f = 2.5 + 0.45 * zL - 0.35 * ze + 0.5 * np.tanh(entropy) + 0.25 * entropy

    V = residual_sd**2
    w = mixed(1)[:, 0]
    native = mixed(native_features)
    native[:, 0] = 0.3 * entropy / entropy.std() + np.sqrt(0.91) * w
    partner = native[:, np.arange(intrinsic_features) % native_features]
    intrinsic = 0.5 * partner + np.sqrt(0.75) * mixed(intrinsic_features)
    u = rng.standard_normal(H)[head] * np.sqrt(icc * (1 - effect) * V)
    eps_noise = rng.standard_normal(n) * np.sqrt((1 - icc) * (1 - effect) * V)
    y = f + np.sqrt(effect * V) * w + u + eps_noise

    width = np.empty(n)
    for val, ws in wmap.items():
        sel = np.isclose(e, val)
        width[sel] = rng.choice(ws, size=int(sel.sum()), replace=True)
    lower = y - rng.uniform(size=n) * width
    upper = lower + width
    point = width == 0
    lower[point] = upper[point] = y[point]

    held_heads = rng.choice(H, size=sizes.n_held_out, replace=False)
    held = np.isin(head, held_heads)
    cols = {
        "cell_key": [f"sim:{h}:{k}" for h in range(H) for k in range(K)],
        "cluster": [f"sim:{h}" for h in head],
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
    cols.update({f"native__x{k}": native[:, k] for k in range(native_features)})
    cols.update({f"intrinsic__z{k}": intrinsic[:, k] for k in range(intrinsic_features)})
    return pd.DataFrame(cols)


@dataclass(frozen=True)
class ValidationResult:
    """Outcome of :func:`validate_comparison`.

    Attributes
    ----------
    false_positive_rate, power : float
        Shares of null / alternative simulations in which the confirmatory pair (M0<M1)
        was declared to add information.
    simulations : int
    alpha, effect, icc : float
    design : str
    seconds : float
    runs : pandas.DataFrame
        One row per simulated study: ``scenario``, ``simulation``, ``effect``,
        ``ci_low``, ``ci_high``, ``p_value``, ``p_holm``, ``adds_information``.
    """

    false_positive_rate: float
    power: float
    simulations: int
    alpha: float
    effect: float
    icc: float
    design: str
    seconds: float
    runs: pd.DataFrame = field(repr=False)

    def to_dict(self) -> dict:
        """The JSON that ``attnrank validate-comparison --json`` prints."""
        return {
            "false_positive_rate": self.false_positive_rate,
            "power": self.power,
            "simulations": self.simulations,
            "alpha": self.alpha,
            "effect": self.effect,
            "icc": self.icc,
            "design": self.design,
        }

    def to_frame(self) -> pd.DataFrame:
        return self.runs.copy()

    def summary(self) -> str:
        return (
            f"validate-comparison on {self.design}: {self.simulations} simulations per "
            f"scenario; false-positive rate {self.false_positive_rate:.3f} at alpha "
            f"{self.alpha}; power {self.power:.3f} at effect {self.effect} (ICC {self.icc}); "
            f"{self.seconds:.1f} s"
        )


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
        From :func:`simulate_study`.
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


def _one_study(
    sizes: StudySizes,
    wmap: dict,
    effect: float,
    rng: np.random.Generator,
    sim_kwargs: dict,
) -> dict:
    """Simulate one study, run the pipeline, return the confirmatory pair's row."""
    table = simulate_study(sizes, wmap, effect=effect, random_state=rng, **sim_kwargs)
    res = simulated_comparison(sizes, table, random_state=rng)
    f = res.frame
    base, rich = sizes.confirmatory
    r = f[(f.base_model == base) & (f.rich_model == rich) & (f.metric == sizes.primary_metric)]
    r = r.iloc[0]
    return {
        "effect": r.effect,
        "ci_low": r.ci_low,
        "ci_high": r.ci_high,
        "p_value": r.p_value,
        "p_holm": r.p_holm,
        "adds_information": bool(r.adds_information),
    }


def _spawn(rng: np.random.Generator, n: int) -> list[np.random.Generator]:
    seq = getattr(rng.bit_generator, "seed_seq", None)
    if seq is not None:
        return [np.random.default_rng(s) for s in seq.spawn(n)]
    return [np.random.default_rng(int(rng.integers(2**63))) for _ in range(n)]


def simulated_decisions(
    sizes: StudySizes,
    widths: pd.DataFrame | dict,
    *,
    effect: float,
    simulations: int,
    icc: float = 0.5,
    residual_sd: float = 0.75,
    native_head_share: float = 0.5,
    native_features: int = NATIVE_FEATURES,
    intrinsic_features: int = INTRINSIC_FEATURES,
    random_state: int | np.random.Generator | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Simulate ``simulations`` studies at one effect share and decide each.

    Parameters
    ----------
    sizes : StudySizes
    widths : DataFrame from :func:`load_widths` (or its per-eps dict)
    effect : float, keyword-only
        Share of the variance M0 leaves that the native block explains (0 = null).
    simulations : int, keyword-only
    icc, residual_sd, native_head_share, native_features, intrinsic_features : keyword-only
        As in :func:`simulate_study`.
    random_state : int, Generator or None, keyword-only
        Study k draws from the k-th of ``simulations`` child generators spawned from it
        (its ``SeedSequence``), so studies are independent of each other's draws.
    progress : callable or None, keyword-only
        Called as ``progress(done, simulations)`` after each study.

    Returns
    -------
    pandas.DataFrame
        One row per study, the confirmatory pair's primary-metric row of
        :func:`simulated_comparison`: ``effect``, ``ci_low``, ``ci_high``, ``p_value``,
        ``p_holm``, ``adds_information``.
    """
    simulations = check_int("simulations", simulations, minimum=1)
    sim_kwargs = {
        "icc": icc,
        "residual_sd": residual_sd,
        "native_head_share": native_head_share,
        "native_features": native_features,
        "intrinsic_features": intrinsic_features,
    }
    check_assumptions(**sim_kwargs)
    wmap = widths if isinstance(widths, dict) else _widths_by_eps(widths, sizes.eps)
    rows = []
    for k, g in enumerate(_spawn(check_random_state(random_state), simulations)):
        rows.append(_one_study(sizes, wmap, effect, g, sim_kwargs))
        if progress is not None:
            progress(k + 1, simulations)
    return pd.DataFrame(rows)


def validate_comparison(
    widths: pd.DataFrame,
    *,
    simulations: int,
    sizes: StudySizes = StudySizes(),
    effect: float = 0.10,
    icc: float = 0.5,
    residual_sd: float = 0.75,
    native_head_share: float = 0.5,
    native_features: int = NATIVE_FEATURES,
    intrinsic_features: int = INTRINSIC_FEATURES,
    random_state: int | np.random.Generator | None = None,
    progress=None,
) -> ValidationResult:
    """Estimate the false-positive rate and power of the pre-specified decision.

    Parameters
    ----------
    widths : pandas.DataFrame
        From :func:`load_widths`.
    simulations : int, keyword-only
        Simulated studies per scenario (null and alternative).
    sizes : StudySizes, keyword-only
    effect, icc, residual_sd, native_head_share : float, keyword-only
    native_features, intrinsic_features : int, keyword-only
        See :func:`simulate_study`.
    random_state : int, Generator or None, keyword-only
    progress : callable or None, keyword-only
        Called as ``progress(done, total)``.

    Returns
    -------
    ValidationResult

    Notes
    -----
    Each study runs :func:`simulated_comparison`: ``compare_nested`` with the sizes'
    models, Holm family, estimator, primary metric, B, alpha and CI level (what
    ``Design.comparison_kwargs`` gives the confirmatory run); the confirmatory pair's
    decision is counted. With N simulations the rates have binomial SE
    ``sqrt(p (1 - p) / N)`` (about 0.015 at p = 0.05, N = 200).
    """
    simulations = check_int("simulations", simulations, minimum=1)
    if not (isinstance(effect, (int, float)) and 0 < effect < 1):
        raise ParameterError("effect", "a share in (0, 1)", effect)
    sim_kwargs = {
        "icc": icc,
        "residual_sd": residual_sd,
        "native_head_share": native_head_share,
        "native_features": native_features,
        "intrinsic_features": intrinsic_features,
    }
    check_assumptions(**sim_kwargs)
    rng = check_random_state(random_state)
    wmap = _widths_by_eps(widths, sizes.eps)
    gens = _spawn(rng, 2 * simulations)
    t0 = time.perf_counter()
    rows = []
    total = 2 * simulations
    for k in range(total):
        scen = "null" if k % 2 == 0 else "alternative"
        share = 0.0 if scen == "null" else effect
        row = _one_study(sizes, wmap, share, gens[k], sim_kwargs)
        rows.append({"scenario": scen, "simulation": k // 2, **row})
        if progress is not None:
            progress(k + 1, total)
    runs = pd.DataFrame(rows)
    return ValidationResult(
        false_positive_rate=float(runs.loc[runs.scenario == "null", "adds_information"].mean()),
        power=float(runs.loc[runs.scenario == "alternative", "adds_information"].mean()),
        simulations=simulations,
        alpha=sizes.alpha,
        effect=effect,
        icc=icc,
        design=sizes.name,
        seconds=time.perf_counter() - t0,
        runs=runs,
    )
