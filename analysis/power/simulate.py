"""Simulated studies of a design, decided by the pre-specified comparison.

A simulated study has the design's sizes (:func:`~analysis.power.inputs.sizes_from_design`),
its blocks' covariate counts, one frozen :class:`PowerAssumptions` for what the design does
not fix, and interval outcomes whose widths are resampled from real bracket widths (never
from a study's held-out heads); the model and the widths: docs/prereg.md, paragraph "The
simulated study". Each is decided by :func:`simulated_comparison`, the confirmatory call
itself (``NestedComparison(ComparisonSpec(models=..., **design.comparison_kwargs())).fit(table)``)
with the simulated blocks' covariate facts (:data:`SIMULATED_COVARIATES`) where the real run
has the descriptor registry's. Error rates, power and the MDE are in
:mod:`analysis.power.error_rates`; power curves and the closed-form approximation in
:mod:`analysis.power.curve`.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

import numpy as np
import pandas as pd

from analysis.compare import ComparisonResult, ComparisonSpec, NestedComparison
from analysis.executor import TaskPool, check_executor, task_pool
from analysis.power.inputs import (
    BASELINE_STRUCTURAL,
    SIMULATED_BLOCKS,
    PowerAssumptions,
    StudySizes,
    _number,
    signal_block,
)
from analysis.power.spec import PowerSpec
from analysis.power.tails import unit_draws
from analysis.power.widths import StratumWidths, WidthModel, _width_model
from analysis.validation import ParameterError, check_random_state

__all__ = [
    "DECISION_COLUMNS",
    "SIMULATED_COVARIATES",
    "simulate_study",
    "simulated_comparison",
    "simulated_decisions",
]

LOG_COLUMNS = ("baseline__n", "baseline__temperature", "baseline__eps", "baseline__stable_rank")
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
#: Columns of :func:`simulated_decisions`: the pair's primary-metric row of each study.
DECISION_COLUMNS: tuple[str, ...] = (
    "effect",
    "ci_low",
    "ci_high",
    "p_value",
    "p_holm",
    "adds_information",
    "base_value",
    "refit_p_value",
)


def simulate_study(
    sizes: StudySizes,
    widths: pd.DataFrame | WidthModel | StratumWidths,
    *,
    share: float,
    assumptions: PowerAssumptions = PowerAssumptions(),
    signal: str = "native",
    random_state: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    """One simulated study as a tidy comparison table.

    Parameters
    ----------
    sizes : StudySizes
    widths : DataFrame from :func:`load_widths`, or a :class:`WidthModel`
    share : float, keyword-only
        Share of the variance M0 leaves that the signal block explains, in [0, 1)
        (0 = the simple null: no block carries information).
    assumptions : PowerAssumptions, keyword-only
    signal : {"native", "intrinsic"}, keyword-only
        The block that carries the signal (:func:`signal_block` of the tested pair).
    random_state : int, Generator or None, keyword-only

    Returns
    -------
    pandas.DataFrame
        ``cell_key``, ``cluster``, ``stratum``, ``held_out``, ``input_id``, ``length``,
        ``y_lower``, ``y_upper``, five baseline columns (``n``, ``temperature``,
        ``eps``, ``entropy``, ``stable_rank``) and ``baseline__p<j>`` proxies up to the
        design's baseline count, then the native (``native__x<j>``) and intrinsic
        (``intrinsic__z<j>``) columns, as many as the design's blocks have.

    Notes
    -----
    The model (cell c of head h: ``y* = f(baseline) + b w_c + u_h + e_c``, ``b^2 = share
    V``, ``V = residual_sd^2``), the interval ``[y* - P w_i, y* - P w_i + w_i]`` with
    ``P ~ Beta(*assumptions.truth_position)`` and ``w_i`` drawn by :meth:`WidthModel.draw`,
    held-out heads drawn per stratum, and the common random numbers across shares:
    docs/prereg.md, paragraph "The simulated study". Column j of the other non-baseline
    block is correlated 0.5 with the signal block's column j mod its count; extra baseline
    columns are ``0.6 entropy + 0.8 noise``.

    Examples
    --------
    A small study (reference widths made up for the example):

    >>> from analysis.datasets import example_sizes, example_widths
    >>> sizes = example_sizes()  # 16 heads (6 held out), 2 cells each, one pair
    >>> widths = example_widths()  # five brackets at eps = 0.1
    >>> from analysis.power.simulate import simulate_study
    >>> table = simulate_study(sizes, widths, share=0.5, random_state=0)
    >>> table.shape, table["cluster"].nunique(), table.loc[table["held_out"], "cluster"].nunique()
    ((32, 15), 16, 6)
    >>> [c for c in table.columns if "__" in c]  # 5 baseline columns, one per other block
    ['baseline__n', 'baseline__temperature', 'baseline__eps', 'baseline__entropy',
     'baseline__stable_rank', 'native__x0', 'intrinsic__z0']
    >>> bool((table["y_lower"] <= table["y_upper"]).all())
    True
    """
    rng = check_random_state(random_state)
    if not (_number(share) and 0 <= share < 1):
        raise ParameterError("share", "a share in [0, 1)", share)
    if not isinstance(assumptions, PowerAssumptions):
        raise ParameterError("assumptions", "a PowerAssumptions", type(assumptions).__name__)
    if signal not in SIMULATED_BLOCKS[1:]:
        raise ParameterError("signal", "native or intrinsic", signal)
    wmodel = _width_model(sizes, widths, assumptions)
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

    # held-out heads per stratum, drawn first (as the design draws per checkpoint)
    held_heads, labels, start = [], np.empty(H, dtype=object), 0
    for label, n_s, k_s in sizes.strata:
        labels[start : start + n_s] = label
        held_heads.extend(start + rng.choice(n_s, size=k_s, replace=False))
        start += n_s
    held = np.isin(head, np.asarray(held_heads, dtype=int))

    s_share = assumptions.native_head_share

    def mixed(size_h: int = 1) -> np.ndarray:
        a = rng.standard_normal((H, size_h))[head]
        b = rng.standard_normal((n, size_h))
        return np.sqrt(s_share) * a + np.sqrt(1 - s_share) * b

    zL = (np.log(L) - np.log(L).mean()) / (np.log(L).std() or 1.0)
    ze = (np.log(e) - np.log(e).mean()) / (np.log(e).std() or 1.0)
    zt = (np.log(t) - np.log(t).mean()) / (np.log(t).std() or 1.0)
    g = rng.standard_normal(H)[head]
    entropy = 0.7 * g + 0.5 * zt + 0.3 * zL + 0.4 * rng.standard_normal(n)
    shift, ent_sd = assumptions.covariate_shift, entropy.std()  # method-3 scenario:
    if shift:  # held-out covariates shifted by `shift` SDs
        entropy = entropy + shift * held * ent_sd
    stable_rank = np.exp(0.5 * entropy + 0.3 * rng.standard_normal(n) + 1.0)
    f = 2.5 + 0.45 * zL - 0.35 * ze + 0.5 * np.tanh(entropy) + 0.25 * entropy
    ent_z = entropy / ent_sd

    w = mixed(1)[:, 0] + shift * held
    k_base = sizes.feature_count("baseline", assumptions) - BASELINE_STRUCTURAL
    k = {b: sizes.feature_count(b, assumptions) for b in SIMULATED_BLOCKS[1:]}
    raw = {b: mixed(k[b]) + shift * held[:, None] for b in SIMULATED_BLOCKS[1:]}
    proxies = 0.6 * ent_z[:, None] + 0.8 * mixed(k_base) if k_base else np.zeros((n, 0))
    blocks = {signal: raw[signal].copy()}
    blocks[signal][:, 0] = 0.3 * ent_z + np.sqrt(0.91) * w
    for b in SIMULATED_BLOCKS[1:]:
        if b != signal:
            partner = blocks[signal][:, np.arange(k[b]) % k[signal]]
            blocks[b] = 0.5 * partner + np.sqrt(0.75) * raw[b]

    V = assumptions.residual_sd**2
    icc = assumptions.icc
    g_share = assumptions.layer_share
    df = assumptions.tail_df  # None: normal; else unit-variance Student-t (tails.py)
    u = unit_draws(rng, H, df)[head] * np.sqrt((icc - g_share) * (1 - share) * V)
    noise = unit_draws(rng, n, df) * np.sqrt((1 - icc) * (1 - share) * V)

    u_width = rng.uniform(size=n)
    position = rng.beta(*assumptions.truth_position, size=n)
    # drawn after everything the hand-set simulator draws, so its numbers are unchanged
    layer, kv = _groups(sizes, labels)
    if g_share > 0:
        u = u + rng.standard_normal(layer.max() + 1)[layer][head] * np.sqrt(
            g_share * (1 - share) * V
        )
    cell_label = labels[head].astype(str)
    offset, scale = np.zeros(n), np.ones(n)
    for label, _, _ in sizes.strata:
        sel = cell_label == label
        offset[sel], scale[sel] = assumptions.stratum_effect(label)
    signal = np.where(held, assumptions.held_out_signal, 1.0) * np.sqrt(share * V) * w
    y = f + offset + signal + scale * u + scale * noise
    if isinstance(wmodel, StratumWidths):
        width = wmodel.draw(e, y, u_width, cell_label)
    else:
        width = wmodel.draw(e, y, u_width)
    lower = y - position * width
    upper = lower + width
    point = width == 0
    lower[point] = upper[point] = y[point]

    cols = {
        "cell_key": [f"sim:{h}:{c}" for h in range(H) for c in range(K)],
        "cluster": [f"sim:{h}" for h in head],
        "stratum": labels[head].astype(str),
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
    if sizes.resampling_unit != "head" or g_share > 0:
        cols["checkpoint_layer"] = [f"sim:L{g}" for g in layer[head]]
        cols["kv_group"] = [f"sim:K{g}" for g in kv[head]]
    cols.update({f"baseline__p{j}": proxies[:, j] for j in range(k_base)})
    cols.update({f"native__x{j}": blocks["native"][:, j] for j in range(k["native"])})
    cols.update({f"intrinsic__z{j}": blocks["intrinsic"][:, j] for j in range(k["intrinsic"])})
    return pd.DataFrame(cols)


def _groups(sizes: StudySizes, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per simulated head, its layer and its KV group (integer labels unique across the
    study): within each stratum, consecutive heads fill layers of the stratum's
    :attr:`StudySizes.layers` size, and KV groups of its :attr:`StudySizes.kv_heads`
    size within a layer."""
    layer = np.empty(labels.size, dtype=int)
    kv = np.empty(labels.size, dtype=int)
    start = n_layers = n_kv = 0
    for label, n_s, _ in sizes.strata:
        per_layer = sizes.group_size("layers", label)
        per_kv = min(sizes.group_size("kv_heads", label), per_layer)
        idx = np.arange(n_s)
        lay = idx // per_layer
        kvg = lay * (-(-per_layer // per_kv)) + (idx % per_layer) // per_kv
        layer[start : start + n_s] = n_layers + lay
        kv[start : start + n_s] = n_kv + kvg
        n_layers += int(lay.max()) + 1
        n_kv += int(kvg.max()) + 1
        start += n_s
    return layer, kv


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
        From :func:`simulate_study` (its ``stratum`` column makes the bootstrap resample
        within the design's checkpoints, as the study's comparison does).
    random_state : int, Generator or None, keyword-only
        Seeds the bootstrap.

    Returns
    -------
    ComparisonResult
        ``NestedComparison(ComparisonSpec(models=sizes.models, random_state=random_state,
        **sizes.comparison_kwargs(), **SIMULATED_COVARIATES)).fit(table)``.

    Examples
    --------
    >>> from analysis.datasets import example_sizes, example_widths
    >>> sizes = example_sizes()  # 16 heads (6 held out), 2 cells each, one pair
    >>> widths = example_widths()  # five brackets at eps = 0.1
    >>> from analysis.power.simulate import simulate_study, simulated_comparison
    >>> table = simulate_study(sizes, widths, share=0.5, random_state=0)
    >>> result = simulated_comparison(sizes, table, random_state=0)
    >>> print(result.to_frame()[["pair", "effect", "p_holm", "adds_information"]].round(2))
        pair  effect  p_holm  adds_information
    0  M0<M1    0.13    0.01              True
    """
    spec = ComparisonSpec(
        models=dict(sizes.models),
        random_state=random_state,
        **sizes.comparison_kwargs(),
        **SIMULATED_COVARIATES,
    )
    return NestedComparison(spec).fit(table)


def study_seeds(seed: np.random.SeedSequence) -> tuple[np.random.SeedSequence, ...]:
    """The data seed (child 0) and the bootstrap seed (child 1) of a study's ``seed``.

    Built from ``seed``'s entropy and spawn key, not with ``seed.spawn`` (which advances
    ``seed`` and would give other children on a second call in the same process).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.power.simulate import study_seeds
    >>> seed = np.random.SeedSequence(5)
    >>> [s.spawn_key for s in study_seeds(seed)], study_seeds(seed)[1].spawn_key
    ([(0,), (1,)], (1,))
    """
    return tuple(
        np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, i)) for i in (0, 1)
    )


def simulated_run(
    sizes: StudySizes,
    widths: WidthModel | StratumWidths,
    share: float,
    assumptions: PowerAssumptions,
    pair: tuple[str, str],
    seed: np.random.SeedSequence,
) -> tuple[pd.DataFrame, ComparisonResult, np.random.SeedSequence]:
    """Simulate the study of ``seed`` with the signal in ``pair``'s block and compare it.

    Returns the table (data from :func:`study_seeds`' child 0), the comparison (its
    bootstrap seeded by child 1) and that bootstrap seed, which
    :func:`analysis.power.decisions.decided_study` reuses to draw the same replicates.
    """
    data_seed, boot_seed = study_seeds(seed)
    table = simulate_study(
        sizes,
        widths,
        share=share,
        assumptions=assumptions,
        signal=signal_block(sizes, pair),
        random_state=np.random.default_rng(data_seed),
    )
    res = simulated_comparison(sizes, table, random_state=np.random.default_rng(boot_seed))
    return table, res, boot_seed


def one_study(
    sizes: StudySizes,
    widths: WidthModel,
    share: float,
    assumptions: PowerAssumptions,
    pair: tuple[str, str],
    seed: np.random.SeedSequence,
) -> dict:
    """Simulate one study from ``seed``, decide it, return the pair's primary-metric row.

    The study's data come from the child 0 of ``seed``, the bootstrap from child 1
    (:func:`study_seeds`), so a study's data are the same at every share (common random
    numbers).
    """
    _, res, _ = simulated_run(sizes, widths, share, assumptions, pair, seed)
    f = res.frame
    base, rich = pair
    r = f[(f.base_model == base) & (f.rich_model == rich) & (f.metric == sizes.primary_metric)]
    r = r.iloc[0]
    return {
        "effect": float(r.effect),
        "ci_low": float(r.ci_low),
        "ci_high": float(r.ci_high),
        "p_value": float(r.p_value),
        "p_holm": float(r.p_holm),
        "adds_information": bool(r.adds_information),
        "base_value": float(r.base_value),
        "refit_p_value": _refit_p(res, r),
    }


def _refit_p(res: ComparisonResult, row: object) -> float:
    """The refit-bootstrap sensitivity's unadjusted p of the row's pair and metric (NaN
    without refit replicates)."""
    sens = getattr(res, "sensitivity", None)
    if sens is None or len(sens) == 0 or "analysis" not in sens:
        return float("nan")
    from analysis.compare.refit import REFIT_BOOTSTRAP

    hit = sens[
        (sens["analysis"] == REFIT_BOOTSTRAP)
        & (sens["pair"] == row.pair)
        & (sens["metric"] == row.metric)
    ]
    return float(hit["p_value"].iloc[0]) if len(hit) else float("nan")


def seed_children(random_state: int | np.random.Generator | None, n: int) -> list:
    """``n`` independent child ``SeedSequence`` objects of ``random_state``."""
    rng = check_random_state(random_state)
    seq = getattr(rng.bit_generator, "seed_seq", None)
    if seq is None:  # a Generator without a SeedSequence: seed one from it
        seq = np.random.SeedSequence(int(rng.integers(2**63)))
    return list(seq.spawn(n))


def _worker_init() -> None:
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)  # one BLAS thread per process: workers, not threads, share cores


def _task(args: tuple) -> dict:
    """``one_study(*args)``, or ``args[0](*args[1:])`` when the task names its function
    (a module-level one, e.g. :func:`analysis.power.decisions.decided_study`)."""
    if callable(args[0]):
        return args[0](*args[1:])
    return one_study(*args)


class StudyRunner:
    """Runs simulated studies in this process, in a pool of ``workers`` processes, or on
    the caller's ``executor`` (any :class:`concurrent.futures.Executor`, such as a dask
    cluster's from :func:`analysis.executor.open_executor`; ``workers`` must then be 1).

    Results do not depend on either: each study draws from its own seed. Use as a
    context manager (a pool of its own is shut down on exit; an executor is the caller's).
    """

    def __init__(self, workers: int = 1, *, executor: cf.Executor | None = None):
        self.workers = check_executor(executor, workers)
        self.executor = executor
        self._stack: contextlib.ExitStack | None = None
        self._pool: TaskPool | None = None

    def __enter__(self) -> StudyRunner:
        self._stack = contextlib.ExitStack()
        self._pool = self._stack.enter_context(
            task_pool(self.executor, self.workers, initializer=_worker_init)
        )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._stack is not None:
            self._stack.close()
        self._stack = self._pool = None

    def run(
        self,
        tasks: Sequence[tuple],
        progress: Callable[[int], None] | None = None,
    ) -> list[dict]:
        """``one_study(*task)`` for each task, in order; ``progress(1)`` after each."""
        results: list[dict | None] = [None] * len(tasks)
        calls = ((i, (t,)) for i, t in enumerate(tasks))
        if self._pool is None:  # in this process, one after the other
            pending = ((i, _task(*a)) for i, a in calls)
        else:
            pending = self._pool.imap(_task, calls)
        with contextlib.closing(pending) as done:
            for i, res in done:
                results[i] = res
                if progress is not None:
                    progress(1)
        return results


def simulated_decisions(
    widths: pd.DataFrame | WidthModel | StratumWidths,
    spec: PowerSpec,
    *,
    share: float,
    pair: tuple[str, str] | None = None,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    executor: cf.Executor | None = None,
) -> pd.DataFrame:
    """Simulate ``spec.simulations`` studies at one share and decide each.

    Parameters
    ----------
    widths : DataFrame from :func:`load_widths`, or a :class:`WidthModel`
    spec : PowerSpec
        The ``sizes``, ``assumptions``, number of ``simulations`` and ``random_state``:
        study k draws from the k-th of ``simulations`` child seeds of it, so studies are
        independent of each other and of ``workers``.
    share : float, keyword-only
        Share of the variance M0 leaves that the pair's signal block explains (0 = null).
    pair : (base, rich), keyword-only
        The pair whose decision is recorded (default: the confirmatory pair); the signal
        sits in the block its rich model adds (:func:`signal_block`).
    workers : int, keyword-only
        Processes.
    progress : callable or None, keyword-only
        Called as ``progress(done, simulations)`` after each study.
    executor : concurrent.futures.Executor, optional, keyword-only
        Run the studies there instead of ``workers`` processes (:class:`StudyRunner`).

    Returns
    -------
    pandas.DataFrame
        One row per study with :data:`DECISION_COLUMNS`: the pair's primary-metric row of
        :func:`simulated_comparison`.

    Examples
    --------
    Five studies where ``native`` explains half the variance M0 leaves, and five at the
    null:

    >>> from analysis.datasets import example_sizes, example_widths
    >>> sizes = example_sizes()  # 16 heads (6 held out), 2 cells each, one pair
    >>> widths = example_widths()  # five brackets at eps = 0.1
    >>> from analysis.power.simulate import simulated_decisions
    >>> from analysis.power.spec import PowerSpec
    >>> spec = PowerSpec(simulations=5, sizes=sizes, random_state=0)
    >>> alternative = simulated_decisions(widths, spec, share=0.5)
    >>> alternative["adds_information"].tolist()
    [True, True, True, True, False]
    >>> null = simulated_decisions(widths, spec, share=0.0)
    >>> null["adds_information"].tolist()
    [False, False, False, False, False]
    """
    if not isinstance(spec, PowerSpec):
        raise ParameterError("spec", "a PowerSpec", type(spec).__name__)
    sizes, assumptions, simulations = spec.sizes, spec.assumptions, spec.simulations
    if not (_number(share) and 0 <= share < 1):
        raise ParameterError("share", "a share in [0, 1)", share)
    pair = tuple(pair or sizes.confirmatory)
    signal_block(sizes, pair)
    wmodel = _width_model(sizes, widths, assumptions)
    seeds = seed_children(spec.random_state, simulations)
    done = [0]

    def step(k: int) -> None:
        done[0] += k
        if progress is not None:
            progress(done[0], simulations)

    with StudyRunner(workers, executor=executor) as runner:
        rows = runner.run([(sizes, wmodel, share, assumptions, pair, s) for s in seeds], step)
    return pd.DataFrame(rows, columns=list(DECISION_COLUMNS))
