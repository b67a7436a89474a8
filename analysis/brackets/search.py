"""The witness search: certified rank profiles of attention matrices.

:func:`profile_matrix` (one matrix) and :func:`profile_matrices` (several of one shape,
side by side) run the stages of :mod:`analysis.brackets.stages` in order: trivial
witnesses, a cheap stage, refinement, a closing pass, pruning. :func:`close_brackets` runs
the closing pass alone on an existing profile. All tuning lives in one frozen
:class:`SearchSettings` per effort (:data:`SETTINGS`, :func:`search_settings`); every
effort is equally sound, since every witness is certified before it counts (docs/method.md
section 3), so more effort only finds better witnesses.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from analysis.attention import check_attention, fixed_torch_threads
from analysis.brackets import stages
from analysis.brackets.profile import Profile
from analysis.validation import (
    ParameterError,
    check_choice,
    check_device,
    check_eps_grid,
    check_positive_finite,
)


@dataclass(frozen=True)
class SearchSettings:
    """Every tuning constant of the witness search, for one effort.

    Settings only decide which candidates are tried and for how long; none can make a
    bracket unsound. The first six fields differ between efforts; the others have one
    value for all of them (the defaults here).

    Attributes
    ----------
    rounds : int
        Refinement rounds. Per round, every matrix and targeted eps gets one trial rank
        below ``hi`` and one trial size above ``lo``. 0 skips refinement (``fast``: cheap
        stage only). ``default`` 6: 5 rounds saved 3.3% of the optimizer work and left 10
        of 72 MiniLM upper ends one higher (docs/results/engine.md); ``thorough`` 7.
    upper_steps : int
        Adam steps of an upper trial at rank 24; other ranks k get ``24 / k`` times as many,
        within 0.5x to 1.5x (a step costs more at larger ranks).
    lower_steps : int
        Projected-ascent steps of a lower trial at size 12 or less; larger sizes m get
        ``sqrt(m / 12)`` times as many, at most 2x (each step moves mostly the worst test
        function, so larger sizes need more steps).
    close_upper_steps : int
        Adam steps of the closing pass's run at rank ``hi - 1`` (rank-scaled as
        ``upper_steps``): 4x the refinement's at ``default``, about 3x at ``thorough``, since
        that pass is the last try at brackets one rank from closing. 0 switches the upper half of the pass off.
    close_lower_steps : int
        Ascent steps of each closing-pass start at size ``lo + 1`` (not size-scaled).
        0 switches the lower half off; with both 0 (``fast``) there is no closing pass.
    close_seeds : int
        k-means seeds per column scaling (raw and unit columns) for the closing pass's
        lower starts: ``default`` 3, ``thorough`` 8; the k-means starts win most lower
        closures (docs/results/engine.md, "Engine 3: closing pass").
    upper_first : float
        The first upper trial of an eps sits at ``round(upper_first * hi)``, ``hi`` being
        the cheap stage's (mostly SVD) end: 0.7 is the typical ratio of refined to SVD rank.
        It only places the first trial.
    lower_boost : float
        The first lower trial is the largest size whose group-witness margin times
        ``lower_boost`` exceeds eps: 2.5 is the typical ratio of refined to group margin at
        one size. It only places the first trial.
    lp_max_size : int
        A refinement lower trial that misses gets the exact alternating-LP polish (docs/
        method.md section 7) only at sizes up to 8: the R-LP has ``2 N m + m^2`` variables.
    lp_near : float
        ... and only if its ascent margin is above ``lp_near * eps`` (0.8: a near miss).
    lp_rounds : int
        Alternating LP rounds of that polish (2).
    resolution : float
        The lower search of an eps stops once the sizes left undecided between ``lo`` and
        its nearest failed trial are fewer than ``resolution * lo`` (they could raise
        ``lo`` by less than 3%): large sizes, where ascent trials cost most, get fewer
        rounds.
    close_width : int
        The closing pass treats brackets with ``1 <= hi - lo <= close_width`` (2): the
        nearly closed ones, where one more witness can close or halve the bracket.
    close_upper_near : float
        Its upper run at rank ``hi - 1`` happens only where the best error there is below
        ``close_upper_near * eps`` (within 6%): restarts from perturbed starts land on the
        same error (measured on MiniLM heads), so far-off ranks are not worth the time.
    close_lower_near : float
        Its lower starts at size ``lo + 1`` run only where that size is untried or its best
        margin is above ``close_lower_near * eps`` (0.6): far-off sizes are skipped.
    close_max_size : int
        ... and only for ``lo + 1 <= close_max_size`` (12): the starts (k-means partitions,
        group splits) and the LP polish grow with the size.
    close_polish : int
        Per size, the best ``close_polish`` closing-pass lower candidates (by certified
        margin) get the exact LP polish (2).
    close_lp_rounds : int
        Alternating LP rounds of that polish (3; one more than ``lp_rounds``, this being
        the last try).
    """

    rounds: int
    upper_steps: int
    lower_steps: int
    close_upper_steps: int
    close_lower_steps: int
    close_seeds: int
    upper_first: float = 0.7
    lower_boost: float = 2.5
    lp_max_size: int = 8
    lp_near: float = 0.8
    lp_rounds: int = 2
    resolution: float = 0.03
    close_width: int = 2
    close_upper_near: float = 1.06
    close_lower_near: float = 0.6
    close_max_size: int = 12
    close_polish: int = 2
    close_lp_rounds: int = 3


SETTINGS: Mapping[str, SearchSettings] = MappingProxyType(
    {
        "fast": SearchSettings(
            rounds=0,
            upper_steps=0,
            lower_steps=0,
            close_upper_steps=0,
            close_lower_steps=0,
            close_seeds=0,
        ),
        "default": SearchSettings(
            rounds=6,
            upper_steps=300,
            lower_steps=400,
            close_upper_steps=1200,
            close_lower_steps=600,
            close_seeds=3,
        ),
        "thorough": SearchSettings(
            rounds=7,
            upper_steps=800,
            lower_steps=1200,
            close_upper_steps=2500,
            close_lower_steps=1200,
            close_seeds=8,
        ),
    }
)
"""The settings of each effort, by name (read-only)."""

EFFORTS = tuple(SETTINGS)
"""Effort names, least to most: ``("fast", "default", "thorough")``."""


def search_settings(effort: str) -> SearchSettings:
    """The :class:`SearchSettings` of ``effort`` (one of :data:`EFFORTS`)."""
    return SETTINGS[check_choice("effort", effort, EFFORTS)]


def profile_matrix(
    A: np.ndarray,
    *,
    eps: Sequence[float] = (0.05, 0.1, 0.2),
    effort: str = "default",
    previous: Profile | None = None,
    renormalize: bool = False,
    prune: bool = True,
    device: Any = None,
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
        Time spent searching for witnesses (:func:`search_settings`). Every level is
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

    Returns
    -------
    Profile

    See Also
    --------
    profile_matrices : several matrices of one shape at once (faster per matrix).

    Notes
    -----
    Stages: trivial witnesses (zero, identity, row sums); a cheap stage for every eps on
    the targeted and coverage grids (truncated SVD for every rank, greedy row cover,
    Gastinel-Kahan witnesses from hierarchical column groups); then ``rounds`` of
    batched refinement at candidate ranks / sizes between the current ends (Adam on
    ``(U, W)`` plus an l1 row refit; projected ascent on signed ``(R, Y)``, then, for a
    near miss at a small size, the exact alternating LPs of docs/method.md section 7);
    then a closing pass on brackets of width 1 or 2 (a longer upper run at ``hi - 1``,
    multi-start lower witnesses at ``lo + 1`` from k-means partitions and splits of the lo
    witness's groups; :func:`close_brackets`). Every candidate is verified in float64
    before it counts (docs/method.md section 3).
    """
    check_choice("effort", effort, EFFORTS)
    targets = tuple(sorted(set(check_eps_grid(eps))))
    dev = check_device(device)
    A64 = check_attention(A, renormalize=renormalize)
    if A64.shape[0] != 1:
        raise ParameterError("A", "a single matrix of shape (M, N)", A64.shape)
    return _profile_checked([A64[0]], targets, effort, [previous], prune, dev)[0]


def profile_matrices(
    A: np.ndarray | Sequence[np.ndarray],
    *,
    eps: Sequence[float] = (0.05, 0.1, 0.2),
    effort: str = "default",
    previous: Sequence[Profile | None] | None = None,
    renormalize: bool = False,
    prune: bool = True,
    device: Any = None,
) -> list[Profile]:
    """Certified rank profiles of several matrices of one shape, searched side by side.

    Each matrix gets the search :func:`profile_matrix` gives it alone (its own trials,
    decided by its own results); the matrices only share the batched optimizer runs, so
    torch's per-operation overhead, which dominates on heads of this size, is paid once
    per step for all of them instead of once per matrix.

    Parameters
    ----------
    A : array ``[H, M, N]`` or a sequence of ``[M, N]`` arrays of one shape
    eps, effort, renormalize, prune, device
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
    """
    check_choice("effort", effort, EFFORTS)
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
    return _profile_checked(mats, targets, effort, prevs, prune, dev)


def profile_temperatures(
    A: np.ndarray | Sequence[np.ndarray],
    temperatures: Sequence[float],
    *,
    eps: Sequence[float] = (0.05, 0.1, 0.2),
    effort: str = "default",
    previous: Sequence[Profile | None] | None = None,
    renormalize: bool = False,
    prune: bool = True,
    device: Any = None,
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
    eps, effort, renormalize, prune, device
        As in :func:`profile_matrix`.
    previous : sequence of Profile or None, optional
        One earlier profile (or None) per temperature, extended as in
        :func:`profile_matrix`.

    Returns
    -------
    list of Profile, in the order of ``temperatures``.

    Notes
    -----
    The result depends on the set of temperatures searched together (batched float32
    products may round differently with the batch's composition; every end is certified
    in float64 either way), so a resumable caller recomputes the whole set rather than a
    part of it (:func:`analysis.store.run_brackets` does).

    Seeding a temperature with the certified witnesses of its neighbour was measured and
    is not done: the neighbour's witnesses, re-certified, never narrowed a bracket the
    temperature's own search found, and placing its first trials at the neighbour's ends
    saved 25-46% of its time but left upper ends 2-5 ranks higher (docs/results/engine.md,
    "Temperatures together").
    """
    temps = [check_positive_finite("temperatures", t) for t in temperatures]
    if len(set(temps)) != len(temps):
        raise ParameterError("temperatures", "distinct values", list(temperatures))
    mats = [A] if isinstance(A, np.ndarray) and A.ndim == 2 else list(A)
    if len(mats) != len(temps):
        raise ParameterError(
            "A", f"one matrix per temperature ({len(temps)})", f"{len(mats)} matrices"
        )
    profs = profile_matrices(
        mats,
        eps=eps,
        effort=effort,
        previous=previous,
        renormalize=renormalize,
        prune=prune,
        device=device,
    )
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
) -> Profile:
    """The closing pass alone, on the brackets of an existing profile of ``A``.

    For every eps of ``eps`` whose bracket has ``1 <= hi - lo <= close_width``: a longer
    upper run at rank ``hi - 1`` and multi-start lower witnesses at size ``lo + 1``, as
    at the end of :func:`profile_matrix` (where :class:`SearchSettings` describes when
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
    renormalize, prune
        As in :func:`profile_matrix`.

    Returns
    -------
    Profile
        ``effort`` is the given profile's (the search that found its brackets);
        ``stats["closing_pass"]`` names the effort of this pass, ``stats["seconds"]`` its
        time (``"close"`` and ``"total"``).
    """
    check_choice("effort", effort, EFFORTS)
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
        if finite:
            stages.close([b], [stages.svd_cache(b)], finite, SETTINGS[effort])
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
) -> list[Profile]:
    """:func:`profile_matrices` on validated input: float64 ``[M, N]`` matrices of one
    shape, a sorted eps grid, one previous profile (or None) per matrix and a checked
    device (None: the CPU)."""
    H = len(mats)
    settings = SETTINGS[effort]
    with fixed_torch_threads(1):
        t0 = time.perf_counter()
        bs = [stages.Builder(a, p) for a, p in zip(mats, prevs, strict=True)]
        for b in bs:
            stages.trivial_witnesses(b)
        finite = [e for e in targets if e < 1]
        caches = [stages.cheap_stage(b, finite or [0.5]) for b in bs]
        t1 = time.perf_counter()
        if finite:
            stages.refine(bs, caches, finite, settings, device)
        t2 = time.perf_counter()
        if finite:
            stages.close(bs, caches, finite, settings, device)
        t3 = time.perf_counter()
    seconds = {
        "cheap": (t1 - t0) / H,
        "refine": (t2 - t1) / H,
        "close": (t3 - t2) / H,
        "total": (t3 - t0) / H,
    }
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
