"""The stages engine 5 adds to engine 4's: the row-span scan and row-span refinement.

Internal to :mod:`analysis.brackets.search`, which runs engine 5 as trivial witnesses,
cheap stage (:mod:`analysis.brackets.stages`), :func:`rowspan_scan`, :func:`refine`, the
closing pass with the inverse transform, pruning. Tuning comes from one
:class:`analysis.brackets.settings.RowSpanSettings`. Engine 4's stages are reused, never
changed: every candidate still goes through a :class:`~analysis.brackets.stages.Builder`,
which keeps it only with its certified value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from analysis.brackets import lower as _lower
from analysis.brackets import stages
from analysis.brackets import swaps as _swaps
from analysis.brackets.rowspan import RowSpan, offer_transformed
from analysis.brackets.settings import RowSpanSettings, SwapSettings


def rowspan_scan(
    bs, caches, targets: Sequence[float], settings: RowSpanSettings, *, certify_all: bool = True
) -> None:
    """Per matrix, one row order; per eps, the largest certified row-span size.

    Adds ``"rowspan"`` (a :class:`~analysis.brackets.rowspan.RowSpan`) to each cache and
    scans ``(lo, hi]`` of every targeted eps (:meth:`RowSpan.scan`); every member tried is
    offered to the builder, so a size that certifies raises ``lo`` (``certify_all=False``,
    engine 6: per size only the member of largest computed margin, see
    :func:`analysis.brackets.rowspan.offer_best`).

    Examples
    --------
    On a random 8 x 8 head the scan lifts the cheap stage's lower end at eps = 0.2:

    >>> from analysis.brackets import stages, stages_rowspan
    >>> from analysis.datasets import example_head
    >>> from analysis.brackets.settings import rowspan_settings
    >>> b = stages.Builder(example_head(), None)
    >>> stages.trivial_witnesses(b)
    >>> cache = stages.cheap_stage(b, [0.2])
    >>> b.lo(0.2)
    4
    >>> stages_rowspan.rowspan_scan([b], [cache], [0.2], rowspan_settings("default"))
    >>> b.lo(0.2), b.lower[b.lo(0.2)].method
    (5, 'rowspan')
    """
    for b, cache in zip(bs, caches, strict=True):
        fam = RowSpan(
            b.A, reweights=settings.reweights, ridge=settings.ridge, certify_all=certify_all
        )
        cache["rowspan"] = fam
        for e in targets:
            fam.scan(b, e, b.lo(e), b.hi(e), settings.scan_grid)


def _anneal(settings: RowSpanSettings):
    """Anneal horizons of upper trials: ``anneal_stretch`` x the budget from rank
    ``anneal_min_rank`` on, the budget below it."""
    stretch, k0 = settings.anneal_stretch, settings.anneal_min_rank

    def horizons(ranks: torch.Tensor, budgets: torch.Tensor) -> torch.Tensor:
        b = budgets.double()
        return torch.where(ranks >= k0, b * stretch, b)

    return horizons


def _lr_scale(settings: RowSpanSettings, n: int):
    """Learning-rate factor of upper trials on matrices of ``n`` columns:
    ``lr_rank / k_n`` where the scaled rank ``k_n = k sqrt(n / 256)`` exceeds
    ``lr_rank``, else 1; None (engine 4's rate, its floats exactly) where every factor is
    1 or ``lr_rank = 0``."""
    k0 = settings.lr_rank
    root = math.sqrt(n / 256)

    def scale(ranks: torch.Tensor) -> torch.Tensor | None:
        if k0 <= 0:
            return None
        f = (k0 / (ranks.double() * root)).clamp(max=1.0)
        return None if bool((f == 1.0).all()) else f

    return scale


def rank_groups(
    ranks: Sequence[int], split: float, *, unit: int = 1, saving: float = 0.0
) -> list[list[int]]:
    """Positions of ``ranks`` in batches of similar rank (or size), each batch in order.

    A batch pads every problem to its largest rank, so a rank-20 problem beside a rank-100
    one pays for 100 columns. With ``split > 0`` the largest rank left opens a batch that
    takes every rank ``>= split`` times it; the ranks below it form a batch of their own
    only where the padding they shed, ``unit`` times the sum of their rank differences to
    that largest rank (``unit``: the matrix's ``M N``, so the entries of ``A`` times the
    ranks), is at least ``saving`` (below it, one more batch's per-step overhead costs
    more than the padding); else they stay in the batch. ``split = 0`` is one batch
    (engine 5).

    Examples
    --------
    >>> from analysis.brackets.stages_rowspan import rank_groups
    >>> rank_groups([30, 100, 80, 20], 0.7)
    [[1, 2], [0], [3]]
    >>> rank_groups([30, 100, 80, 20], 0.7, unit=256 * 256, saving=2e6)
    [[1, 2], [0, 3]]
    >>> rank_groups([30, 100, 80, 20], 0.0)
    [[0, 1, 2, 3]]
    """
    left = list(range(len(ranks)))
    if split <= 0:
        return [left] if left else []
    out = []
    while left:
        top = max(ranks[i] for i in left)
        group = [i for i in left if ranks[i] >= split * top]
        rest = [i for i in left if ranks[i] < split * top]
        if unit * sum(top - ranks[i] for i in rest) < saving:
            group, rest = left, []
        out.append(group)
        left = rest
    return out


def _split_calls(
    run, problems: list, ranks: Sequence[int], split: float, unit: int, saving: float
) -> list:
    """``run(sub)`` per batch of :func:`rank_groups`, results put back in problem order."""
    out: list = [None] * len(problems)
    for group in rank_groups(ranks, split, unit=unit, saving=saving):
        for i, r in zip(group, run([problems[i] for i in group]), strict=True):
            out[i] = r
    return out


def _lower_round(
    bs,
    caches,
    problems,
    settings: RowSpanSettings,
    device=None,
    start=None,
    transform=True,
    split=(0.0, 0.0),
) -> list[bool]:
    """One batch of row-span lower trials over ``(matrix, eps, size)`` problems.

    Per problem: the row-span family at that size (evaluated and offered if new); then,
    up to ``settings.ascent_max_size``, the projected ascent from the best row-span member
    and, up to ``settings.group_max_size``, also from the best group witness. Every
    result is offered as found and after the inverse transform; a near miss at a small
    size gets engine 4's LP polish, once, from the problem's best run. Success: the size
    certifies above its eps. ``start(o, m)`` (engine 6), if given, replaces the best
    row-span member as the row-span starts: a list of ``(R, Y)`` pairs. ``transform=False``
    (engine 6) skips the inverse transform of those starts: a row-span member has
    ``Y A R`` diagonal up to rounding, so the transform only rescales its rows. ``split``
    (engine 6) runs the ascents in batches of similar size (:func:`rank_groups`).
    """
    if not problems:
        return []
    base = settings.base
    runs, starts = [], []
    for p, (o, _, m) in enumerate(problems):
        b, fam = bs[o], caches[o]["rowspan"]
        fam.evaluate(b, m)
        if start is None:
            st = fam.start(m)
            sts = [] if st is None else [st]
        else:
            sts = start(o, m)
        for st in sts if transform else ():
            offer_transformed(b, st[0], st[1], "rowspan")
        if m > settings.ascent_max_size:
            continue
        for st in sts:
            runs.append((p, "rowspan"))  # rows of R scaled into the l1 ball (same margin)
            starts.append((st[0] / max(float(abs(st[0]).sum(1).max()), 1e-300), st[1]))
        gk = caches[o]["groups"]
        if m <= settings.group_max_size and m in gk:
            runs.append((p, "groups"))
            starts.append(_lower.group_witness(b.A, gk[m][1], m)[:2])
    if runs:
        batch = [problems[p] for p, _ in runs]
        sizes = torch.tensor([m for _, _, m in batch])
        factor = (sizes.double() / 12).sqrt().clamp(1.0, settings.ascent_max_factor)
        budgets = (base.lower_steps * factor).round().long()
        ms = [m for _, _, m in batch]
        found = _split_calls(
            lambda sub: stages._ascend(
                bs,
                [batch[i] for i in sub],
                [starts[i] for i in sub],
                budgets[torch.tensor(sub, dtype=torch.long)],
                device,
            ),
            list(range(len(batch))),
            ms,
            split[0],
            bs[0].M * bs[0].N,
            split[1],
        )
        best: dict[int, tuple[float, np.ndarray, np.ndarray]] = {}
        for (p, _), (o, _, _), (Rp, Yp) in zip(runs, batch, found, strict=True):
            b = bs[o]
            mu = max(b.offer_lower(Rp, Yp, "ascent"), offer_transformed(b, Rp, Yp, "ascent"))
            if p not in best or mu > best[p][0]:
                best[p] = (mu, Rp, Yp)
        # The LP polish of a near miss runs once per problem, from its best run.
        for p, (mu, Rp, Yp) in best.items():
            o, e, m = problems[p]
            b = bs[o]
            if not mu > e and m <= base.lp_max_size and mu > base.lp_near * e:
                Rl, Yl, mg = _lower.lp_polish(b.A, Rp, Yp, rounds=base.lp_rounds)
                if mg > mu:
                    b.offer_lower(Rl, Yl, "ascent+lp")
    return [m in bs[o].lower and bs[o].lower[m].margin > e for o, e, m in problems]


def refine(
    bs,
    caches,
    targets: Sequence[float],
    settings: RowSpanSettings,
    device=None,
    start=None,
    transform=True,
    split=(0.0, 0.0),
) -> None:
    """Engine 5's per-eps search: engine 4's upper trials, row-span lower trials.

    ``settings.base.rounds`` rounds. Upper trials are placed as in engine 4
    (:func:`analysis.brackets.stages.refine`) and anneal over the horizon of
    :class:`~analysis.brackets.settings.RowSpanSettings`. Lower trials run in the first
    ``settings.lower_rounds`` rounds: the first at the largest size whose row-span margin
    times ``settings.lower_boost`` exceeds eps (else ``lo + 1``), then engine 4's gallop /
    bisection and resolution stop, each trial by :func:`_lower_round` (``start``: its
    row-span start, None for engine 5's; ``transform``: whether that start's inverse
    transform is offered). ``split = (split, saving)`` with ``split > 0`` (engine 6) runs
    each round's upper and lower trials in batches of similar rank and size
    (:func:`rank_groups`). Failed trials only steer the search; they never
    enter a bracket.

    Examples
    --------
    >>> from analysis.brackets import stages, stages_rowspan
    >>> from analysis.datasets import example_head
    >>> from analysis.brackets.settings import rowspan_settings
    >>> s = rowspan_settings("default")
    >>> b = stages.Builder(example_head(seed=3), None)
    >>> stages.trivial_witnesses(b)
    >>> cache = stages.cheap_stage(b, [0.1])
    >>> stages_rowspan.rowspan_scan([b], [cache], [0.1], s)
    >>> stages_rowspan.refine([b], [cache], [0.1], s)
    >>> b.lo(0.1), b.hi(0.1)
    (6, 6)
    """
    base = settings.base
    anneal = _anneal(settings)
    lr_scale = _lr_scale(settings, bs[0].N)
    keys = [(o, e) for o in range(len(bs)) for e in targets]
    up_fail: dict[tuple[int, float], int | None] = dict.fromkeys(keys)
    low_fail: dict[tuple[int, float], int | None] = dict.fromkeys(keys)
    for rnd in range(base.rounds):
        up, lowp = [], []
        for o, e in keys:
            b, fam = bs[o], caches[o]["rowspan"]
            uf, lf = up_fail[o, e], low_fail[o, e]
            lo, hi = b.lo(e), b.hi(e)
            if lo >= hi:
                continue
            k = stages.upper_trial(lo, hi, uf, rnd, base.upper_first)
            if k is not None:
                up.append((o, e, k))
            if rnd >= settings.lower_rounds:
                continue
            ceil_m = min(hi, min(b.M, b.N), lf - 1 if lf is not None else hi)
            if lo + 1 <= ceil_m and (lf is None or ceil_m - lo >= base.resolution * lo):
                first = None
                if rnd == 0:
                    ok = [
                        m
                        for m, (mu, _, _) in fam.best.items()
                        if lo < m <= ceil_m and mu * settings.lower_boost > e
                    ]
                    first = max(ok) if ok else lo + 1
                lowp.append(
                    (o, e, min(max(stages._next_trial(lo, lf, first, 0.15), lo + 1), ceil_m))
                )
        if not up and not lowp:
            break
        ups = _split_calls(
            lambda sub: stages._upper_round(
                bs, caches, sub, base.upper_steps, device=device, anneal=anneal, lr_scale=lr_scale
            ),
            up,
            [k for _, _, k in up],
            split[0],
            bs[0].M * bs[0].N,
            split[1],
        )
        for (o, e, k), ok in zip(up, ups, strict=True):
            if not ok:
                uf = up_fail[o, e]
                up_fail[o, e] = k if uf is None else max(uf, k)
        for (o, e, m), ok in zip(
            lowp,
            _lower_round(bs, caches, lowp, settings, device, start, transform, split),
            strict=True,
        ):
            if not ok:
                lf = low_fail[o, e]
                low_fail[o, e] = m if lf is None else min(lf, m)


def swapped_starts(bs, caches, settings: SwapSettings):
    """Engine 6's row-span start of a lower trial: the exchange-swapped row set's best
    member (:func:`analysis.brackets.swaps.exchange_swaps` from the pivoted-QR prefix and
    its best member), memoized per matrix and size in ``caches[o]["swaps"]``.

    It replaces engine 5's start (the pivoted-QR member) where an exchange was kept, and
    is engine 5's start otherwise or above ``ascent_max_size`` (no ascent there, so no
    swaps). Every swapped candidate is offered to the matrix's builder as it is
    evaluated, so a row set that certifies raises ``lo`` directly. Returns
    ``start(o, m)`` (a list of ``(R, Y)`` starts) for :func:`refine`.
    """
    rs = settings.rowspan

    def start(o: int, m: int):
        fam = caches[o]["rowspan"]
        qr = fam.start(m)
        if m > rs.ascent_max_size:  # no ascent from it: engine 5's start, no swap cost
            return [] if qr is None else [qr]
        memo = caches[o].setdefault("swaps", {})
        if m not in memo:
            got = _swaps.exchange_swaps(
                bs[o],
                fam.order[:m],
                fam.best.get(m),
                sweeps=settings.swap_sweeps,
                n_out=settings.swap_out,
                n_in=settings.swap_in,
                reweights=rs.reweights,
                ridge=rs.ridge,
                certify_all=settings.certify_all,
            )
            memo[m] = None if got.R is None or not got.swaps else (got.R, got.Y)
        if memo[m] is None:  # no exchange kept: the swapped set is the QR set
            return [] if qr is None else [qr]
        return [memo[m]]

    return start
