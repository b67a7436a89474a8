"""Held-out metrics for interval-valued outcomes."""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata

from analysis.compare.estimators import interval_loglik_obs

__all__ = ["METRICS", "HIGHER_IS_BETTER", "interval_sq_loss", "interval_loglik", "spearman"]

METRICS: tuple[str, ...] = ("interval_sq_loss", "interval_loglik", "spearman_mid")
#: For these metrics the effect is rich minus base; for losses base minus rich.
HIGHER_IS_BETTER: dict[str, bool] = {
    "interval_sq_loss": False,
    "interval_loglik": True,
    "spearman_mid": True,
}


def interval_sq_loss(y_hat: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Per-cell ``dist(y_hat, [a, b])^2`` (0 inside the interval).

    Notes
    -----
    ``dist = max(a - y_hat, 0, y_hat - b)``.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare.metrics import interval_sq_loss
    >>> lower, upper = np.full(3, 1.0), np.full(3, 3.0)
    >>> interval_sq_loss(np.array([0.0, 2.0, 5.0]), lower, upper).tolist()  # below, inside, above
    [1.0, 0.0, 4.0]
    """
    y_hat = np.asarray(y_hat, float)
    d = np.maximum(np.maximum(lower - y_hat, 0.0), y_hat - upper)
    return d * d


def interval_loglik(
    y_hat: np.ndarray, sigma: float, lower: np.ndarray, upper: np.ndarray
) -> np.ndarray:
    """Per-cell interval log-likelihood under ``N(y_hat, sigma^2)`` (see estimators).

    Examples
    --------
    A point ``[0, 0]`` scores the normal log-density at 0, ``-log(2 pi) / 2``; the
    half-line ``(-inf, 0]`` scores ``log Phi(0) = -log 2``:

    >>> import numpy as np
    >>> from analysis.compare.metrics import interval_loglik
    >>> lower, upper = np.array([0.0, -np.inf]), np.array([0.0, 0.0])
    >>> interval_loglik(np.zeros(2), 1.0, lower, upper).round(4).tolist()
    [-0.9189, -0.6931]
    """
    return interval_loglik_obs(y_hat, sigma, lower, upper)


def spearman(x: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Spearman correlation; ``weights`` (integer counts) repeat cells as in a bootstrap.

    Notes
    -----
    With counts ``w``, the ranks are those of the sample in which cell i appears
    ``w_i`` times (average ranks for ties), and the correlation is the weighted Pearson
    correlation of those ranks.

    Examples
    --------
    >>> from analysis.compare.metrics import spearman
    >>> spearman([1, 2, 3, 4], [10, 20, 40, 30])  # one swapped pair: 1 - 6 * 2 / (4 * 15)
    0.8
    >>> spearman([1, 2, 3], [3, 1, 2], weights=[2, 0, 1])  # the middle cell is left out
    -1.0
    """
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    if weights is None:
        rx, ry = rankdata(x), rankdata(y)
        w = np.ones_like(rx)
    else:
        w = np.asarray(weights, float)
        keep = w > 0
        x, y, w = x[keep], y[keep], w[keep]
        rx, ry = _weighted_ranks(x, w), _weighted_ranks(y, w)
    if w.size < 2:  # e.g. a bootstrap replicate whose cells all have infinite midpoints
        return float("nan")
    mx = np.average(rx, weights=w)
    my = np.average(ry, weights=w)
    cov = np.sum(w * (rx - mx) * (ry - my))
    den = np.sqrt(np.sum(w * (rx - mx) ** 2) * np.sum(w * (ry - my) ** 2))
    return float(cov / den) if den > 0 else float("nan")


def _weighted_ranks(v: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Average rank of each value in the sample that repeats value i w_i times."""
    uniq, inv = np.unique(v, return_inverse=True)
    tot = np.bincount(inv, weights=w)
    upto = np.cumsum(tot)
    avg = upto - tot + (tot + 1.0) / 2.0
    return avg[inv]
