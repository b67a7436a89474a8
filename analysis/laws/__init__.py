"""Geometric laws: how ``r_eps`` of synthetic self-attention grows with inverse temperature.

``attnrank laws`` brackets ``r_eps(A)`` over a beta sweep of a synthetic family and fits the
slope of ``log r`` against ``log(1 + beta)`` (spherical) or ``log beta`` (full ball), using
the certified brackets as interval-valued outcomes.

Modules
-------
- :mod:`analysis.laws.sweep`: configurations, presets, beta grids, jobs, the resumable
  JSON-lines cache and the bracketing (process pool); why the default sweeps are what they
  are.
- :mod:`analysis.laws.fit`: interval-ML slope fits with bootstrap CIs, midpoint OLS, the
  identified and threading slope sets, local slopes; why each is reported.
- :mod:`analysis.laws.theory`: the asymptotic slopes and the spherical harmonic rank count.
- :mod:`analysis.laws.render`: tables, the figure, ``results.json`` and :func:`run_laws`.
- the ``attnrank laws`` subcommand is :mod:`analysis.cli.laws`.

Theory (docs/method.md section 6, the paper's earlier version)
--------------------------------------------------------------
- ``spherical``: n points uniform on the unit sphere of R^d, logits ``beta <x_i, x_j>``
  (exactly :func:`analysis.sources.synthetic.spherical`, whose ``beta`` is this beta):
  ``r_eps = Theta(min{n, (1 + beta)^((d - 1) / 2)})``, slope ``(d - 1) / 2``. The paper's
  fitted slopes are 0.504 / 1.012 / 1.381 for d = 2 / 3 / 4.
- ``ball``: n points uniform in the unit ball, same logits:
  ``r_eps = Theta(beta^(d / 2))`` for large beta and ``n >= C_d e^(beta / 8)``; slope
  ``d / 2``. Each fit reports ``n_ok``: ``n >= e^(beta / 8)`` over its whole beta range
  (``C_d`` is unknown, so this is the condition with ``C_d = 1``).
- What the spherical theory predicts at *finite* beta, with no bracket involved: the
  harmonic rank count of :mod:`analysis.laws.theory` (spherical harmonics up to the last
  degree whose softmax eigenvalue ``I_(l + nu)(beta) / I_nu(beta)`` is above eps). Each
  spherical fit reports its slope over the sweep's own betas (``harmonic_slope``), over
  the upper half, and how many certified brackets contain the count. A certified slope
  that misses ``(d - 1) / 2`` but matches ``harmonic_slope`` points at the grid (the
  pre-asymptotic Taylor regime of the kernel), not at the engine.
"""

from __future__ import annotations

from analysis.laws.fit import (
    PAPER_SLOPES,
    QUICK_TOLERANCE,
    TOLERANCE,
    LawFit,
    fit_law,
    fit_slope,
    identified_slopes,
    law_x,
    local_slopes,
    log_bounds,
    threading_slopes,
)
from analysis.laws.render import fits_frame, local_frame, markdown_table, plot_law, run_laws
from analysis.laws.sweep import (
    ASYMPTOTIC_MIN_POINTS,
    CHECKPOINT_NAME,
    DEFAULT_BETAS,
    DESIGNS,
    SweepConfig,
    bracket_job,
    default_config,
    job_key,
    make_config,
    read_checkpoint,
    run_sweep,
)
from analysis.laws.theory import (
    FAMILIES,
    POWERS,
    asymptotic_betas,
    asymptotic_onset,
    harmonic_dimension,
    harmonic_rank,
    harmonic_slope,
    local_harmonic_slopes,
    n_for_asymptotic_grid,
    theory_slope,
)

__all__ = [
    "ASYMPTOTIC_MIN_POINTS",
    "CHECKPOINT_NAME",
    "DEFAULT_BETAS",
    "DESIGNS",
    "FAMILIES",
    "PAPER_SLOPES",
    "POWERS",
    "QUICK_TOLERANCE",
    "TOLERANCE",
    "LawFit",
    "SweepConfig",
    "asymptotic_betas",
    "asymptotic_onset",
    "bracket_job",
    "default_config",
    "fit_law",
    "fit_slope",
    "fits_frame",
    "harmonic_dimension",
    "harmonic_rank",
    "harmonic_slope",
    "identified_slopes",
    "job_key",
    "law_x",
    "local_frame",
    "local_harmonic_slopes",
    "local_slopes",
    "log_bounds",
    "make_config",
    "markdown_table",
    "n_for_asymptotic_grid",
    "plot_law",
    "read_checkpoint",
    "run_laws",
    "run_sweep",
    "theory_slope",
    "threading_slopes",
]
