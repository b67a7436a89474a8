"""Validation of the pre-specified comparison by simulation (false-positive rate, power).

Simulated studies have the shipped design's sizes (heads, held-out heads, cells per
head, B, alpha, Holm family), heads with a random effect, and interval outcomes whose
widths are resampled from real bracket widths (never from a study's held-out heads).
The full pipeline (calibration, standardization, collinearity screen, interval fits,
cluster bootstrap, Holm, decision rule) runs on each, called exactly as the confirmatory
run calls it (``compare_nested(table, models, **design.comparison_kwargs())``) with the
design's models, Holm family, estimator, primary metric, B, alpha and CI level.
:func:`approximate_power` is the closed-form normal approximation that explains the
simulated power (see its Notes and ``docs/prereg.md``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.compare.nested import compare_nested
from analysis.validation import ParameterError, check_int, check_random_state

__all__ = [
    "DEFAULT_WIDTHS",
    "POWER_CURVE_COLUMNS",
    "SIMULATED_BLOCKS",
    "StudySizes",
    "ValidationResult",
    "approximate_power",
    "load_widths",
    "minimum_detectable_effect",
    "power_curve",
    "simulate_study",
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
#: Covariate columns of the real blocks on the MiniLM grid (``attnrank describe``, lengths
#: 64 and 128, t in {0.5, 1, 2}, eps in {0.05, 0.1, 0.2}; constant ones excluded):
#: native has 13 features of which ``head_dim`` is constant; intrinsic has 7 of which
#: ``rank_C`` is constant (per-r diagnostics are never covariates).
NATIVE_FEATURES = 12
INTRINSIC_FEATURES = 6
#: Columns of :func:`power_curve`'s table.
POWER_CURVE_COLUMNS: tuple[str, ...] = (
    "effect",
    "native_head_share",
    "icc",
    "residual_sd",
    "n_heads",
    "n_held_out",
    "native_features",
    "simulations",
    "false_positive_rate",
    "power",
    "power_se",
    "mean_effect_null",
    "mean_effect_alternative",
    "sd_effect_alternative",
    "z_approx",
    "power_approx",
    "seconds",
)


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


def _check_assumptions(
    *,
    icc: float,
    residual_sd: float,
    native_head_share: float,
    native_features: int,
    intrinsic_features: int,
    names: dict[str, str] | None = None,
) -> None:
    """Validate the simulation's assumptions; ``names`` maps them to CLI flag names."""
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
    _check_assumptions(
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


def approximate_power(
    sizes: StudySizes = StudySizes(),
    *,
    effect: float = 0.10,
    icc: float = 0.5,
    native_head_share: float = 0.5,
    target_power: float = 0.8,
) -> dict[str, float]:
    """Normal approximation to the power of the decision (point outcomes, oracle fits).

    Parameters
    ----------
    sizes : StudySizes
        ``n_held_out`` (H), ``cells_per_head`` (K), ``alpha`` and the family size m.
    effect, icc, native_head_share : float, keyword-only
        As in :func:`simulate_study` (``residual_sd`` cancels).
    target_power : float, keyword-only

    Returns
    -------
    dict
        ``z`` (expected effect over its cluster-bootstrap SE), ``power_holm`` (one-sided
        test at ``alpha / m``, the Holm threshold when M0<M1 has the smallest p),
        ``power_unadjusted`` (at ``alpha``, Holm's last step), and
        ``held_out_for_target``: held-out heads for ``target_power`` at ``alpha / m``.

    Notes
    -----
    Write ``eps = effect``, ``s = native_head_share``, ``rho = icc``, ``V`` the variance
    M0 leaves. With the true coefficients, M0's held-out residual is
    ``e0 = b w + u + n`` and M1's is ``e1 = u + n``, ``b^2 = eps V``,
    ``var u = rho (1 - eps) V`` (shared by the head's K cells),
    ``var n = (1 - rho)(1 - eps) V``, ``w = sqrt(s) a_h + sqrt(1 - s) z_c``. The per-cell
    squared-loss difference is ``D = e0^2 - e1^2 = b^2 w^2 + 2 b w (u + n)``, with mean
    ``b^2``. Its head mean ``D_h`` has

    ``var D_h / V^2 = 4 eps rho (1 - eps) (s + (1 - s)/K) + 4 eps (1 - rho)(1 - eps)/K
    + eps^2 (2 s^2 + (4 s (1 - s) + 2 (1 - s)^2)/K)``.

    The first term is ``2 b w u``: when the native signal has a head-level part
    (``s > 0``) it does not average out over a head's cells, because ``u_h`` is shared.
    The cluster bootstrap estimates ``var(mean D) = var D_h / H``, so
    ``z = sqrt(H) eps / sqrt(var D_h / V^2)`` (V cancels) and the power is about
    ``Phi(z - z_(1 - alpha'))``. At the defaults (eps 0.1, rho 0.5, s 0.5, K 18, H 18)
    ``z = 1.27``. The interval loss (0 inside a bracket) and the estimation error of the
    fits (more so with many native columns) lower the simulated power below this.
    """
    if not (isinstance(effect, (int, float)) and 0 < effect < 1):
        raise ParameterError("effect", "a share in (0, 1)", effect)
    _check_assumptions(
        icc=icc,
        residual_sd=1.0,
        native_head_share=native_head_share,
        native_features=1,
        intrinsic_features=1,
    )
    if not (isinstance(target_power, (int, float)) and 0 < target_power < 1):
        raise ParameterError("target_power", "a number in (0, 1)", target_power)
    from scipy.stats import norm

    e, s, rho, K, H = effect, native_head_share, icc, sizes.cells_per_head, sizes.n_held_out
    m = len(sizes.family)
    var_h = (
        4 * e * rho * (1 - e) * (s + (1 - s) / K)
        + 4 * e * (1 - rho) * (1 - e) / K
        + e**2 * (2 * s**2 + (4 * s * (1 - s) + 2 * (1 - s) ** 2) / K)
    )
    z = float(np.sqrt(H) * e / np.sqrt(var_h))
    z_holm = norm.ppf(1 - sizes.alpha / m)
    needed = ((z_holm + norm.ppf(target_power)) / (e / np.sqrt(var_h))) ** 2
    return {
        "z": z,
        "power_holm": float(norm.cdf(z - z_holm)),
        "power_unadjusted": float(norm.cdf(z - norm.ppf(1 - sizes.alpha))),
        "held_out_for_target": float(needed),
    }


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


def _one_study(
    sizes: StudySizes,
    wmap: dict,
    effect: float,
    rng: np.random.Generator,
    sim_kwargs: dict,
) -> dict:
    """Simulate one study, run the pipeline, return the confirmatory pair's row."""
    table = simulate_study(sizes, wmap, effect=effect, random_state=rng, **sim_kwargs)
    res = compare_nested(
        table,
        dict(sizes.models),
        log_columns=LOG_COLUMNS,
        random_state=rng,
        **sizes.comparison_kwargs(),
    )
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
    Each study runs :func:`~analysis.compare.nested.compare_nested` with the sizes'
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
    _check_assumptions(**sim_kwargs)
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


def power_curve(
    widths: pd.DataFrame,
    *,
    simulations: int,
    effects: tuple[float, ...] = (0.05, 0.1, 0.2, 0.3),
    head_shares: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75),
    sizes: StudySizes = StudySizes(),
    icc: float = 0.5,
    residual_sd: float = 0.75,
    native_features: int = NATIVE_FEATURES,
    intrinsic_features: int = INTRINSIC_FEATURES,
    random_state: int | np.random.Generator | None = None,
    progress=None,
) -> pd.DataFrame:
    """Power over a grid of effect shares and native head shares, with the null's FPR.

    Parameters
    ----------
    widths : pandas.DataFrame
        From :func:`load_widths`.
    simulations : int, keyword-only
        Simulated studies per null and per (effect, head share) alternative.
    effects, head_shares : tuple of float, keyword-only
    sizes, icc, residual_sd, native_features, intrinsic_features : keyword-only
        As in :func:`validate_comparison`.
    random_state : int, Generator or None, keyword-only
    progress : callable or None, keyword-only
        Called as ``progress(done, total)`` after each simulated study.

    Returns
    -------
    pandas.DataFrame
        One row per (head share, effect) with :data:`POWER_CURVE_COLUMNS`: the null
        (simulated once per head share, shared by its rows) gives
        ``false_positive_rate`` and ``mean_effect_null``; ``power_se`` is the binomial
        SE; ``z_approx`` / ``power_approx`` come from :func:`approximate_power`
        (``power_holm``).
    """
    simulations = check_int("simulations", simulations, minimum=1)
    effects = tuple(effects)
    head_shares = tuple(head_shares)
    if not effects or not head_shares:
        raise ParameterError("effects/head_shares", "non-empty sequences", (effects, head_shares))
    for e in effects:
        if not (isinstance(e, (int, float)) and 0 < e < 1):
            raise ParameterError("effects", "shares in (0, 1)", e)
    for s in head_shares:
        _check_assumptions(
            icc=icc,
            residual_sd=residual_sd,
            native_head_share=s,
            native_features=native_features,
            intrinsic_features=intrinsic_features,
            names={"native_head_share": "head_shares"},
        )
    rng = check_random_state(random_state)
    wmap = _widths_by_eps(widths, sizes.eps)
    total = len(head_shares) * (1 + len(effects)) * simulations
    done = 0
    rows = []
    for s in head_shares:
        sim_kwargs = {
            "icc": icc,
            "residual_sd": residual_sd,
            "native_head_share": s,
            "native_features": native_features,
            "intrinsic_features": intrinsic_features,
        }
        null = []
        for g in _spawn(rng, simulations):
            null.append(_one_study(sizes, wmap, 0.0, g, sim_kwargs))
            done += 1
            if progress is not None:
                progress(done, total)
        null = pd.DataFrame(null)
        for e in effects:
            t0 = time.perf_counter()
            alt = []
            for g in _spawn(rng, simulations):
                alt.append(_one_study(sizes, wmap, e, g, sim_kwargs))
                done += 1
                if progress is not None:
                    progress(done, total)
            alt = pd.DataFrame(alt)
            power = float(alt["adds_information"].mean())
            approx = approximate_power(sizes, effect=e, icc=icc, native_head_share=s)
            rows.append(
                {
                    "effect": e,
                    "native_head_share": s,
                    "icc": icc,
                    "residual_sd": residual_sd,
                    "n_heads": sizes.n_heads,
                    "n_held_out": sizes.n_held_out,
                    "native_features": native_features,
                    "simulations": simulations,
                    "false_positive_rate": float(null["adds_information"].mean()),
                    "power": power,
                    "power_se": float(np.sqrt(power * (1 - power) / simulations)),
                    "mean_effect_null": float(null["effect"].mean()),
                    "mean_effect_alternative": float(alt["effect"].mean()),
                    "sd_effect_alternative": float(alt["effect"].std(ddof=1))
                    if simulations > 1
                    else float("nan"),
                    "z_approx": approx["z"],
                    "power_approx": approx["power_holm"],
                    "seconds": time.perf_counter() - t0,
                }
            )
    return pd.DataFrame(rows, columns=list(POWER_CURVE_COLUMNS))


def minimum_detectable_effect(curve: pd.DataFrame, *, target: float = 0.8) -> pd.DataFrame:
    """Smallest effect share reaching ``target`` power, per native head share.

    Parameters
    ----------
    curve : pandas.DataFrame
        From :func:`power_curve` (columns ``effect``, ``native_head_share``, ``power``).
    target : float, keyword-only

    Returns
    -------
    pandas.DataFrame
        ``native_head_share``, ``mde`` (linear interpolation of power in the effect
        between the first grid point at or above ``target`` and the one below it; NaN when
        no grid point reaches it, the effect itself when the smallest one does) and
        ``reached`` (bool).
    """
    if not (isinstance(target, (int, float)) and 0 < target < 1):
        raise ParameterError("target", "a number in (0, 1)", target)
    for c in ("effect", "native_head_share", "power"):
        if c not in curve.columns:
            raise ParameterError("curve", f"a power_curve table with a column {c}", list(curve))
    rows = []
    for s, g in curve.groupby("native_head_share", sort=True):
        g = g.sort_values("effect")
        e = g["effect"].to_numpy(float)
        p = g["power"].to_numpy(float)
        hit = np.flatnonzero(p >= target)
        if hit.size == 0:
            mde = float("nan")
        elif hit[0] == 0:
            mde = float(e[0])
        else:
            i = hit[0]
            mde = float(e[i - 1] + (target - p[i - 1]) * (e[i] - e[i - 1]) / (p[i] - p[i - 1]))
        rows.append({"native_head_share": float(s), "mde": mde, "reached": bool(hit.size)})
    return pd.DataFrame(rows)
