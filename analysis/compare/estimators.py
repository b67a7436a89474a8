"""Estimators of y from covariates: interval (censored Gaussian) ML, OLS, ridge.

All take a covariate matrix *without* intercept (one is added) and interval outcomes
``[a, b]`` (``a == b`` is a point observation), and return a :class:`FittedModel`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import statsmodels.api as sm
from scipy.special import log_ndtr
from statsmodels.base.model import GenericLikelihoodModel

from analysis.validation import ParameterError, check_int

__all__ = [
    "ESTIMATORS",
    "FittedModel",
    "IntervalRegression",
    "fit_interval",
    "fit_ols",
    "fit_ridge",
    "fit_estimator",
    "interval_loglik_obs",
]

ESTIMATORS: tuple[str, ...] = ("interval", "ols", "ridge")
_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


def _log_phi(z: np.ndarray) -> np.ndarray:
    return -0.5 * z * z - _LOG_SQRT_2PI


def _log_dPhi(za: np.ndarray, zb: np.ndarray) -> np.ndarray:
    """``log(Phi(zb) - Phi(za))`` for ``za < zb``, stable in both tails."""
    flip = za > 0
    lo = np.where(flip, -zb, za)
    hi = np.where(flip, -za, zb)
    lhi = log_ndtr(hi)
    llo = log_ndtr(lo)
    with np.errstate(divide="ignore", invalid="ignore"):
        return lhi + np.log1p(-np.exp(llo - lhi))


def interval_loglik_obs(
    mu: np.ndarray, sigma: float, lower: np.ndarray, upper: np.ndarray
) -> np.ndarray:
    """Per-observation log-likelihood of intervals under ``N(mu, sigma^2)``.

    Notes
    -----
    For ``a < b``: ``log(Phi((b - mu)/sigma) - Phi((a - mu)/sigma))``; for ``a == b``
    (a closed bracket, a point): ``log phi((a - mu)/sigma) - log sigma``.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare.estimators import interval_loglik_obs
    >>> lower, upper = np.array([0.0, -1.0]), np.array([0.0, 1.0])
    >>> ll = interval_loglik_obs(np.zeros(2), 1.0, lower, upper)
    >>> ll.round(4).tolist()  # log phi(0); log(Phi(1) - Phi(-1)) = log 0.6827
    [-0.9189, -0.3817]
    """
    mu = np.asarray(mu, float)
    point = lower == upper
    out = np.empty_like(mu)
    z = (lower[point] - mu[point]) / sigma
    out[point] = _log_phi(z) - np.log(sigma)
    iv = ~point
    out[iv] = _log_dPhi((lower[iv] - mu[iv]) / sigma, (upper[iv] - mu[iv]) / sigma)
    return out


class IntervalRegression(GenericLikelihoodModel):
    """Censored (interval) Gaussian regression, ``y* = X beta + sigma e``.

    Parameters
    ----------
    lower, upper : array_like
        Interval ends (``-inf`` / ``inf`` allowed; ``lower == upper`` is a point).
    exog : array_like
        Design matrix including any intercept column.
    **kwds
        Passed to :class:`statsmodels.base.model.GenericLikelihoodModel`.

    Notes
    -----
    Parameters are ``(beta, log sigma)``. The log-likelihood is a sum of
    ``log phi(z) - log sigma`` over points and ``log(Phi(z_b) - Phi(z_a))`` over
    intervals, ``z = (y - x'beta) / sigma``. The score is analytic:
    ``d/dmu = z / sigma`` (points), ``(phi(z_a) - phi(z_b)) / (sigma D)`` (intervals,
    ``D = Phi(z_b) - Phi(z_a)``); ``d/dlog sigma = z^2 - 1`` (points),
    ``(z_a phi(z_a) - z_b phi(z_b)) / D`` (intervals, with ``z phi(z) = 0`` at infinity).

    Examples
    --------
    A statsmodels likelihood model; :func:`fit_interval` is the usual way to fit it.

    >>> import numpy as np
    >>> from analysis.datasets import example_intervals
    >>> x, lower, upper = example_intervals()  # brackets of y = 1 + 2 x + noise
    >>> from analysis.compare.estimators import IntervalRegression
    >>> model = IntervalRegression(lower, upper, np.column_stack([np.ones(40), x]))
    >>> params = np.asarray(model.fit(disp=0).params)  # (intercept, slope, log sigma)
    >>> params[:2].round(1).tolist()
    [1.0, 2.1]
    """

    def __init__(self, lower, upper, exog, **kwds):
        lower = np.asarray(lower, float)
        upper = np.asarray(upper, float)
        self._lower = lower
        self._upper = upper
        self._point = lower == upper
        endog = np.where(
            np.isfinite(lower + upper),
            0.5 * (lower + upper),
            np.where(np.isfinite(lower), lower, upper),
        )
        super().__init__(endog, exog, extra_params_names=["log_sigma"], **kwds)
        self.k_extra = 1
        self.df_model = self.exog.shape[1] - 1
        self.df_resid = self.exog.shape[0] - self.exog.shape[1] - 1

    def _parts(self, params):
        beta = params[:-1]
        log_sigma = params[-1]
        sigma = np.exp(log_sigma)
        mu = self.exog @ beta
        return mu, sigma

    def loglikeobs(self, params):
        mu, sigma = self._parts(params)
        return interval_loglik_obs(mu, sigma, self._lower, self._upper)

    def nloglikeobs(self, params):
        return -self.loglikeobs(params)

    def loglike(self, params):
        return float(np.sum(self.loglikeobs(params)))

    def score_obs(self, params):
        mu, sigma = self._parts(params)
        lo, up, pt = self._lower, self._upper, self._point
        d_mu = np.empty_like(mu)
        d_ls = np.empty_like(mu)
        z = (lo[pt] - mu[pt]) / sigma
        d_mu[pt] = z / sigma
        d_ls[pt] = z * z - 1.0
        iv = ~pt
        za = (lo[iv] - mu[iv]) / sigma
        zb = (up[iv] - mu[iv]) / sigma
        log_d = _log_dPhi(za, zb)
        ra = np.exp(_log_phi(za) - log_d)  # phi(z_a) / D (0 when z_a = -inf)
        rb = np.exp(_log_phi(zb) - log_d)
        d_mu[iv] = (ra - rb) / sigma
        za_f = np.where(np.isfinite(za), za, 0.0)
        zb_f = np.where(np.isfinite(zb), zb, 0.0)
        d_ls[iv] = za_f * ra - zb_f * rb
        return np.column_stack([self.exog * d_mu[:, None], d_ls])

    def score(self, params):
        return self.score_obs(params).sum(axis=0)

    def start_params_ols(self) -> np.ndarray:
        y = self.endog
        beta, *_ = np.linalg.lstsq(self.exog, y, rcond=None)
        resid = y - self.exog @ beta
        s = max(float(np.std(resid)), 1e-3)
        return np.append(beta, np.log(s))


@dataclass(frozen=True)
class FittedModel:
    """A fitted predictor of the latent log2 rank.

    Attributes
    ----------
    estimator : str
    coef : ndarray
        Intercept first, then one coefficient per covariate column.
    sigma : float
        Residual scale on the log2 scale (ML for ``interval``; residual SD of the
        training midpoints for ``ols`` / ``ridge``).
    loglik : float
        In-sample interval log-likelihood on the training cells.
    n_params : int
        Number of estimated parameters (coefficients + sigma).
    bse : ndarray or None
        Standard errors of ``coef`` (``interval`` with ``cov=True``, and ``ols``).
    alpha : float or None
        Chosen ridge penalty.
    converged : bool
        The optimizer's own stopping test passed and the solution is finite. Closed-form
        fits (``ols``, ``ridge``) are converged when their coefficients are finite.
    iterations : int
        Optimizer iterations (``interval``: BFGS plus any L-BFGS retry, counted by a
        per-iteration callback); 0 for the closed-form ``ols`` and ``ridge``.
    grad_norm : float
        Largest absolute component of the gradient, at the solution, of the objective
        the fit minimizes, averaged over training cells: the mean negative interval
        log-likelihood for ``interval`` (the quantity BFGS's ``gtol = 1e-7`` tests);
        half the mean squared midpoint residual for ``ols``; the ridge objective
        ``(||y - b0 - X b||^2 + alpha ||b||^2) / (2 n)`` for ``ridge``. A closed-form
        solution leaves only rounding error (about 1e-15). NaN when not finite.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare.estimators import FittedModel
    >>> model = FittedModel("ols", coef=np.array([1.0, 2.0]), sigma=0.5, loglik=-3.0, n_params=3)
    >>> model.predict(np.array([[0.0], [1.5]])).tolist()  # 1 + 2 x
    [1.0, 4.0]
    """

    estimator: str
    coef: np.ndarray
    sigma: float
    loglik: float
    n_params: int
    bse: np.ndarray | None = None
    alpha: float | None = None
    converged: bool = True
    iterations: int = 0
    grad_norm: float = float("nan")

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predicted latent mean ``mu = b0 + X b``."""
        X = np.asarray(X, float)
        return self.coef[0] + X @ self.coef[1:]


def _with_const(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X, float)
    return np.column_stack([np.ones(X.shape[0]), X])


def _max_abs(grad: np.ndarray) -> float:
    """The gradient's largest absolute component (NaN when any is not finite)."""
    grad = np.asarray(grad, float)
    return float(np.max(np.abs(grad))) if np.all(np.isfinite(grad)) else float("nan")


def fit_interval(
    X: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    cov: bool = False,
    maxiter: int = 200,
) -> FittedModel:
    """Interval (censored Gaussian) regression by maximum likelihood.

    Parameters
    ----------
    X : array (n, k)
        Covariates without intercept.
    lower, upper : array (n,)
        Interval ends on the log2 scale.
    cov : bool, keyword-only
        Compute standard errors (numerical Hessian of the analytic score); off in the
        comparison pipeline, where only predictions are used.
    maxiter : int, keyword-only
        Iteration cap of the BFGS run (>= 1); the L-BFGS retry, when BFGS stops short,
        gets ``10 * maxiter``. A fit that stops at a cap is reported
        ``converged=False``.

    Returns
    -------
    FittedModel
        With ``converged``, ``iterations`` and ``grad_norm`` (see :class:`FittedModel`).

    Notes
    -----
    BFGS from the OLS-on-midpoints start, ``gtol = 1e-7`` on the mean score. When BFGS
    reports failure (iteration cap, or a line search that lost precision), L-BFGS
    continues from where it stopped; its own test (projected gradient or relative
    decrease of the objective) then decides ``converged``. Non-finite parameters or
    log-likelihood always count as not converged.

    Examples
    --------
    >>> from analysis.datasets import example_intervals
    >>> x, lower, upper = example_intervals()  # brackets of y = 1 + 2 x + noise
    >>> from analysis.compare.estimators import fit_interval
    >>> model = fit_interval(x[:, None], lower, upper, cov=True)
    >>> model.coef.round(1).tolist(), model.converged, model.bse.shape
    ([1.0, 2.1], True, (2,))
    >>> bool(model.sigma < 0.2)  # the latent noise, not the bracket width
    True
    """
    maxiter = check_int("maxiter", maxiter, minimum=1)
    model = IntervalRegression(lower, upper, _with_const(X))
    start = model.start_params_ols()
    steps = [0]

    def count(_params) -> None:  # called once per optimizer iteration
        steps[0] += 1

    res = model.fit(
        start_params=start,
        method="bfgs",
        maxiter=maxiter,
        disp=0,
        skip_hessian=not cov,
        gtol=1e-7,
        callback=count,
    )
    params = np.asarray(res.params, float)
    converged = bool(res.mle_retvals.get("converged", True))
    if not converged:  # a second try with Newton-free robust optimizer
        res = model.fit(
            start_params=params,
            method="lbfgs",
            maxiter=10 * maxiter,
            disp=0,
            skip_hessian=not cov,
            callback=count,
        )
        params = np.asarray(res.params, float)
        converged = bool(res.mle_retvals.get("converged", True))
    loglik = model.loglike(params)
    grad = model.score(params) / model.endog.shape[0]  # the mean score statsmodels fits
    grad_norm = _max_abs(grad)
    converged = converged and bool(np.all(np.isfinite(params)) and np.isfinite(loglik))
    bse = np.asarray(res.bse, float)[:-1] if cov else None
    return FittedModel(
        estimator="interval",
        coef=params[:-1],
        sigma=float(np.exp(params[-1])),
        loglik=loglik,
        n_params=params.size,
        bse=bse,
        converged=converged,
        iterations=steps[0],
        grad_norm=grad_norm,
    )


def _midpoints_checked(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    mid = 0.5 * (np.asarray(lower, float) + np.asarray(upper, float))
    if not np.all(np.isfinite(mid)):
        raise ParameterError(
            "y_lower/y_upper", "finite interval ends for midpoint estimators", "an infinite end"
        )
    return mid


def fit_ols(X: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> FittedModel:
    """OLS on interval midpoints (sensitivity estimator).

    Examples
    --------
    >>> from analysis.datasets import example_intervals
    >>> x, lower, upper = example_intervals()  # brackets of y = 1 + 2 x + noise
    >>> from analysis.compare.estimators import fit_ols
    >>> model = fit_ols(x[:, None], lower, upper)
    >>> model.coef.round(2).tolist(), model.n_params, model.iterations
    ([0.97, 2.07], 3, 0)
    >>> bool(model.grad_norm < 1e-12)  # closed form: only rounding is left
    True
    """
    mid = _midpoints_checked(lower, upper)
    Xc = _with_const(X)
    res = sm.OLS(mid, Xc).fit()
    sigma = float(np.sqrt(res.scale))
    ll = float(np.sum(interval_loglik_obs(res.fittedvalues, sigma, lower, upper)))
    coef = np.asarray(res.params, float)
    # gradient of 0.5 * mean((mid - Xc b)^2): -Xc' r / n (zero up to rounding)
    grad = -(Xc.T @ (mid - Xc @ coef)) / mid.size
    return FittedModel(
        "ols",
        coef,
        sigma,
        ll,
        int(res.params.size) + 1,
        bse=np.asarray(res.bse, float),
        converged=bool(np.all(np.isfinite(coef))),
        iterations=0,
        grad_norm=_max_abs(grad),
    )


def fit_ridge(
    X: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    groups: np.ndarray,
    alphas: np.ndarray | None = None,
    n_splits: int = 5,
) -> FittedModel:
    """Ridge on midpoints, penalty chosen by cross-validation grouped by head.

    Notes
    -----
    ``GridSearchCV(Ridge(), alphas, cv=GroupKFold(min(n_splits, n_heads)))`` with mean
    squared error; whole heads leave together, so the penalty is tuned for new heads.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.datasets import example_intervals
    >>> x, lower, upper = example_intervals()  # brackets of y = 1 + 2 x + noise
    >>> from analysis.compare.estimators import fit_ridge
    >>> heads = np.repeat(np.arange(8), 5)
    >>> model = fit_ridge(x[:, None], lower, upper, groups=heads, alphas=[0.01, 1.0, 100.0])
    >>> model.alpha, model.coef.round(2).tolist()  # little shrinkage helps here
    (0.01, [0.97, 2.07])
    """
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import GridSearchCV, GroupKFold

    mid = _midpoints_checked(lower, upper)
    X = np.asarray(X, float)
    groups = np.asarray(groups)
    n_groups = np.unique(groups).size
    if n_groups < 2:
        raise ParameterError("groups", "at least 2 heads for grouped CV", n_groups)
    grid = np.logspace(-3, 3, 13) if alphas is None else np.asarray(alphas, float)
    search = GridSearchCV(
        Ridge(),
        {"alpha": grid},
        cv=GroupKFold(min(n_splits, n_groups)),
        scoring="neg_mean_squared_error",
    )
    search.fit(X, mid, groups=groups)
    best = search.best_estimator_
    coef = np.append(best.intercept_, best.coef_)
    fitted = best.predict(X)
    sigma = float(np.sqrt(np.mean((mid - fitted) ** 2)))
    ll = float(np.sum(interval_loglik_obs(fitted, sigma, lower, upper)))
    alpha = float(search.best_params_["alpha"])
    # gradient of (||mid - b0 - X b||^2 + alpha ||b||^2) / (2 n), intercept unpenalized
    resid = mid - fitted
    grad = np.append(-resid.mean(), (-(X.T @ resid) + alpha * best.coef_) / mid.size)
    return FittedModel(
        "ridge",
        coef,
        sigma,
        ll,
        X.shape[1] + 2,
        alpha=alpha,
        converged=bool(np.all(np.isfinite(coef))),
        iterations=0,
        grad_norm=_max_abs(grad),
    )


def fit_estimator(
    estimator: str,
    X: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    groups: np.ndarray | None = None,
    maxiter: int = 200,
) -> FittedModel:
    """Dispatch to :func:`fit_interval`, :func:`fit_ols` or :func:`fit_ridge`.

    ``maxiter`` is the interval fit's iteration cap (see :func:`fit_interval`); the
    closed-form ``ols`` and ``ridge`` have none and ignore it.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare.estimators import fit_estimator
    >>> X, lower = np.arange(6.0)[:, None], np.arange(6.0)
    >>> fit_estimator("ols", X, lower, lower + 1.0).coef.round(6).tolist()  # mid = x + 0.5
    [0.5, 1.0]
    >>> fit_estimator("ridge", X, lower, lower + 1.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: groups: expected head ids for grouped CV (ridge)...
    """
    if estimator == "interval":
        return fit_interval(X, lower, upper, maxiter=maxiter)
    if estimator == "ols":
        return fit_ols(X, lower, upper)
    if estimator == "ridge":
        if groups is None:
            raise ParameterError("groups", "head ids for grouped CV (ridge)", None)
        return fit_ridge(X, lower, upper, groups=groups)
    raise ParameterError("estimator", "one of " + ", ".join(ESTIMATORS), estimator)
