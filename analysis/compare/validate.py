"""Validation of the pre-specified comparison by simulation (false-positive rate, power).

Simulated studies have the shipped design's sizes (heads, held-out heads, cells per
head, B, alpha, Holm family), heads with a random effect, and interval outcomes whose
widths are resampled from real bracket widths (never from a study's held-out heads).
The full pipeline (calibration, standardization, collinearity screen, interval fits,
cluster bootstrap, Holm, decision rule) runs on each.
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
    "StudySizes",
    "ValidationResult",
    "load_widths",
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

    @property
    def cells_per_head(self) -> int:
        return self.inputs_per_length * len(self.lengths) * len(self.temperatures) * len(self.eps)


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


def simulate_study(
    sizes: StudySizes,
    widths: pd.DataFrame | dict,
    *,
    effect: float,
    icc: float = 0.5,
    residual_sd: float = 0.75,
    native_head_share: float = 0.5,
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
    random_state : int, Generator or None, keyword-only

    Returns
    -------
    pandas.DataFrame
        ``cell_key``, ``cluster``, ``held_out``, ``input_id``, ``length``, ``y_lower``,
        ``y_upper``, five baseline, three native and two intrinsic features.

    Notes
    -----
    Cell c of head h: ``y* = f(baseline) + b w_c + u_h + e_c`` with an additive,
    monotone ``f`` of the baseline features, ``u_h ~ N(0, icc (1 - effect) V)``,
    ``e_c ~ N(0, (1 - icc)(1 - effect) V)``, ``V = residual_sd^2`` and
    ``b^2 = effect V``, so the native signal ``b w`` is ``effect`` of the variance M0
    leaves. ``w`` (unit variance, ``native_head_share`` of it between heads) is the part
    of ``native__x0 = 0.3 entropy + sqrt(0.91) w`` not shared with the baseline; the
    other native and both intrinsic features are noise with the same head structure
    (intrinsic correlated 0.5 with native). The observed interval is ``[y* - U w_i,
    y* - U w_i + w_i]``, ``U ~ Uniform(0, 1)``, with ``w_i`` resampled from the real
    widths at the cell's eps; width 0 gives a point.
    """
    rng = check_random_state(random_state)
    if not 0 <= effect < 1:
        raise ParameterError("effect", "a share in [0, 1)", effect)
    if not 0 <= icc < 1:
        raise ParameterError("icc", "a number in [0, 1)", icc)
    if not (isinstance(residual_sd, (int, float)) and np.isfinite(residual_sd) and residual_sd > 0):
        raise ParameterError("residual_sd", "a finite number > 0", residual_sd)
    if not 0 <= native_head_share <= 1:
        raise ParameterError("native_head_share", "a share in [0, 1]", native_head_share)
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
    zt = (np.log(t) - np.log(t).mean()) / (np.log(t).std() or 1.0)
    ze = (np.log(e) - np.log(e).mean()) / (np.log(e).std() or 1.0)
    g = rng.standard_normal(H)[head]
    entropy = 0.7 * g + 0.5 * zt + 0.3 * zL + 0.4 * rng.standard_normal(n)
    stable_rank = np.exp(0.5 * entropy + 0.3 * rng.standard_normal(n) + 1.0)
    f = 2.5 + 0.45 * zL - 0.35 * ze + 0.5 * np.tanh(entropy) + 0.25 * entropy

    V = residual_sd**2
    w = mixed(1)[:, 0]
    native = mixed(3)
    native[:, 0] = 0.3 * entropy / entropy.std() + np.sqrt(0.91) * w
    intrinsic = 0.5 * native[:, :2] + np.sqrt(0.75) * mixed(2)
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
    df = pd.DataFrame(
        {
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
    )
    for k in range(3):
        df[f"native__x{k}"] = native[:, k]
    for k in range(2):
        df[f"intrinsic__z{k}"] = intrinsic[:, k]
    return df


@dataclass(frozen=True)
class ValidationResult:
    """Outcome of :func:`validate_comparison`.

    Attributes
    ----------
    false_positive_rate, power : float
        Shares of null / alternative simulations in which M0<M1 was declared to add
        information.
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


def validate_comparison(
    widths: pd.DataFrame,
    *,
    simulations: int,
    sizes: StudySizes = StudySizes(),
    effect: float = 0.10,
    icc: float = 0.5,
    residual_sd: float = 0.75,
    native_head_share: float = 0.5,
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
        See :func:`simulate_study`.
    random_state : int, Generator or None, keyword-only
    progress : callable or None, keyword-only
        Called as ``progress(done, total)``.

    Returns
    -------
    ValidationResult

    Notes
    -----
    Each study runs :func:`~analysis.compare.nested.compare_nested` with the family
    M0<M1, M0<M2, M0<M3, the primary metric only (the decision uses it alone), the
    design's B and alpha. With N simulations the rates have binomial SE
    ``sqrt(p (1 - p) / N)`` (about 0.015 at p = 0.05, N = 200).
    """
    simulations = check_int("simulations", simulations, minimum=1)
    if not 0 < effect < 1:
        raise ParameterError("effect", "a share in (0, 1)", effect)
    rng = check_random_state(random_state)
    wmap = _widths_by_eps(widths, sizes.eps)
    seeds = (
        rng.bit_generator.seed_seq.spawn(2 * simulations)
        if hasattr(rng.bit_generator, "seed_seq")
        else None
    )
    t0 = time.perf_counter()
    rows = []
    total = 2 * simulations
    for k in range(total):
        scen = "null" if k % 2 == 0 else "alternative"
        sub = np.random.default_rng(seeds[k] if seeds is not None else rng.integers(2**63))
        share = 0.0 if scen == "null" else effect
        table = simulate_study(
            sizes,
            wmap,
            effect=share,
            icc=icc,
            residual_sd=residual_sd,
            native_head_share=native_head_share,
            random_state=sub,
        )
        res = compare_nested(
            table,
            MODELS,
            family=FAMILY,
            log_columns=LOG_COLUMNS,
            metrics=("interval_sq_loss",),
            n_boot=sizes.n_boot,
            alpha=sizes.alpha,
            random_state=sub,
        )
        f = res.frame
        r = f[(f.pair == "M0<M1")].iloc[0]
        rows.append(
            {
                "scenario": scen,
                "simulation": k // 2,
                "effect": r.effect,
                "ci_low": r.ci_low,
                "ci_high": r.ci_high,
                "p_value": r.p_value,
                "p_holm": r.p_holm,
                "adds_information": bool(r.adds_information),
            }
        )
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
