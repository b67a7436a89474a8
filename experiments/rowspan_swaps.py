"""Exchange (maxvol-style) swaps on the row set of engine 5's row-span lower witnesses.

Engine 5's row-span witness at size m (:mod:`analysis.brackets.rowspan`) takes the first
m pivots ``S`` of a column-pivoted QR of ``A^T``, a reweighted ridge right inverse ``R``
of the row block ``A_S`` and ``Y = (A_S R)^-1 E_S``; its certified margin is about
``1 / max_j ||R_j||_1``. Pivoted QR picks ``S`` greedily for volume, not for that
quantity. This experiment starts from the same ``S`` and exchanges one selected row for
an unselected one whenever the exchange raises the *certified* margin of the row set
(its best reweighting iterate, offered through the engine's
:class:`~analysis.brackets.stages.Builder`: float32 rounding, then
:func:`analysis.brackets.verify.certified_lower_margin`), so every margin it reports is
a certified one and a swap is kept only if the certificate improves.

Candidates per sweep (so a sweep costs a fixed number of row-set evaluations, each
``O(m N^2)``):

* rows to drop: the ``--out`` selected rows ``p`` that weigh most in the rows of ``R``
  near the maximum, ``sum_j |R_jp| (rho_j / max rho)^8`` with ``rho_j = ||R_j||_1``;
* rows to add, per dropped row ``p``: the ``--in`` unselected rows of largest maxvol
  coefficient ``|C_ip|`` of ``C = A A_S^+`` (the factor by which exchanging ``p`` for
  ``i`` grows the volume of the row block) and the ``--in`` unselected rows of largest
  residual ``||A_i - C_i A_S||_2`` (the next pivots of the QR).

Per dropped row the best exchange is kept if it raises the certified margin; a sweep
ends after every dropped-row candidate was tried, the run after ``--sweeps`` sweeps or a
sweep without an exchange.

Measurement: MiniLM heads of the benchmark text (``experiments.common.minilm_attention``,
heads 0, every, 2 every, ...), eps 0.05 / 0.1 / 0.2. Per head: engine 5's trivial
witnesses, cheap stage and row-span scan (its own settings), then per eps an upward
search from the lower end ``lo`` after the scan (``lo + 1, lo + 2, ...`` until two sizes
in a row fail, at most the scan's upper end), once with the pivoted-QR row sets
(``before``) and once with the swapped ones (``after``). Also engine 5's whole profile
(its final lower end ``lo5``, for comparison) and, at size ``lo5 + 1`` (up to engine 5's
``ascent_max_size``), engine 5's row-span lower trial (:func:`ascent_from`) from the
pivoted-QR row set's best member and from the swapped row set's: would swapped starts
lift the engine's own lower end? CPU seconds by ``time.process_time``; the swaps' CPU of a
(head, eps) counts the sizes first swapped for that eps (sizes are shared across eps).

Usage, from the repository root::

    python -m experiments.rowspan_swaps [--lengths 64 128] [--every 12] [--heads I ...] [--sweeps 3]
                                        [--out 4] [--in 4] [--csv FILE]
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.linalg
import torch

from analysis.attention import fixed_torch_threads
from analysis.brackets import profile_matrix, stages
from analysis.brackets.rowspan import RowSpan, offer_transformed
from analysis.brackets.settings import rowspan_settings
from analysis.brackets.swaps import certified_rowset
from experiments.common import EPS, command_line, minilm_attention

#: Engine 5's row-span settings (``default`` effort): reweightings, ridge, scan grid.
SETTINGS = rowspan_settings("default")


@dataclass
class SwapResult:
    """Outcome of :func:`exchange_swaps` at one size.

    ``rows`` is the final row set, ``(R, Y)`` its best member and ``margin`` that
    member's certified margin; ``start_margin`` is the certified margin of the starting
    row set. ``evaluations`` counts row sets evaluated (each: all its members certified).
    """

    rows: np.ndarray
    margin: float
    start_margin: float
    R: np.ndarray | None
    Y: np.ndarray | None
    sweeps: int
    swaps: int
    evaluations: int


def _drop_order(R: np.ndarray, n_out: int) -> np.ndarray:
    """Positions in ``S`` whose columns of ``R`` weigh most in the rows near max rho."""
    rho = np.abs(R).sum(1)
    w = (rho / rho.max()) ** 8
    score = w @ np.abs(R)
    return np.argsort(-score, kind="stable")[:n_out]


def _coefficients(A: np.ndarray, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``C = A A_S^+`` ``[M, m]`` and the residuals ``||A_i - C_i A_S||_2`` ``[M]``."""
    AS = A[S]
    C = A @ scipy.linalg.pinv(AS)
    res = np.linalg.norm(A - C @ AS, axis=1)
    return C, res


def exchange_swaps(
    b: stages.Builder,
    S0: np.ndarray,
    *,
    sweeps: int = 3,
    n_out: int = 4,
    n_in: int = 4,
    reweights: int = SETTINGS.reweights,
    ridge: float = SETTINGS.ridge,
) -> SwapResult:
    """Greedy exchange swaps from the row set ``S0`` that raise the certified margin.

    A swap is kept only if the best certified member of the new row set has a strictly
    larger certified margin than the current one, so the result's margin is never below
    the start's (both certified through ``b``). See the module docstring for the
    candidates.
    """
    A = b.A
    S = np.array(S0, dtype=np.int64)
    mu, R, Y = certified_rowset(b, S, reweights=reweights, ridge=ridge)
    start = mu
    evals, swaps, done = 1, 0, 0
    for _ in range(sweeps):
        if R is None:
            break
        done += 1
        changed = False
        C, res = _coefficients(A, S)
        for p in _drop_order(R, n_out):
            free = np.ones(A.shape[0], dtype=bool)
            free[S] = False
            by_vol = np.where(free, np.abs(C[:, p]), -np.inf)
            by_res = np.where(free, res, -np.inf)
            cand = [int(i) for i in np.argsort(-by_vol, kind="stable")[:n_in] if free[i]]
            cand += [int(i) for i in np.argsort(-by_res, kind="stable")[:n_in] if free[i]]
            best: tuple[float, np.ndarray | None, np.ndarray | None, np.ndarray | None]
            best = (mu, None, None, None)
            for i in dict.fromkeys(cand):  # unique, in order
                T = S.copy()
                T[p] = i
                got = certified_rowset(b, T, reweights=reweights, ridge=ridge)
                evals += 1
                if got[0] > best[0]:
                    best = (got[0], T, got[1], got[2])
            if best[1] is not None:
                mu, S, R, Y = best[0], best[1], best[2], best[3]
                swaps += 1
                changed = True
                C, res = _coefficients(A, S)
        if not changed:
            break
    return SwapResult(S, mu, start, R, Y, done, swaps, evals)


def ascent_from(b: stages.Builder, e: float, R: np.ndarray, Y: np.ndarray) -> float:
    """Best certified margin of engine 5's lower trial from the start ``(R, Y)``.

    As in engine 5's lower rounds (``stages_rowspan._lower_round``, row-span start): the
    start's inverse transform, then the projected ascent from ``R`` scaled into the l1
    ball and ``Y``, with engine 5's budget for the size, offered as found and after the
    inverse transform. No group start and no LP polish.
    """
    m = R.shape[1]
    best = offer_transformed(b, R, Y, "rowspan-swap")
    factor = min(max(np.sqrt(m / 12), 1.0), SETTINGS.ascent_max_factor)
    steps = torch.tensor([round(SETTINGS.base.lower_steps * factor)])
    start = (R / max(float(np.abs(R).sum(1).max()), 1e-300), Y)
    ((Rp, Yp),) = stages._ascend([b], [(0, e, m)], [start], steps)
    return max(best, b.offer_lower(Rp, Yp, "ascent"), offer_transformed(b, Rp, Yp, "ascent"))


def _upward(margin_at, e: float, lo: int, ceil_m: int) -> tuple[int, dict[int, float]]:
    """Largest size in ``lo + 1, lo + 2, ...`` (until two fail in a row, at most
    ``ceil_m``) whose margin exceeds ``e`` (``lo`` if none), and the margins seen."""
    seen, best, fails, m = {}, lo, 0, lo + 1
    while m <= ceil_m and fails < 2:
        seen[m] = margin_at(m)
        if seen[m] > e:
            best, fails = m, 0
        else:
            fails += 1
        m += 1
    return best, seen


def measure_head(A: np.ndarray, *, sweeps: int, n_out: int, n_in: int) -> list[dict]:
    """Rows ``(eps, lo after the scan, before / after sizes, margins, CPU)`` of one head."""
    c0 = time.process_time()
    prof = profile_matrix(A, eps=EPS, engine=5)
    cpu_engine = time.process_time() - c0
    b = stages.Builder(A, None)
    stages.trivial_witnesses(b)
    stages.cheap_stage(b, list(EPS))
    fam = RowSpan(A, reweights=SETTINGS.reweights, ridge=SETTINGS.ridge)
    for e in EPS:
        fam.scan(b, e, b.lo(e), b.hi(e), SETTINGS.scan_grid)
    ends = {e: (b.lo(e), b.hi(e)) for e in EPS}  # before any swap is offered
    scratch = stages.Builder(A, None)  # the swaps' candidates go here, not into b
    swapped: dict[int, SwapResult] = {}
    cpu_swaps = {"t": 0.0}

    def after_at(m: int) -> float:
        if m not in swapped:
            c0 = time.process_time()
            swapped[m] = exchange_swaps(
                scratch, fam.order[:m], sweeps=sweeps, n_out=n_out, n_in=n_in
            )
            cpu_swaps["t"] += time.process_time() - c0
        return swapped[m].margin

    rows = []
    for e in EPS:
        lo, hi = ends[e]
        ceil_m = min(hi, *A.shape)
        t0 = cpu_swaps["t"]
        before, seen_b = _upward(lambda m: fam.evaluate(b, m), e, lo, ceil_m)
        after, seen_a = _upward(after_at, e, lo, ceil_m)
        sizes = sorted(set(seen_b) & set(seen_a))
        ratios = [seen_a[m] / seen_b[m] for m in sizes if seen_b[m] > 0 and seen_a[m] > -np.inf]
        first = lo + 1 if lo + 1 in seen_a else None
        # engine 5's lower trial one size above its final lower end, from either row set
        m5 = prof.bracket(e)[0] + 1
        asc_qr = asc_sw = None
        c0 = time.process_time()
        if m5 <= min(ceil_m, SETTINGS.ascent_max_size):
            fam.evaluate(b, m5)
            st = fam.start(m5)
            sw = swapped.get(m5) or exchange_swaps(
                scratch, fam.order[:m5], sweeps=sweeps, n_out=n_out, n_in=n_in
            )
            if st is not None and sw.R is not None:
                asc_qr = ascent_from(scratch, e, *st)
                asc_sw = ascent_from(scratch, e, sw.R, sw.Y)
        cpu_ascent = time.process_time() - c0  # both ascents and, if new, the size's swaps
        rows.append(
            {
                "eps": e,
                "lo_scan": lo,
                "hi_scan": hi,
                "before": before,
                "after": after,
                "engine5_lo": prof.bracket(e)[0],
                "margin_before_lo1": None if first is None else round(float(seen_b[first]), 4),
                "margin_after_lo1": None if first is None else round(float(seen_a[first]), 4),
                "median_ratio": round(float(np.median(ratios)), 4) if ratios else None,
                "ascent_size": m5,
                "ascent_qr": None if asc_qr is None else round(float(asc_qr), 4),
                "ascent_swapped": None if asc_sw is None else round(float(asc_sw), 4),
                "sizes": len(sizes),
                "swaps": int(sum(swapped[m].swaps for m in sizes)),
                "evaluations": int(sum(swapped[m].evaluations for m in sizes)),
                "cpu_swaps": round(cpu_swaps["t"] - t0, 2),
                "cpu_ascent_trials": round(cpu_ascent, 2),
                "cpu_engine5_profile": round(cpu_engine, 2),
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", type=int, nargs="+", default=[64, 128])
    ap.add_argument("--every", type=int, default=12)
    ap.add_argument(
        "--heads", type=int, nargs="*", help="explicit head indices (overrides --every)"
    )
    ap.add_argument("--sweeps", type=int, default=3)
    ap.add_argument("--out", dest="n_out", type=int, default=4)
    ap.add_argument("--in", dest="n_in", type=int, default=4)
    ap.add_argument("--csv", type=Path)
    args = ap.parse_args()
    print("command:", command_line("experiments.rowspan_swaps"), flush=True)
    rows = []
    with fixed_torch_threads(1):
        for n in args.lengths:
            A_all = minilm_attention(n)
            heads = args.heads if args.heads else range(0, len(A_all), args.every)
            for i in heads:
                for r in measure_head(
                    A_all[i], sweeps=args.sweeps, n_out=args.n_out, n_in=args.n_in
                ):
                    r = {"length": n, "head": i} | r
                    rows.append(r)
                    print(json.dumps(r), flush=True)
    df = pd.DataFrame(rows)
    if args.csv:
        df.to_csv(args.csv, index=False)
    summary = {}
    for n, d in df.groupby("length"):
        summary[str(n)] = {
            "pairs": len(d),
            "gained_sizes_sum": int((d["after"] - d["before"]).sum()),
            "pairs_gaining": int((d["after"] > d["before"]).sum()),
            "before_sum": int(d["before"].sum()),
            "after_sum": int(d["after"].sum()),
            "engine5_lo_sum": int(d["engine5_lo"].sum()),
            "pairs_after_above_engine5": int((d["after"] > d["engine5_lo"]).sum()),
            "median_margin_ratio": round(float(d["median_ratio"].dropna().median()), 4),
            "median_ratio_at_lo_plus_1": round(
                float(
                    (
                        d["margin_after_lo1"]
                        / d["margin_before_lo1"].where(d["margin_before_lo1"] > 0)
                    )
                    .dropna()
                    .median()
                ),
                4,
            ),
            "cpu_engine5_profile_total": round(
                float(d.groupby("head")["cpu_engine5_profile"].first().sum()), 1
            ),
            "ascent_pairs": int(d["ascent_qr"].notna().sum()),
            "ascent_qr_certified_above_eps": int((d["ascent_qr"] > d["eps"]).sum()),
            "ascent_swapped_certified_above_eps": int((d["ascent_swapped"] > d["eps"]).sum()),
            "ascent_median_ratio_swapped_over_qr": round(
                float((d["ascent_swapped"] / d["ascent_qr"].where(d["ascent_qr"] > 0)).median()), 4
            ),
            "cpu_swaps_total": round(float(d["cpu_swaps"].sum()), 1),
            "cpu_swaps_median_per_pair": round(float(d["cpu_swaps"].median()), 2),
        }
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
