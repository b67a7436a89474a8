"""The witness search: certified rank profiles of attention matrices.

:func:`profile_matrix` (one matrix) and :func:`profile_matrices` (several of one shape,
side by side) run the stages of :mod:`analysis.brackets.stages` in order: trivial
witnesses, a cheap stage, refinement, a closing pass, pruning. :func:`close_brackets` runs
the closing pass alone on an existing profile. All tuning lives in one frozen
:class:`~analysis.brackets.settings.SearchSettings` per effort
(:mod:`analysis.brackets.settings`, :func:`search_settings`); every
effort is equally sound, since every witness is certified before it counts (docs/method.md
section 3), so more effort only finds better witnesses. ``engine=`` picks the engine
version (:func:`analysis.brackets.engine_spec`): 4 runs the stages above with
:class:`~analysis.brackets.settings.SearchSettings`, 5 adds those of
:mod:`analysis.brackets.stages_rowspan` with
:class:`~analysis.brackets.settings.RowSpanSettings`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from analysis.attention import check_attention, fixed_torch_threads
from analysis.brackets import stages, stages_rowspan
from analysis.brackets.profile import Profile
from analysis.brackets.settings import EFFORTS, ROWSPAN_SETTINGS, SETTINGS, SWAP_SETTINGS
from analysis.brackets.versions import LATEST_ENGINE, check_engine
from analysis.validation import (
    ParameterError,
    check_choice,
    check_device,
    check_eps_grid,
    check_positive_finite,
)


def profile_matrix(
    A: np.ndarray,
    *,
    eps: Sequence[float] = (0.05, 0.1, 0.2),
    effort: str = "default",
    previous: Profile | None = None,
    renormalize: bool = False,
    prune: bool = True,
    device: Any = None,
    engine: int | None = None,
) -> Profile:
    """Certified rank profile of one attention matrix.

    Parameters
    ----------
    A : array ``[M, N]``
        Non-negative, rows summing to 1 (within 1e-4 unless ``renormalize``).
    eps : sequence of float
        Tolerances the refinement targets (finite, > 0). Brackets can be read off the
        profile for any eps; targeted ones are the tightest.
    effort : {"fast", "default", "thorough"}
        Time spent searching for witnesses (:func:`~analysis.brackets.settings.search_settings`). Every level is
        equally sound.
    previous : Profile, optional
        An earlier profile of the same matrix: its witnesses are re-certified against ``A``
        and kept, so a new eps extends it. Their stored errors and margins are never read,
        so a damaged or edited ``previous`` cannot make a bracket unsound; a witness that
        no longer certifies what it claimed simply counts for what it certifies now
        (``previous.reverify(A)`` tells whether any such witness is there).
    renormalize : bool
        Divide each row by its sum first (else rows must sum to 1 within 1e-4).
    prune : bool
        Keep only the witnesses that decide a targeted bracket (and the trivial ones).
        ``False`` keeps the best certified witness of every rank and size tried, also
        those that decide nothing (the near misses at ``hi - 1`` and ``lo + 1``, for
        diagnostics such as ``experiments/closure_limits.py``); brackets are the same.
    device : str or torch.device, optional
        Where the optimizers run (``"cuda"``, ``"cuda:1"``; default the CPU). Only the
        search for candidates moves: every candidate comes back to the CPU and is
        certified there in float64, so the device changes how fast witnesses are found,
        never what a bracket certifies. An unavailable device is an error.
    engine : int, optional
        The engine version whose search runs (:data:`~analysis.brackets.ENGINE_VERSIONS`;
        default :data:`~analysis.brackets.LATEST_ENGINE`). Every version is equally sound;
        a version fixes which witnesses are found, so a study pins one.

    Returns
    -------
    Profile

    See Also
    --------
    profile_matrices : several matrices of one shape at once (faster per matrix).

    Notes
    -----
    The stages (engine 4: trivial witnesses, a cheap stage for every eps on the targeted
    and coverage grids, refinement rounds, the closing pass :func:`close_brackets`;
    engine 5 adds the row-span lower witnesses of :mod:`analysis.brackets.rowspan` and
    :class:`~analysis.brackets.settings.RowSpanSettings`): docs/method.md section 7,
    "What the engine does". Every candidate is verified in float64 before it counts
    (docs/method.md section 3).

    Examples
    --------
    Two uniform 4 x 4 blocks have rank 2, and no matrix of rank 1 is within eps < 1 of
    them (summing each block's columns maps them to the 2 x 2 identity), so
    ``r_eps = 2``; for the 8 x 8 identity ``r_eps = 8`` (Gastinel-Kahan):

    >>> import numpy as np
    >>> from analysis.brackets import profile_matrix
    >>> A = np.kron(np.eye(2), np.full((4, 4), 0.25))
    >>> prof = profile_matrix(A, eps=(0.1, 0.5), effort="fast")
    >>> prof.brackets([0.1, 0.5])
    [Bracket(lo=2, hi=2), Bracket(lo=2, hi=2)]
    >>> profile_matrix(np.eye(8), eps=(0.5,), effort="fast").bracket(0.5)
    Bracket(lo=8, hi=8)
    >>> profile_matrix(np.eye(8), effort="slow")
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: effort: expected one of fast, default, thorough, got 'slow'
    """
    check_choice("effort", effort, EFFORTS)
    version = check_engine(engine)
    targets = tuple(sorted(set(check_eps_grid(eps))))
    dev = check_device(device)
    A64 = check_attention(A, renormalize=renormalize)
    if A64.shape[0] != 1:
        raise ParameterError("A", "a single matrix of shape (M, N)", A64.shape)
    return _profile_checked([A64[0]], targets, effort, [previous], prune, dev, version)[0]


def profile_matrices(
    A: np.ndarray | Sequence[np.ndarray],
    *,
    eps: Sequence[float] = (0.05, 0.1, 0.2),
    effort: str = "default",
    previous: Sequence[Profile | None] | None = None,
    renormalize: bool = False,
    prune: bool = True,
    device: Any = None,
    engine: int | None = None,
) -> list[Profile]:
    """Certified rank profiles of several matrices of one shape, searched side by side.

    Each matrix gets the search :func:`profile_matrix` gives it alone (its own trials,
    decided by its own results); the matrices only share the batched optimizer runs, so
    torch's per-operation overhead, which dominates on heads of this size, is paid once
    per step for all of them instead of once per matrix.

    Parameters
    ----------
    A : array ``[H, M, N]`` or a sequence of ``[M, N]`` arrays of one shape
    eps, effort, renormalize, prune, device, engine
        As in :func:`profile_matrix`. On a GPU, larger batches pay: every optimizer step
        runs all the batch's problems at once.
    previous : sequence of Profile or None, optional
        One earlier profile (or None) per matrix.

    Returns
    -------
    list of Profile, one per matrix, in order. ``stats["seconds"]`` holds each stage's
    time for the whole batch divided by its size, and ``stats["batch"]`` the size.

    Notes
    -----
    Brackets agree with one-matrix runs up to the rounding of float32 batched products,
    which may differ in the last bits with the batch's composition; every end is
    certified in float64 either way.

    Examples
    --------
    The identity (``r_eps = 8`` for eps < 1) and the uniform matrix (rank 1) together:

    >>> import numpy as np
    >>> from analysis.brackets import profile_matrices
    >>> profs = profile_matrices([np.eye(8), np.full((8, 8), 1 / 8)], eps=(0.5,), effort="fast")
    >>> [p.bracket(0.5) for p in profs], profs[0].stats["batch"]
    ([Bracket(lo=8, hi=8), Bracket(lo=1, hi=1)], 2)
    """
    check_choice("effort", effort, EFFORTS)
    version = check_engine(engine)
    targets = tuple(sorted(set(check_eps_grid(eps))))
    dev = check_device(device)
    mats = [A] if isinstance(A, np.ndarray) and A.ndim == 2 else list(A)
    if not mats:
        raise ParameterError("A", "at least one matrix", "none")
    mats = [check_attention(a, renormalize=renormalize) for a in mats]
    for a in mats:
        if a.shape[0] != 1 or a.shape[1:] != mats[0].shape[1:]:
            raise ParameterError(
                "A", f"matrices of one shape {mats[0].shape[1:]}", f"one of shape {a.shape}"
            )
    mats = [a[0] for a in mats]
    H = len(mats)
    prevs = [None] * H if previous is None else list(previous)
    if len(prevs) != H:
        raise ParameterError("previous", f"one entry per matrix ({H})", f"{len(prevs)} entries")
    return _profile_checked(mats, targets, effort, prevs, prune, dev, version)


def profile_temperatures(
    A: np.ndarray | Sequence[np.ndarray], temperatures: Sequence[float], **options: Any
) -> list[Profile]:
    """Certified profiles of one head at several temperatures, searched side by side.

    The temperatures of a head are one batch of :func:`profile_matrices`: each gets the
    search it would get alone (its own trials, decided by its own results), and they share
    the batched optimizer runs, so torch's per-operation overhead is paid once per step
    for all of them. Each profile records its temperature (``stats["temperature"]``).

    Parameters
    ----------
    A : array ``[T, M, N]`` or a sequence of T ``[M, N]`` arrays
        The head's attention at each temperature (``A[i]`` at ``temperatures[i]``).
    temperatures : sequence of float
        Distinct, finite, > 0; one per matrix.
    **options
        The keywords of :func:`profile_matrices` (``eps``, ``effort``, ``previous``: one
        earlier profile or None per temperature, ``renormalize``, ``prune``, ``device``,
        ``engine``).

    Returns
    -------
    list of Profile, in the order of ``temperatures``.

    Notes
    -----
    The result depends on the set of temperatures searched together (batched float32
    products may round differently with the batch's composition; every end is certified
    in float64 either way), so a resumable caller recomputes the whole set rather than a
    part of it (:func:`analysis.store.run_brackets` does).

    Seeding a temperature with its neighbour's witnesses was measured and is not done
    (docs/method.md section 7; docs/results/engine.md, "Temperatures together").

    Examples
    --------
    Logits ``20 I``: at t = 1 the head is the identity within 1e-8 (``r_0.5 = 8``), at
    t = 1000 uniform within 0.003 per entry (``r_0.5 = 1``):

    >>> import numpy as np
    >>> from analysis.attention import softmax64
    >>> from analysis.brackets import profile_temperatures
    >>> I = np.eye(8)
    >>> temps = [1.0, 1000.0]
    >>> As = [softmax64(I, I, 20.0, None, t) for t in temps]
    >>> profs = profile_temperatures(As, temps, eps=(0.5,), effort="fast")
    >>> [(p.stats["temperature"], p.bracket(0.5)) for p in profs]
    [(1.0, Bracket(lo=8, hi=8)), (1000.0, Bracket(lo=1, hi=1))]
    """
    temps = [check_positive_finite("temperatures", t) for t in temperatures]
    if len(set(temps)) != len(temps):
        raise ParameterError("temperatures", "distinct values", list(temperatures))
    mats = [A] if isinstance(A, np.ndarray) and A.ndim == 2 else list(A)
    if len(mats) != len(temps):
        raise ParameterError(
            "A", f"one matrix per temperature ({len(temps)})", f"{len(mats)} matrices"
        )
    profs = profile_matrices(mats, **options)
    for t, p in zip(temps, profs, strict=True):
        p.stats["temperature"] = t
    return profs


def close_brackets(
    A: np.ndarray,
    profile: Profile,
    *,
    eps: Sequence[float] | None = None,
    effort: str = "default",
    renormalize: bool = False,
    prune: bool = True,
    engine: int | None = None,
) -> Profile:
    """The closing pass alone, on the brackets of an existing profile of ``A``.

    For every eps of ``eps`` whose bracket has ``1 <= hi - lo <= close_width``: a longer
    upper run at rank ``hi - 1`` and multi-start lower witnesses at size ``lo + 1``, as
    at the end of :func:`profile_matrix` (where :class:`~analysis.brackets.settings.SearchSettings` describes when
    each runs). The profile's witnesses are re-verified and kept, so no bracket widens.

    Parameters
    ----------
    A : array ``[M, N]``
        The profile's matrix (rows summing to 1 within 1e-4 unless ``renormalize``).
    profile : Profile
        A profile of ``A``. The upper run needs the best witness at ``hi - 1``, which a
        pruned profile does not keep (``profile_matrix(..., prune=False)`` does).
    eps : sequence of float, optional
        The tolerances to close (default: the profile's ``eps_targets``).
    effort : {"default", "thorough"}
        Whose closing-pass settings to use (``"fast"`` has none: the profile comes back
        re-verified and unchanged).
    renormalize, prune, engine
        As in :func:`profile_matrix`.

    Returns
    -------
    Profile
        ``effort`` is the given profile's (the search that found its brackets);
        ``stats["closing_pass"]`` names the effort of this pass, ``stats["seconds"]`` its
        time (``"close"`` and ``"total"``).

    Examples
    --------
    A fast (cheap-stage) profile of a random head, then the default closing pass; the
    profile's witnesses are kept, so the bracket can only narrow (here it closes):

    >>> from analysis.brackets import close_brackets, profile_matrix
    >>> from analysis.datasets import example_head
    >>> A = example_head()
    >>> fast = profile_matrix(A, eps=(0.2,), effort="fast", prune=False)
    >>> closed = close_brackets(A, fast, effort="default")
    >>> closed.effort, closed.stats["closing_pass"]
    ('fast', 'default')
    >>> fast.bracket(0.2), closed.bracket(0.2)
    (Bracket(lo=4, hi=5), Bracket(lo=5, hi=5))
    """
    check_choice("effort", effort, EFFORTS)
    version = check_engine(engine)
    if not isinstance(profile, Profile):
        raise ParameterError("profile", "a Profile", type(profile).__name__)
    A64 = check_attention(A, renormalize=renormalize)
    if A64.shape[0] != 1:
        raise ParameterError("A", "a single matrix of shape (M, N)", A64.shape)
    if tuple(profile.shape) != A64.shape[1:]:
        raise ParameterError("profile", f"a profile of shape {A64.shape[1:]}", profile.shape)
    targets = profile.eps_targets if eps is None else tuple(sorted(set(check_eps_grid(eps))))
    with fixed_torch_threads(1):
        t0 = time.perf_counter()
        b = stages.Builder(A64[0], profile)
        stages.trivial_witnesses(b)
        finite = [e for e in targets if e < 1]
        if finite and version == 4:
            stages.close([b], [stages.svd_cache(b)], finite, SETTINGS[effort])
        elif finite:
            s5 = ROWSPAN_SETTINGS[effort]
            stages.close([b], [stages.svd_cache(b)], finite, s5.base, transform=s5.rowspan)
        t1 = time.perf_counter()
    seconds = {"close": t1 - t0, "total": t1 - t0}
    out = _finish(b, profile, targets, profile.effort, seconds, 1, prune)
    out.stats["closing_pass"] = effort
    return out


def _profile_checked(
    mats: list[np.ndarray],
    targets: tuple[float, ...],
    effort: str,
    prevs: list[Profile | None],
    prune: bool,
    device: Any = None,
    engine: int = LATEST_ENGINE,
) -> list[Profile]:
    """:func:`profile_matrices` on validated input: float64 ``[M, N]`` matrices of one
    shape, a sorted eps grid, one previous profile (or None) per matrix, a checked
    device (None: the CPU) and a checked engine version.

    Every version starts with the trivial witnesses and the cheap stage, then runs its
    own stages on the finite targets. Engine 4: refinement, closing pass. Engine 5: the
    row-span scan, the row-span refinement (:mod:`analysis.brackets.stages_rowspan`), the
    closing pass with the inverse transform."""
    Stage = Callable[[list, list, list], None]
    named: list[tuple[str, Stage]]
    if engine in (5, 6):
        sw = SWAP_SETTINGS[effort]
        rs = sw.rowspan if engine == 6 else ROWSPAN_SETTINGS[effort]
        # engine 6: one certificate per row set, no inverse transform of row-span starts
        every = engine == 5 or sw.certify_all

        def starts(bs, cs):  # engine 6: lower trials from swapped row sets
            if engine == 6 and sw.swaps:
                return stages_rowspan.swapped_starts(bs, cs, sw)
            return None

        named = [
            (
                "rowspan",
                lambda bs, cs, fin: (
                    stages_rowspan.rowspan_scan(bs, cs, fin, rs, certify_all=every)
                    if rs.rowspan
                    else None
                ),
            ),
            (
                "refine",
                lambda bs, cs, fin: (
                    stages_rowspan.refine(
                        bs,
                        cs,
                        fin,
                        rs,
                        device,
                        starts(bs, cs),
                        transform=every,
                        split=(sw.split, sw.split_saving) if engine == 6 else (0.0, 0.0),
                    )
                    if rs.rowspan
                    else stages.refine(bs, cs, fin, rs.base, device)
                ),
            ),
            (
                "close",
                lambda bs, cs, fin: stages.close(
                    bs, cs, fin, rs.base, device, transform=rs.rowspan
                ),
            ),
        ]
    else:
        st = SETTINGS[effort]
        named = [
            ("refine", lambda bs, cs, fin: stages.refine(bs, cs, fin, st, device)),
            ("close", lambda bs, cs, fin: stages.close(bs, cs, fin, st, device)),
        ]
    H = len(mats)
    with fixed_torch_threads(1):
        t0 = time.perf_counter()
        bs = [stages.Builder(a, p) for a, p in zip(mats, prevs, strict=True)]
        for b in bs:
            stages.trivial_witnesses(b)
        finite = [e for e in targets if e < 1]
        lean = {"group_sums": False, "group_stop": False}
        if engine == 6:
            lean = {k: getattr(SWAP_SETTINGS[effort], k) for k in lean}
        caches = [stages.cheap_stage(b, finite or [0.5], **lean) for b in bs]
        seconds = {"cheap": (time.perf_counter() - t0) / H}
        for name, run in named:
            t = time.perf_counter()
            if finite:
                run(bs, caches, finite)
            seconds[name] = (time.perf_counter() - t) / H
        seconds["total"] = (time.perf_counter() - t0) / H
    return [
        _finish(b, prev, targets, effort, seconds, H, prune)
        for b, prev in zip(bs, prevs, strict=True)
    ]


def _finish(
    b: stages.Builder,
    prev: Profile | None,
    targets: tuple[float, ...],
    effort: str,
    seconds: dict[str, float],
    batch: int,
    prune: bool,
) -> Profile:
    """The profile of a builder: targets of this run and of ``prev``, pruned to them if
    ``prune``, with the stats of the run (``seconds``, ``batch``, rejected lower
    candidates, the method behind each end targeted in this run)."""
    all_targets = tuple(sorted(set(targets) | set(prev.eps_targets if prev else ())))
    if prune:
        stages.prune(b, all_targets)
    stats: dict[str, Any] = {"seconds": dict(seconds), "batch": batch}
    stats["rejected_lower"] = b.rejected
    stats["methods"] = {
        f"{e:g}": {
            "upper": b.upper[b.hi(e)].method if b.hi(e) in b.upper else "identity",
            "lower": b.lower[b.lo(e)].method if b.lo(e) else "none",
        }
        for e in targets
    }
    return Profile((b.M, b.N), b.upper, b.lower, all_targets, effort, stats)
