"""The cluster bootstrap of held-out heads: resample counts, replicate means, CIs and p.

Clusters (heads) are resampled with replacement, within strata when given; one set of
counts ``c_bh`` (replicate b, cluster h) serves every pair and metric of a comparison
(:class:`analysis.compare.NestedComparison`), and fits are never refitted. Mean metrics are
read from per-cluster sums (:func:`replicate_means`), Spearman from count-weighted cells
(:func:`spearman_replicates`); CIs and one-sided p are percentile
(:func:`percentile_ci_and_p`) or studentized (:func:`studentized_ci_and_p`, with the
stratified cluster-robust SE of :func:`cluster_se`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.compare.metrics import spearman
from analysis.validation import ParameterError, check_int, check_random_state

__all__ = [
    "BOOTSTRAPS",
    "ClusterBootstrap",
    "bootstrap_counts",
    "cluster_se",
    "cluster_strata",
    "percentile_ci_and_p",
    "percentile_equivalence_p",
    "replicate_means",
    "replicate_summary",
    "spearman_replicates",
    "studentized_ci_and_p",
    "studentized_equivalence_p",
]

#: CI and one-sided p from the cluster bootstrap's resamples: ``"cluster"`` (percentile,
#: :func:`percentile_ci_and_p`) or ``"studentized"`` (bootstrap-t of the per-head effect
#: with a stratified cluster-robust SE, :func:`studentized_ci_and_p`).
BOOTSTRAPS: tuple[str, ...] = ("cluster", "studentized")


def bootstrap_counts(
    n_clusters: int,
    n_boot: int,
    rng: np.random.Generator,
    strata: np.ndarray | None = None,
) -> np.ndarray:
    """Counts ``c_bh`` of each cluster in B resamples of clusters with replacement.

    Parameters
    ----------
    n_clusters : int
    n_boot : int
    rng : numpy.random.Generator
    strata : array (n_clusters,) or None
        Stratum of each cluster. When given, each stratum's clusters are resampled among
        themselves (strata in sorted order, each a multinomial of its own size), so every
        replicate keeps each stratum's number of clusters. With one stratum the draws are
        those of the unstratified call, number for number.

    Returns
    -------
    numpy.ndarray (n_boot, n_clusters) of int

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare.bootstrap import bootstrap_counts
    >>> counts = bootstrap_counts(4, 3, np.random.default_rng(0))
    >>> counts.shape, counts.sum(axis=1).tolist()  # each replicate draws 4 clusters
    ((3, 4), [4, 4, 4])
    >>> strata = np.array(["a", "a", "b", "b"])
    >>> counts = bootstrap_counts(4, 100, np.random.default_rng(0), strata=strata)
    >>> sorted(set(counts[:, :2].sum(axis=1).tolist()))  # stratum "a" keeps its 2 clusters
    [2]
    """
    if strata is None:
        return rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=n_boot)
    strata = np.asarray(strata)
    if strata.shape != (n_clusters,):
        raise ParameterError("strata", f"one stratum per cluster ({n_clusters})", strata.shape)
    counts = np.zeros((n_boot, n_clusters), dtype=np.int64)
    for s in np.unique(strata):
        idx = np.flatnonzero(strata == s)
        k = idx.size
        counts[:, idx] = rng.multinomial(k, np.full(k, 1.0 / k), size=n_boot)
    return counts


def cluster_strata(clusters: np.ndarray, strata: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Factorize ``clusters`` and give each cluster its one stratum.

    Returns
    -------
    codes : array (n,) of int
        ``pandas.factorize`` codes of ``clusters`` (order of first appearance).
    cluster_stratum : array (n_clusters,)
        The stratum of each code.

    Raises
    ------
    ParameterError
        Naming ``stratum`` when a cluster's cells lie in more than one stratum.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare.bootstrap import cluster_strata
    >>> codes, stratum = cluster_strata(np.array(["h1", "h1", "h2", "h3"]), ["x", "x", "y", "y"])
    >>> codes.tolist(), stratum.tolist()
    ([0, 0, 1, 2], ['x', 'y', 'y'])
    >>> cluster_strata(np.array(["h1", "h1"]), ["x", "y"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: stratum: expected one stratum per cluster...
    """
    codes, uniq = pd.factorize(np.asarray(clusters))
    strata = np.asarray(strata).astype(str)
    per = pd.DataFrame({"c": codes, "s": strata}).drop_duplicates()
    if len(per) != len(uniq):
        bad = per.loc[per["c"].duplicated(keep=False), "c"].iloc[0]
        raise ParameterError(
            "stratum", "one stratum per cluster", f"cluster {uniq[bad]} in several strata"
        )
    out = np.empty(len(uniq), dtype=object)
    out[per["c"].to_numpy()] = per["s"].to_numpy()
    return codes, out.astype(str)


def replicate_means(values: np.ndarray, codes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Cell means in each replicate: ``sum_h c_bh S_h / sum_h c_bh n_h``.

    Examples
    --------
    Cluster 0 holds cells 1 and 3, cluster 1 the cell 10; the replicates draw both
    clusters once, cluster 0 twice, cluster 1 twice:

    >>> import numpy as np
    >>> from analysis.compare.bootstrap import replicate_means
    >>> values, codes = np.array([1.0, 3.0, 10.0]), np.array([0, 0, 1])
    >>> counts = np.array([[1, 1], [2, 0], [0, 2]])
    >>> replicate_means(values, codes, counts).round(4).tolist()  # 14 / 3, 8 / 4, 20 / 2
    [4.6667, 2.0, 10.0]
    """
    k = counts.shape[1]
    s_h = np.bincount(codes, weights=values, minlength=k)
    n_h = np.bincount(codes, minlength=k).astype(float)
    return (counts @ s_h) / (counts @ n_h)


def spearman_replicates(
    pred: np.ndarray, mid: np.ndarray, codes: np.ndarray, counts: np.ndarray
) -> tuple[float, np.ndarray]:
    """Spearman of predictions with bracket midpoints, and its cluster-bootstrap replicates.

    Cells with a non-finite midpoint are left out of both; replicate b weights each cell
    by its cluster's count in ``counts[b]`` (``codes``: the cell's cluster index).
    Returns ``(point, replicates [B])``.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare.bootstrap import spearman_replicates
    >>> pred, mid = np.array([1.0, 2.0, 4.0, 3.0]), np.array([1.0, 2.0, 3.0, np.inf])
    >>> codes = np.array([0, 0, 1, 1])
    >>> point, reps = spearman_replicates(pred, mid, codes, np.array([[1, 1], [2, 0]]))
    >>> point, reps.tolist()  # the infinite midpoint is left out of both
    (1.0, [1.0, 1.0])
    """
    finite = np.isfinite(mid)
    point = spearman(pred[finite], mid[finite])
    w_cells = counts[:, codes] * finite[None, :]
    mid0 = np.where(finite, mid, 0.0)
    return point, np.array([spearman(pred, mid0, weights=w) for w in w_cells])


def percentile_ci_and_p(effects: np.ndarray, ci_level: float = 0.95) -> tuple[float, float, float]:
    """Percentile CI and one-sided p ``(1 + #{effect_b <= 0}) / (B + 1)``.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare.bootstrap import percentile_ci_and_p
    >>> effects = np.arange(-1.0, 19.0)  # 20 replicates, two of them <= 0
    >>> lo, hi, p = percentile_ci_and_p(effects, ci_level=0.9)
    >>> round(lo, 2), round(hi, 2), round(p, 4)  # p = (1 + 2) / 21
    (-0.05, 17.05, 0.1429)
    """
    q = (1.0 - ci_level) / 2.0
    lo, hi = np.quantile(effects, [q, 1.0 - q])
    p = (1.0 + np.sum(effects <= 0)) / (effects.size + 1.0)
    return float(lo), float(hi), float(p)


def percentile_equivalence_p(effects: np.ndarray, sesoi: float) -> float:
    """One-sided equivalence p ``(1 + #{effect_b >= sesoi}) / (B + 1)`` (percentile).

    The test of ``H0: effect >= sesoi`` (the rich model improves by at least the SESOI)
    against ``effect < sesoi``, read from the same replicates as
    :func:`percentile_ci_and_p`'s test of ``effect <= 0``: it rejects at level alpha
    when the upper ``1 - alpha`` percentile of the replicate effects lies below
    ``sesoi``.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare.bootstrap import percentile_equivalence_p
    >>> effects = np.arange(-1.0, 19.0)  # 20 replicates, four of them >= 15
    >>> round(percentile_equivalence_p(effects, 15.0), 4)  # (1 + 4) / 21
    0.2381
    """
    effects = np.asarray(effects, float)
    return float((1.0 + np.sum(effects >= sesoi)) / (effects.size + 1.0))


def replicate_summary(
    effects: np.ndarray, sesoi: float | None, ci_level: float, *, method: int = 2
) -> dict:
    """``ci_low``, ``ci_high``, ``p_value``, ``sesoi`` and ``equivalence_p`` of the finite
    replicate effects (percentile; NaN without replicates or without a SESOI), the
    columns a sensitivity row reads from its replicates. ``equivalence_p`` is the
    one-sided p of ``effect < sesoi`` under ``method`` 2 and the two-sided TOST p at
    ``+-sesoi`` under 3 (the larger of the two one-sided p values), where the one-sided
    p is also returned as ``non_superiority_p``.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare.bootstrap import replicate_summary
    >>> out = replicate_summary(np.array([np.nan, *range(-1, 19)]), 15.0, 0.9)
    >>> round(out["p_value"], 4), round(out["equivalence_p"], 4)
    (0.1429, 0.2381)
    >>> out = replicate_summary(np.arange(-10.0, 10.0), 8.0, 0.9, method=3)
    >>> round(out["equivalence_p"], 4), round(out["non_superiority_p"], 4)  # (1 + 3) / 21
    (0.1905, 0.1429)
    """
    eff = effects[np.isfinite(effects)]
    lo, hi, p = percentile_ci_and_p(eff, ci_level) if eff.size else (np.nan,) * 3
    p_upper = p_eq = np.nan
    if sesoi is not None and eff.size:
        p_upper = p_eq = percentile_equivalence_p(eff, sesoi)
        if method == 3:
            p_eq = max(p_upper, float((1.0 + np.sum(eff <= -sesoi)) / (eff.size + 1.0)))
    out = {
        "ci_low": lo,
        "ci_high": hi,
        "p_value": p,
        "sesoi": np.nan if sesoi is None else sesoi,
        "equivalence_p": p_eq,
    }
    return out if method != 3 else {**out, "non_superiority_p": p_upper}


def cluster_se(
    head_sums: np.ndarray, head_sizes: np.ndarray, counts: np.ndarray, strata: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Ratio means and their stratified cluster-robust SEs, one per row of ``counts``.

    For counts ``c_h`` (a replicate's, or all ones for the sample) the mean is
    ``T = sum c_h S_h / N``, ``N = sum c_h n_h``; with ``z_h = S_h - T n_h`` (the
    linearized ratio) and, in stratum s of ``H_s`` heads, the count-weighted variance
    ``v_s = sum_s c_h (z_h - zbar_s)^2 / (H_s - 1)`` (0 when ``H_s = 1``), the SE is
    ``sqrt(sum_s H_s v_s) / N``.

    Examples
    --------
    Three heads in one stratum with sums 2, 4, -1 over 2, 2, 1 cells: ``T = 5 / 5 = 1``,
    ``z = (0, 2, -2)``, ``v = 8 / 2``, so ``SE = sqrt(3 * 4) / 5``:

    >>> import numpy as np
    >>> from analysis.compare.bootstrap import cluster_se
    >>> sums, sizes = np.array([2.0, 4.0, -1.0]), np.array([2.0, 2.0, 1.0])
    >>> T, se = cluster_se(sums, sizes, np.ones(3), np.zeros(3))
    >>> T.tolist(), se.round(6).tolist(), round(float(np.sqrt(12)) / 5, 6)
    ([1.0], [0.69282], 0.69282)
    """
    counts = np.atleast_2d(counts).astype(float)
    N = counts @ head_sizes
    T = (counts @ head_sums) / N
    z = head_sums[None, :] - T[:, None] * head_sizes[None, :]
    var = np.zeros(counts.shape[0])
    for s in np.unique(strata):
        idx = np.flatnonzero(strata == s)
        k = idx.size
        if k < 2:
            continue
        c, zs = counts[:, idx], z[:, idx]
        zbar = (c * zs).sum(axis=1) / c.sum(axis=1)
        var += k * (c * (zs - zbar[:, None]) ** 2).sum(axis=1) / (k - 1)
    return T, np.sqrt(var) / N


def studentized_ci_and_p(
    head_sums: np.ndarray,
    head_sizes: np.ndarray,
    counts: np.ndarray,
    strata: np.ndarray,
    ci_level: float = 0.95,
) -> tuple[float, float, float, float]:
    """Effect, studentized (bootstrap-t) CI and one-sided p from per-head sums.

    Parameters
    ----------
    head_sums : array (H,)
        Per-head sums of the per-cell effect (base minus rich loss, or rich minus base).
    head_sizes : array (H,)
        Cells per head.
    counts : array (B, H)
        The cluster-bootstrap counts (:func:`bootstrap_counts`).
    strata : array (H,)
        Stratum of each head (one value for an unstratified draw).
    ci_level : float, default 0.95
        Level of the two-sided confidence interval.

    Returns
    -------
    effect, ci_low, ci_high, p_value : float

    Notes
    -----
    ``effect = sum S_h / sum n_h`` with SE ``se`` (:func:`cluster_se`); each replicate
    gives ``t_b = (effect_b - effect) / se_b`` with its own SE. One-sided
    ``p = (1 + #{b : t_b >= effect / se}) / (B + 1)``; CI
    ``[effect - q_hi se, effect - q_lo se]`` with ``q_lo, q_hi`` the ``(1 -/+ ci_level) / 2``
    quantiles of ``t_b``. A replicate with ``se_b = 0`` (every draw the same head) has
    ``t_b = 0``.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare.bootstrap import bootstrap_counts, studentized_ci_and_p
    >>> sums, sizes = np.array([2.0, 4.0, -1.0]), np.array([2.0, 2.0, 1.0])
    >>> counts = bootstrap_counts(3, 199, np.random.default_rng(0))
    >>> effect, lo, hi, p = studentized_ci_and_p(sums, sizes, counts, np.zeros(3))
    >>> effect, lo < effect < hi, 0 < p < 1  # effect = 5 / 5
    (1.0, True, True)
    """
    head_sums = np.asarray(head_sums, float)
    head_sizes = np.asarray(head_sizes, float)
    (eff,), (se,) = cluster_se(head_sums, head_sizes, np.ones((1, head_sums.size)), strata)
    eff_b, se_b = cluster_se(head_sums, head_sizes, counts, strata)
    t_b = np.divide(eff_b - eff, se_b, out=np.zeros_like(eff_b), where=se_b > 0)
    t_obs = eff / se if se > 0 else np.copysign(np.inf, eff) if eff else 0.0
    q = (1.0 - ci_level) / 2.0
    q_lo, q_hi = np.quantile(t_b, [q, 1.0 - q])
    p = (1.0 + np.sum(t_b >= t_obs)) / (t_b.size + 1.0)
    return float(eff), float(eff - q_hi * se), float(eff - q_lo * se), float(p)


def studentized_equivalence_p(
    head_sums: np.ndarray,
    head_sizes: np.ndarray,
    counts: np.ndarray,
    strata: np.ndarray,
    sesoi: float,
) -> float:
    """One-sided studentized (bootstrap-t) equivalence p at ``sesoi``.

    Notes
    -----
    With ``effect``, ``se`` and the replicates' ``t_b = (effect_b - effect) / se_b`` of
    :func:`studentized_ci_and_p`, the test of ``H0: effect >= sesoi`` has statistic
    ``t = (effect - sesoi) / se`` and ``p = (1 + #{b : t_b <= t}) / (B + 1)``: small
    when the effect lies well below the SESOI on the scale of its own SE.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare.bootstrap import bootstrap_counts, studentized_equivalence_p
    >>> sums, sizes = np.array([2.0, 4.0, -1.0]), np.array([2.0, 2.0, 1.0])  # effect 1
    >>> counts = bootstrap_counts(3, 199, np.random.default_rng(0))
    >>> far = studentized_equivalence_p(sums, sizes, counts, np.zeros(3), 100.0)
    >>> near = studentized_equivalence_p(sums, sizes, counts, np.zeros(3), 1.0)
    >>> far < 0.05 < near
    True
    """
    head_sums = np.asarray(head_sums, float)
    head_sizes = np.asarray(head_sizes, float)
    (eff,), (se,) = cluster_se(head_sums, head_sizes, np.ones((1, head_sums.size)), strata)
    eff_b, se_b = cluster_se(head_sums, head_sizes, counts, strata)
    t_b = np.divide(eff_b - eff, se_b, out=np.zeros_like(eff_b), where=se_b > 0)
    d = eff - sesoi
    t_obs = d / se if se > 0 else np.copysign(np.inf, d) if d else 0.0
    return float((1.0 + np.sum(t_b <= t_obs)) / (t_b.size + 1.0))


@dataclass(frozen=True)
class ClusterBootstrap:
    """The cluster bootstrap of per-cell values of two (already fitted) models.

    The same computation :class:`analysis.compare.NestedComparison` uses for mean
    metrics, for values computed elsewhere.

    Attributes
    ----------
    n_boot : int, default 2000
        Replicates B (>= 99).
    ci_level : float, default 0.95
    bootstrap : {"cluster", "studentized"}, default "cluster"
        Percentile (:func:`percentile_ci_and_p`) or studentized
        (:func:`studentized_ci_and_p`) CI and p from the same resamples.
    random_state : int, Generator or None
        Seeds the resamples: with an int seed, :meth:`effect` and :meth:`equivalence`
        read the same replicates.

    Examples
    --------
    Eight heads of three cells; the rich model's loss is about 0.3 lower in every cell:

    >>> import numpy as np
    >>> from analysis.compare.bootstrap import ClusterBootstrap
    >>> rng = np.random.default_rng(0)
    >>> heads = np.repeat(np.arange(8), 3)
    >>> base = rng.normal(1.0, 0.1, 24)
    >>> rich = base - 0.3 + rng.normal(0.0, 0.05, 24)
    >>> boot = ClusterBootstrap(n_boot=199, random_state=0)
    >>> effect, lo, hi, p = boot.effect(base, rich, heads)
    >>> round(effect, 3), lo < effect < hi, p  # every replicate's effect > 0: p = 1 / 200
    (0.287, True, 0.005)
    >>> out = ClusterBootstrap(n_boot=199, random_state=0, bootstrap="studentized").effect(
    ...     base, rich, heads
    ... )
    >>> round(out[0], 3), out[3]
    (0.287, 0.005)

    Equivalence: far from a SESOI of 1, not below one of 0.3:

    >>> boot.equivalence(base, rich, heads, 1.0)
    0.005
    >>> boot.equivalence(base, rich, heads, 0.3) > 0.05
    True
    """

    n_boot: int = 2000
    ci_level: float = 0.95
    bootstrap: str = "cluster"
    random_state: int | np.random.Generator | None = None

    def __post_init__(self) -> None:
        if self.bootstrap not in BOOTSTRAPS:
            raise ParameterError("bootstrap", "one of " + ", ".join(BOOTSTRAPS), self.bootstrap)
        object.__setattr__(self, "n_boot", check_int("n_boot", self.n_boot, minimum=99))

    def effect(
        self,
        base: np.ndarray,
        rich: np.ndarray,
        clusters: np.ndarray,
        *,
        higher_is_better: bool = False,
        strata: np.ndarray | None = None,
    ) -> tuple[float, float, float, float]:
        """Effect with its CI and one-sided p.

        Parameters
        ----------
        base, rich : array (n,)
            Per-cell metric values of the two models.
        clusters : array (n,)
            Cluster (head) of each cell.
        higher_is_better : bool, keyword-only
            Effect is ``mean(rich) - mean(base)`` when True, else
            ``mean(base) - mean(rich)``.
        strata : array (n,) or None, keyword-only
            Stratum of each cell (constant within a cluster): clusters are resampled
            within strata (:func:`bootstrap_counts`).

        Returns
        -------
        effect, ci_low, ci_high, p_value : float
        """
        eff, eff_b, studentized = self._replicates(base, rich, clusters, strata, higher_is_better)
        if studentized is not None:
            return studentized_ci_and_p(*studentized, self.ci_level)
        lo, hi, p = percentile_ci_and_p(eff_b, self.ci_level)
        return eff, lo, hi, p

    def equivalence(
        self,
        base: np.ndarray,
        rich: np.ndarray,
        clusters: np.ndarray,
        sesoi: float,
        *,
        higher_is_better: bool = False,
        strata: np.ndarray | None = None,
    ) -> float:
        """One-sided equivalence p of ``H0: effect >= sesoi`` (``sesoi`` > 0, in the
        effect's units; :func:`percentile_equivalence_p` or
        :func:`studentized_equivalence_p`); the other arguments as in :meth:`effect`."""
        ok = isinstance(sesoi, (int, float)) and not isinstance(sesoi, bool) and np.isfinite(sesoi)
        if not ok or sesoi <= 0:
            raise ParameterError("sesoi", "a finite number > 0", sesoi)
        _, eff_b, studentized = self._replicates(base, rich, clusters, strata, higher_is_better)
        if studentized is not None:
            return studentized_equivalence_p(*studentized, float(sesoi))
        return percentile_equivalence_p(eff_b, float(sesoi))

    def _replicates(
        self, base, rich, clusters, strata, higher_is_better
    ) -> tuple[float, np.ndarray | None, tuple | None]:
        """The signed effect and what the chosen bootstrap needs of the draws: the
        replicate effects (percentile; the third item None) or the arguments ``(d, n_h,
        counts, per_cluster)`` of the studentized functions (the second item None)."""
        rng = check_random_state(self.random_state)
        base = np.asarray(base, float)
        rich = np.asarray(rich, float)
        codes, per_cluster, counts = _draw_units(np.asarray(clusters), strata, self.n_boot, rng)
        sign = 1.0 if higher_is_better else -1.0
        eff = float(sign * (rich.mean() - base.mean()))
        if self.bootstrap == "studentized":
            k = per_cluster.size
            d = np.bincount(codes, weights=sign * (rich - base), minlength=k)
            n_h = np.bincount(codes, minlength=k).astype(float)
            return eff, None, (d, n_h, counts, per_cluster)
        eff_b = sign * (replicate_means(rich, codes, counts) - replicate_means(base, codes, counts))
        return eff, eff_b, None


@dataclass(frozen=True)
class _Draws:
    """One set of cluster-bootstrap resamples of the held-out units (heads by default),
    shared by every pair and metric: each held-out cell's unit code, the stratum of each
    unit (zeros without strata), the number of units, the ``[B, units]`` counts, the
    unit sizes (cells) and the number of held-out heads."""

    codes: np.ndarray
    per_cluster: np.ndarray
    n_units: int
    counts: np.ndarray
    head_sizes: np.ndarray
    n_heads: int


def _held_out_draws(
    table: pd.DataFrame,
    clusters: np.ndarray,
    held: np.ndarray,
    n_boot: int,
    rng: np.random.Generator,
    unit: str = "head",
    stratum: str = "stratum",
) -> _Draws:
    """The cluster bootstrap over held-out units (heads, or the table's ``unit`` column,
    constant within each head), within strata when the table has them."""
    n_heads = len(set(clusters[held]))
    units = clusters
    if unit != "head":
        if unit not in table.columns:
            raise ParameterError("table", f"a column named {unit} (the resampling unit)", "missing")
        units = table[unit].astype(str).to_numpy()
        per_head = pd.DataFrame({"h": clusters, "u": units}).drop_duplicates()
        if per_head["h"].duplicated().any():
            bad = per_head.loc[per_head["h"].duplicated(), "h"].iloc[0]
            raise ParameterError(unit, "one unit per head", f"head {bad} in several")
    strata = None
    if stratum in table.columns:
        strata = table[stratum].astype(str).to_numpy()
        cluster_strata(units, strata)  # every unit in one stratum, training ones too
        strata = strata[held]
    codes, per_cluster, counts = _draw_units(units[held], strata, n_boot, rng)
    n_units = per_cluster.size
    head_sizes = np.bincount(codes, minlength=n_units).astype(float)
    return _Draws(codes, per_cluster, n_units, counts, head_sizes, n_heads)


def _draw_units(
    units: np.ndarray, strata: np.ndarray | None, n_boot: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each cell's unit code, each unit's stratum (zeros without strata) and the
    ``[B, units]`` counts of B resamples of the units, within strata when given."""
    if strata is None:
        codes, uniq = pd.factorize(units)
        per_cluster = np.zeros(len(uniq), dtype=int)
        return codes, per_cluster, bootstrap_counts(len(uniq), n_boot, rng)
    codes, per_cluster = cluster_strata(units, strata)
    return codes, per_cluster, bootstrap_counts(per_cluster.size, n_boot, rng, per_cluster)
