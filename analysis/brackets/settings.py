"""The frozen tuning of the witness search, one :class:`SearchSettings` per effort.

The search (:mod:`analysis.brackets.search`) and its stages (:mod:`analysis.brackets.stages`)
both read these settings; this module imports neither, so neither imports the other
through it. Settings only decide which candidates are tried and for how long: every
effort is equally sound (each witness is certified before it counts), but a change of any
value changes the witnesses found, so it comes with a new engine version
(:data:`analysis.brackets.ENGINE_VERSIONS`). :func:`settings_sha256` fingerprints the settings of an
effort; the tests pin those fingerprints per engine version.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from analysis.validation import EFFORTS, check_choice

__all__ = [
    "EFFORTS",
    "ROWSPAN_SETTINGS",
    "SETTINGS",
    "SWAP_SETTINGS",
    "RowSpanSettings",
    "SearchSettings",
    "SwapSettings",
    "rowspan_settings",
    "search_settings",
    "settings_sha256",
]


@dataclass(frozen=True)
class SearchSettings:
    """Every tuning constant of the witness search, for one effort.

    Settings only decide which candidates are tried and for how long; none can make a
    bracket unsound. The first six fields differ between efforts; the others have one
    value for all of them (the defaults here).

    Examples
    --------
    >>> import dataclasses
    >>> from analysis.brackets import search_settings
    >>> s = search_settings("default")
    >>> s.rounds, s.close_width, search_settings("fast").rounds  # fast: no refinement
    (6, 2, 0)
    >>> s.rounds = 1
    Traceback (most recent call last):
    ...
    dataclasses.FrozenInstanceError: cannot assign to field 'rounds'
    >>> dataclasses.replace(s, rounds=1) == s
    False

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

if tuple(SETTINGS) != EFFORTS:  # the table must name exactly the efforts, in order
    raise RuntimeError(f"SETTINGS names {tuple(SETTINGS)}, not the efforts {EFFORTS}")


def search_settings(effort: str) -> SearchSettings:
    """The :class:`SearchSettings` of ``effort`` (one of :data:`EFFORTS`).

    Examples
    --------
    >>> from analysis.brackets import EFFORTS, search_settings
    >>> [search_settings(e).rounds for e in EFFORTS]
    [0, 6, 7]
    >>> search_settings("slow")
    Traceback (most recent call last):
    ...
    analysis.validation.ParameterError: effort: expected one of fast, default, thorough, got 'slow'
    """
    return SETTINGS[check_choice("effort", effort, EFFORTS)]


def settings_sha256(effort: str) -> str:
    """SHA-256 of the :class:`SearchSettings` of ``effort``, as canonical JSON.

    Parameters
    ----------
    effort : {"fast", "default", "thorough"}

    Returns
    -------
    str
        64 hex digits of the SHA-256 of ``json.dumps(fields, sort_keys=True,
        separators=(",", ":"))``, ``fields`` being the dataclass fields by name (floats
        written by ``repr``, so every bit of a value counts).

    Examples
    --------
    >>> from analysis.brackets.settings import settings_sha256
    >>> len(settings_sha256("default"))
    64
    """
    fields = dataclasses.asdict(search_settings(effort))
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class RowSpanSettings:
    """Every tuning constant of engine 5's search, for one effort.

    Engine 5 runs engine 4's stages with ``base`` (a :class:`SearchSettings`) and adds the
    row-span lower witnesses (:mod:`analysis.brackets.rowspan`) and an upper schedule
    that anneals over a horizon of its own. Like :class:`SearchSettings`, none of these
    can make a bracket unsound: they decide which candidates are tried.

    Examples
    --------
    >>> from analysis.brackets.settings import rowspan_settings
    >>> s = rowspan_settings("default")
    >>> s.rowspan, s.lower_rounds, s.base.rounds, rowspan_settings("fast").rowspan
    (True, 3, 6, False)

    Attributes
    ----------
    base : SearchSettings
        Engine 4's settings of the same effort: refinement rounds, step budgets and the
        closing pass.
    rowspan : bool
        Whether the row-span scan and lower trials run (``fast``: no, so engine 5's
        ``fast`` is engine 4's cheap stage).
    reweights : int
        Lawson-type reweightings of the ridge right inverse per size (6); every iterate is
        certified and the best kept.
    ridge : float
        Ridge of the right inverse, relative to ``trace(A_S D A_S^T) / m`` (1e-4).
    scan_grid : int
        Sizes of the per-eps scan's first pass, spread evenly over ``(lo, hi]`` (9),
        before its bisection.
    lower_rounds : int
        Rounds (of ``base.rounds``) that carry a lower trial per eps (3); the later rounds
        are upper trials only.
    lower_boost : float
        The first lower trial is the largest size whose row-span margin times
        ``lower_boost`` exceeds eps (1.5), else ``lo + 1``.
    group_max_size : int
        Lower trials at sizes up to this (16) also start from the best group witness
        (24 cost more CPU for the same brackets, 12 lost a size on an N = 64 head, 8 one
        on an N = 256 head: docs/results/engine.md, "Engine 5, tuning round").
    ascent_max_size : int
        Lower trials run the projected ascent only up to this size (96); above it the
        trial is the row-span family itself (and its inverse transform).
    ascent_max_factor : float
        Step budget of a lower trial's ascent: ``base.lower_steps`` times
        ``sqrt(m / 12)``, within 1 and ``ascent_max_factor`` (1.5; engine 4's cap is 2,
        which gave the same brackets on the tuning heads at N = 256 for 2% more CPU, and
        1 lost sizes: docs/results/engine.md, "Engine 5, tuning round").
    anneal_stretch : float
        An upper trial at rank ``>= anneal_min_rank`` anneals delta / beta / the learning
        rate over ``anneal_stretch`` times its step budget and stops at the budget: 1.0,
        as in engine 4, since the rate falls with the rank (``lr_rank``; 4.0: wider
        brackets for more CPU, docs/results/engine.md, "Engine 5, tuning round").
    anneal_min_rank : int
        ... (48); lower ranks anneal over their budget, as in engine 4.
    lr_rank : int
        Upper trials at a scaled rank ``k_N = k sqrt(N / 256)`` above ``lr_rank`` run Adam
        at ``lr_rank / k_N`` times engine 4's learning rate (48; 0: engine 4's rate at
        every rank; why: docs/method.md section 7, engine 5 step 5). At N = 64
        (``k_N = k / 2 <= 32``) the rate is engine 4's.
    """

    base: SearchSettings
    rowspan: bool
    reweights: int = 6
    ridge: float = 1e-4
    scan_grid: int = 9
    lower_rounds: int = 3
    lower_boost: float = 1.5
    group_max_size: int = 16
    ascent_max_size: int = 96
    ascent_max_factor: float = 1.5
    anneal_stretch: float = 1.0
    anneal_min_rank: int = 48
    lr_rank: int = 48


ROWSPAN_SETTINGS: Mapping[str, RowSpanSettings] = MappingProxyType(
    {
        "fast": RowSpanSettings(base=SETTINGS["fast"], rowspan=False),
        "default": RowSpanSettings(base=SETTINGS["default"], rowspan=True),
        "thorough": RowSpanSettings(base=SETTINGS["thorough"], rowspan=True),
    }
)
"""Engine 5's settings of each effort, by name (read-only)."""


def rowspan_settings(effort: str) -> RowSpanSettings:
    """The :class:`RowSpanSettings` of ``effort`` (one of :data:`EFFORTS`).

    Examples
    --------
    >>> from analysis.brackets.settings import rowspan_settings, search_settings
    >>> rowspan_settings("thorough").base is search_settings("thorough")
    True
    """
    return ROWSPAN_SETTINGS[check_choice("effort", effort, EFFORTS)]


@dataclass(frozen=True)
class SwapSettings:
    """Every tuning constant of engine 6's search, for one effort.

    Engine 6 is engine 5 (``rowspan``, its :class:`RowSpanSettings`, unchanged) whose
    row-span lower trials start from an exchange-swapped row set
    (:func:`analysis.brackets.swaps.exchange_swaps`) instead of the pivoted-QR prefix,
    with four economies that change which candidates are certified or how they are
    computed, never how a candidate is certified (``certify_all``, ``group_sums``,
    ``group_stop``, ``split``).

    Examples
    --------
    >>> from analysis.brackets.settings import SWAP_SETTINGS, rowspan_settings
    >>> import dataclasses
    >>> s = SWAP_SETTINGS["default"]
    >>> s.rowspan == dataclasses.replace(rowspan_settings("default"), group_max_size=0)
    True
    >>> s.swap_sweeps, s.swap_out, s.swap_in
    (1, 2, 2)

    Attributes
    ----------
    rowspan : RowSpanSettings
        Engine 5's settings of the same effort (scan, lower rounds, ascent, upper trials),
        with ``group_max_size = 0``: no lower trial starts from a group witness, its ascent
        being the CPU that pays for the swaps (on 6 MiniLM heads at N = 128 / 256 the group
        starts added no lower end beside swapped starts and cost 3-7% of a profile's CPU;
        docs/results/engine.md, "Engine 6 against engine 5").
    swaps : bool
        Whether lower trials start from swapped row sets (``fast``: no lower trials).
    swap_sweeps : int
        Exchange sweeps per size (1: one cheap sweep of at most ``1 + 2 swap_out
        swap_in`` row sets; in ``experiments/rowspan_swaps.py`` it kept about two thirds
        of three sweeps' gain at a tenth of their CPU).
    swap_out : int
        Rows to drop per sweep (2).
    swap_in : int
        Rows to add per dropped row and per criterion (maxvol coefficient, residual) (2).
    certify_all : bool
        False: a row set's members (ridge right inverse and its reweightings) are ranked
        by their computed margin and only the best is certified (the next only where it
        certifies no positive margin; :func:`analysis.brackets.rowspan.offer_best`), and
        a row-span start's inverse transform (a rescaling of its rows) is not offered.
        True: every member and that transform are certified, as engine 5 does (the first
        engine 6 of 2026-12-07 07:47 UTC). False spends one certificate per row set in the
        scan, the trials and the swaps instead of seven (docs/results/engine.md, "Engine 6
        against engine 5").
    group_sums : bool
        True: the cheap stage's group witnesses (every size up to ``hi``, two column
        partitions) sum each group's columns (:func:`analysis.brackets.lower.group_witness_sums`)
        instead of multiplying by the 0/1 indicator; at N = 256 the products were most of
        the cheap stage's CPU. False: engine 5's products.
    group_stop : bool
        True: the cheap stage builds group witnesses by increasing size only up to twice
        the largest size that passes the smallest eps, plus 8 (engine 5: every size up to
        ``hi``, though at N = 256 the last passing size is mostly a tenth to a fifth of
        ``hi``); engine 6 reads them only there (no group starts).
    split : float
        A refinement round's upper trials (and its lower trials) run in batches of similar
        rank (size): the largest rank left opens a batch of every rank ``>= split`` times
        it (0.7), since a batch pads each problem to its largest rank
        (:func:`analysis.brackets.stages_rowspan.rank_groups`); 0: one batch, as engine 5.
    split_saving : float
        ... but the ranks below a batch form their own only where the padding they shed
        (``M N`` times their rank differences, summed) is at least this (2e6): a batch's
        per-step overhead (about 0.2 ms on one core) outweighs smaller savings, so at
        N = 64 and 128 the trials mostly stay in one batch.
    """

    rowspan: RowSpanSettings
    swaps: bool
    swap_sweeps: int = 1
    swap_out: int = 2
    swap_in: int = 2
    certify_all: bool = False
    group_sums: bool = True
    group_stop: bool = True
    split: float = 0.7
    split_saving: float = 2e6


SWAP_SETTINGS: Mapping[str, SwapSettings] = MappingProxyType(
    {
        "fast": SwapSettings(rowspan=ROWSPAN_SETTINGS["fast"], swaps=False),
        "default": SwapSettings(
            rowspan=dataclasses.replace(ROWSPAN_SETTINGS["default"], group_max_size=0),
            swaps=True,
        ),
        "thorough": SwapSettings(
            rowspan=dataclasses.replace(ROWSPAN_SETTINGS["thorough"], group_max_size=0),
            swaps=True,
        ),
    }
)
"""Engine 6's settings of each effort, by name (read-only)."""
