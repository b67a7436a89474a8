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

Theory: docs/method.md section 6 and docs/guide/laws.md. The ``spherical`` family is exactly
:func:`analysis.sources.synthetic.spherical` (whose ``beta`` is this beta), slope
``(d - 1) / 2``, the paper's fitted slopes in :data:`analysis.laws.fit.PAPER_SLOPES`. The
``ball`` law (slope ``d / 2``) needs ``n >= C_d e^(beta / 8)``; ``C_d`` is unknown, so each
fit's ``n_ok`` is that condition with ``C_d = 1`` over its whole beta range. Each spherical
fit also holds the harmonic count of :mod:`analysis.laws.theory` against the brackets: its
slope over the sweep's own betas (``harmonic_slope``), over the upper half, and how many
certified brackets contain the count. A certified slope that misses ``(d - 1) / 2`` but
matches ``harmonic_slope`` points at the grid (the pre-asymptotic Taylor regime of the
kernel), not at the engine.
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
