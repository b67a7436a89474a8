"""In-sample tests of each pair's added coefficients (secondary; training cells).

Method 2 (the default; every locked design): the likelihood-ratio statistic
``2 (l_rich - l_base)`` against ``chi2(k_rich - k_base)`` (:func:`lr_tests`). It treats
cells as independent, so with many cells per head it is anti-conservative.

Method 3: a Wald test of the rich model's added coefficients with a cluster-robust
(sandwich) covariance, clustered by the design's resampling unit
(:func:`cluster_wald_tests`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import chi2

from analysis.compare.estimators import FittedModel, IntervalRegression

__all__ = ["WALD_TEST", "cluster_wald_tests", "lr_tests", "pair_tests"]

#: ``test`` of a method-3 row.
WALD_TEST = "cluster-robust Wald"


def _status(base: FittedModel, rich: FittedModel) -> str:
    return "ok" if base.converged and rich.converged else "fit failed"


def lr_tests(pairs: Sequence[tuple[str, str]], fits: Mapping[str, FittedModel]) -> pd.DataFrame:
    """The in-sample likelihood-ratio test of each pair (method 2).

    Parameters
    ----------
    pairs : sequence of (base, rich)
    fits : mapping
        Model -> :class:`~analysis.compare.estimators.FittedModel`.

    Returns
    -------
    pandas.DataFrame
        ``pair``, ``base_model``, ``rich_model``, ``statistic``, ``df``, ``p_value``,
        ``status``.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare.estimators import FittedModel
    >>> from analysis.compare.lrtests import lr_tests
    >>> fits = {"M0": FittedModel("ols", np.zeros(2), 1.0, -10.0, 3),
    ...         "M1": FittedModel("ols", np.zeros(3), 1.0, -8.0, 4)}
    >>> lr_tests([("M0", "M1")], fits)[["statistic", "df"]].to_dict("records")
    [{'statistic': 4.0, 'df': 1}]
    """
    rows = []
    for b, r in pairs:
        stat = 2.0 * (fits[r].loglik - fits[b].loglik)
        df = fits[r].n_params - fits[b].n_params
        rows.append(
            {
                "pair": f"{b}<{r}",
                "base_model": b,
                "rich_model": r,
                "statistic": stat,
                "df": df,
                "p_value": float(chi2.sf(stat, df)) if df > 0 else np.nan,
                "status": _status(fits[b], fits[r]),
            }
        )
    return pd.DataFrame(rows)


def _sandwich(scores: np.ndarray, bread: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """``A^-1 (G / (G - 1)) sum_g s_g s_g' A^-1`` with ``s_g`` the summed scores of group
    g and ``A`` the bread (negative Hessian, or ``X'X``)."""
    codes, uniq = pd.factorize(np.asarray(groups))
    g = len(uniq)
    s = np.zeros((g, scores.shape[1]))
    np.add.at(s, codes, scores)
    meat = s.T @ s * (g / (g - 1.0))
    inv = np.linalg.pinv(bread)
    return inv @ meat @ inv


def _robust_cov(fit: FittedModel, X: np.ndarray, lower, upper, groups) -> np.ndarray | None:
    """The cluster-robust covariance of ``fit``'s coefficients (intercept first), or None
    for an estimator without one (ridge)."""
    Xc = np.column_stack([np.ones(X.shape[0]), np.asarray(X, float)])
    if fit.estimator == "interval":
        model = IntervalRegression(lower, upper, Xc)
        params = np.append(fit.coef, np.log(fit.sigma))
        cov = _sandwich(model.score_obs(params), -model.hessian(params), groups)
        return cov[:-1, :-1]
    if fit.estimator == "ols":
        resid = 0.5 * (lower + upper) - Xc @ fit.coef
        return _sandwich(Xc * resid[:, None], Xc.T @ Xc, groups)
    return None


def cluster_wald_tests(
    pairs: Sequence[tuple[str, str]],
    fits: Mapping[str, FittedModel],
    columns: Mapping[str, Sequence[str]],
    matrices: Mapping[str, np.ndarray],
    intervals: tuple[np.ndarray, np.ndarray],
    groups: np.ndarray,
) -> pd.DataFrame:
    """The cluster-robust Wald test of each pair's added coefficients (method 3).

    Parameters
    ----------
    pairs : sequence of (base, rich)
    fits : mapping
        Model -> fitted model (on the training cells).
    columns : mapping
        Model -> its kept covariate columns (the columns of its matrix).
    matrices : mapping
        Model -> its design matrix on the training cells (no intercept).
    intervals : (lower, upper)
        The training cells' log2 interval ends.
    groups : array
        Each training cell's cluster (the design's resampling unit).

    Returns
    -------
    pandas.DataFrame
        ``pair``, ``base_model``, ``rich_model``, ``test`` (:data:`WALD_TEST`),
        ``statistic``, ``df``, ``p_value``, ``clusters``, ``status``. NaN statistic and
        p for a failed fit, for a ridge fit (no sandwich for a penalized fit; status
        says so) and for a pair that adds no column.

    Notes
    -----
    For the rich model's coefficients ``b`` of the columns it has and the base model
    lacks, ``W = b' V^-1 b`` against ``chi2(q)``, ``q`` the number of such columns, with
    ``V`` the matching block of the sandwich ``A^-1 B A^-1``: ``A`` the negative
    Hessian of the interval log-likelihood (the interval estimator; ``X'X`` for OLS on
    midpoints), ``B = G / (G - 1) sum_g s_g s_g'`` with ``s_g`` the summed per-cell
    scores of cluster g among the G clusters of training cells. Cells of one cluster
    may be correlated; clusters are taken as independent.

    Examples
    --------
    Ten clusters of eight cells whose outcome does not depend on ``z``:

    >>> import numpy as np
    >>> from analysis.compare.estimators import fit_ols
    >>> from analysis.compare.lrtests import cluster_wald_tests
    >>> rng = np.random.default_rng(0)
    >>> x, z, g = rng.normal(size=80), rng.normal(size=80), np.repeat(np.arange(10), 8)
    >>> lo = np.floor(x + rng.normal(size=10)[g])
    >>> X = {"M0": x[:, None], "M1": np.column_stack([x, z])}
    >>> fits = {m: fit_ols(X[m], lo, lo + 1) for m in X}
    >>> out = cluster_wald_tests([("M0", "M1")], fits, {"M0": ["x"], "M1": ["x", "z"]},
    ...                          X, (lo, lo + 1), g)
    >>> out[["test", "df", "clusters", "status"]].to_dict("records")
    [{'test': 'cluster-robust Wald', 'df': 1, 'clusters': 10, 'status': 'ok'}]
    >>> bool(out["p_value"].iloc[0] > 0.05)
    True
    """
    lower, upper = (np.asarray(v, float) for v in intervals)
    n_groups = len(pd.unique(np.asarray(groups)))
    rows = []
    for b, r in pairs:
        status = _status(fits[b], fits[r])
        added = [i for i, c in enumerate(columns[r]) if c not in set(columns[b])]
        stat = np.nan
        if status == "ok" and added:
            cov = _robust_cov(fits[r], matrices[r], lower, upper, groups)
            if cov is None:
                status = f"not available for the {fits[r].estimator} estimator"
            else:
                idx = np.array(added) + 1  # the intercept comes first
                coef = fits[r].coef[idx]
                stat = float(coef @ np.linalg.pinv(cov[np.ix_(idx, idx)]) @ coef)
        rows.append(
            {
                "pair": f"{b}<{r}",
                "base_model": b,
                "rich_model": r,
                "test": WALD_TEST,
                "statistic": stat,
                "df": len(added),
                "p_value": float(chi2.sf(stat, len(added))) if np.isfinite(stat) else np.nan,
                "clusters": n_groups,
                "status": status,
            }
        )
    return pd.DataFrame(rows)


def pair_tests(
    method: int,
    pairs: Sequence[tuple[str, str]],
    fits: Mapping[str, FittedModel],
    prep: Any,
    train: np.ndarray,
    units: np.ndarray,
    intervals: tuple[np.ndarray, np.ndarray],
) -> pd.DataFrame:
    """The secondary in-sample tests a comparison of ``method`` reports.

    Parameters
    ----------
    method : {2, 3}
        2: :func:`lr_tests`; 3: :func:`cluster_wald_tests`.
    pairs : sequence of (base, rich)
    fits : mapping
        Model -> fitted model.
    prep : PreparedCovariates
        The covariates the fits used (``columns``, ``matrices`` over every row).
    train : array of bool
        The training rows.
    units : array
        Each row's resampling unit (the clusters of the Wald test).
    intervals : (lower, upper)
        Every row's log2 interval ends.

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare.estimators import FittedModel
    >>> from analysis.compare.lrtests import pair_tests
    >>> fits = {"M0": FittedModel("ols", np.zeros(2), 1.0, -10.0, 3),
    ...         "M1": FittedModel("ols", np.zeros(3), 1.0, -8.0, 4)}
    >>> pair_tests(2, [("M0", "M1")], fits, None, None, None, None)["p_value"].round(4).tolist()
    [0.0455]
    """
    if method != 3:
        return lr_tests(pairs, fits)
    train = np.asarray(train, bool)
    used = {m for p in pairs for m in p}
    mats = {m: prep.matrices[m][train] for m in used}
    lower, upper = (np.asarray(v, float)[train] for v in intervals)
    groups = np.asarray(units)[train]
    return cluster_wald_tests(pairs, fits, prep.columns, mats, (lower, upper), groups)
