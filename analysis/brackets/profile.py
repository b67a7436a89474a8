"""Certified rank profiles: best verified upper errors ``e_k`` and lower margins ``mu_m``.

A profile belongs to one matrix. Brackets for any eps are read off it:
``hi(eps) = min{k : e_k <= eps}``, ``lo(eps) = max{m : mu_m > eps}`` (0 if none), so they
are monotone in eps by construction. Every stored value is a certified number from
:mod:`analysis.brackets.verify`; a candidate that fails verification is discarded.
"""

from __future__ import annotations

import base64
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from analysis.attention import check_attention, fixed_torch_threads
from analysis.brackets import lower as _lower
from analysis.brackets import upper as _upper
from analysis.brackets.verify import certified_lower_margin, certified_upper_error
from analysis.validation import ParameterError, check_choice, check_eps_grid

EFFORTS = ("fast", "default", "thorough")
# Per effort: bisection rounds and optimizer steps for upper / lower witnesses. Every level is equally sound; more effort only finds better witnesses.
# ``close_*``: the closing pass on nearly closed brackets (see :func:`_close`); 0 steps
# switches it off.
_EFFORT_SETTINGS: dict[str, dict[str, int]] = {
    "fast": {
        "rounds": 0,
        "upper_steps": 0,
        "lower_steps": 0,
        "close_upper_steps": 0,
        "close_lower_steps": 0,
        "close_seeds": 0,
    },
    "default": {
        "rounds": 6,
        "upper_steps": 300,
        "lower_steps": 400,
        "close_upper_steps": 1200,
        "close_lower_steps": 600,
        "close_seeds": 3,
    },
    "thorough": {
        "rounds": 7,
        "upper_steps": 800,
        "lower_steps": 1200,
        "close_upper_steps": 2500,
        "close_lower_steps": 1200,
        "close_seeds": 8,
    },
}
PROFILE_FORMAT = 1


@dataclass(frozen=True)
class UpperWitness:
    """Rank-k witness ``B = U W^T`` with certified error ``error``; ``U`` ``[M, k]``, ``W`` ``[N, k]``."""

    rank: int
    error: float
    method: str
    U: np.ndarray = field(repr=False)
    W: np.ndarray = field(repr=False)


@dataclass(frozen=True)
class LowerWitness:
    """Size-m witness ``(R, Y)`` with certified margin ``margin``; ``R`` ``[N, m]``, ``Y`` ``[m, M]``."""

    size: int
    margin: float
    method: str
    R: np.ndarray = field(repr=False)
    Y: np.ndarray = field(repr=False)


@dataclass
class Profile:
    """Best certified witnesses of one matrix, by rank (upper) and size (lower).

    Attributes
    ----------
    shape : (M, N)
    upper : dict rank -> UpperWitness
    lower : dict size -> LowerWitness
    eps_targets : the eps values refinement aimed at (sorted)
    effort : how it was computed (the search is deterministic: no seed)
    stats : timings (seconds) and the method behind each targeted end
    """

    shape: tuple[int, int]
    upper: dict[int, UpperWitness]
    lower: dict[int, LowerWitness]
    eps_targets: tuple[float, ...]
    effort: str
    stats: dict[str, Any] = field(default_factory=dict)

    # -- reading brackets ---------------------------------------------------------
    def upper_end(self, eps: float) -> UpperWitness:
        """The least-rank stored witness with certified error <= eps.

        Where none reaches eps, the identity witness ``B = A`` (``U = A, W = I``, or
        ``U = I, W = A^T`` when ``M < N``) of rank ``min(M, N)`` and error exactly 0: it is
        derived from ``A`` itself, so it is not stored (``U`` and ``W`` are None here;
        :func:`identity_witness` builds them).
        """
        ok = [w for w in self.upper.values() if w.error <= eps]
        if not ok:
            return UpperWitness(min(self.shape), 0.0, "identity", None, None)
        return min(ok, key=lambda w: w.rank)

    def lower_end(self, eps: float) -> LowerWitness | None:
        ok = [w for w in self.lower.values() if w.margin > eps]
        return max(ok, key=lambda w: w.size) if ok else None

    def bracket(self, eps: float) -> tuple[int, int]:
        """Certified ``(lo, hi)`` with ``lo <= r_eps(A) <= hi``."""
        (eps,) = check_eps_grid([eps])
        hi = self.upper_end(eps).rank
        low = self.lower_end(eps)
        lo = 0 if low is None else low.size
        if hi == 0:
            lo = 0
        if lo > hi:  # both certified: impossible unless the verifier is wrong
            raise RuntimeError(f"inconsistent certificates at eps={eps}: lo={lo} > hi={hi}")
        return lo, hi

    def brackets(self, eps: Sequence[float]) -> list[dict[str, Any]]:
        out = []
        for e in check_eps_grid(eps):
            lo, hi = self.bracket(e)
            out.append({"eps": e, "lower": lo, "upper": hi})
        return out

    def errors(self) -> np.ndarray:
        """``e_k`` for k = 0..min(M, N): running minimum of stored certified errors (inf if none)."""
        K = min(self.shape)
        e = np.full(K + 1, np.inf)
        for w in self.upper.values():
            e[w.rank] = min(e[w.rank], w.error)
        return np.minimum.accumulate(e)

    def margins(self) -> np.ndarray:
        """``mu_m`` for m = 0..min(M, N): best stored margin at size >= m (-inf if none)."""
        K = min(self.shape)
        mu = np.full(K + 2, -np.inf)
        for w in self.lower.values():
            mu[w.size] = max(mu[w.size], w.margin)
        return np.maximum.accumulate(mu[::-1])[::-1][: K + 1]

    # -- serialization --------------------------------------------------------------
    def to_dict(self, *, witnesses: bool = True, arrays: str = "lists") -> dict[str, Any]:
        """JSON-able form.

        ``arrays="lists"`` writes witness matrices as nested lists of floats;
        ``arrays="float32-base64"`` as base64 of their float32 bytes (little endian, row
        major), about four times smaller and still exact, because every stored witness is
        rounded to float32 *before* it is certified.
        """
        check_choice("arrays", arrays, ("lists", "float32-base64"))

        def enc(a: np.ndarray) -> Any:
            if arrays == "lists":
                return a.tolist()
            return base64.b64encode(a.astype("<f4").tobytes()).decode("ascii")

        def up(w: UpperWitness) -> dict[str, Any]:
            d = {"rank": w.rank, "error": w.error, "method": w.method}
            if witnesses:
                d |= {"U": enc(w.U), "W": enc(w.W)}
            return d

        def lo(w: LowerWitness) -> dict[str, Any]:
            d = {"size": w.size, "margin": w.margin, "method": w.method}
            if witnesses:
                d |= {"R": enc(w.R), "Y": enc(w.Y)}
            return d

        return {
            "format": PROFILE_FORMAT,
            "arrays": arrays,
            "shape": list(self.shape),
            "eps_targets": list(self.eps_targets),
            "effort": self.effort,
            "stats": self.stats,
            "upper": [up(self.upper[k]) for k in sorted(self.upper)],
            "lower": [lo(self.lower[m]) for m in sorted(self.lower)],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Profile:
        """Restore a profile written by :meth:`to_dict` (with witnesses)."""
        M, N = d["shape"]
        b64 = d.get("arrays", "lists") == "float32-base64"

        def arr(x, rows, cols):
            if b64:
                a = np.frombuffer(base64.b64decode(x), dtype="<f4").astype(np.float64)
            else:
                a = np.asarray(x, dtype=np.float64)
            return a.reshape(rows, cols)

        upper = {
            int(w["rank"]): UpperWitness(
                int(w["rank"]),
                float(w["error"]),
                w["method"],
                arr(w["U"], M, w["rank"]),
                arr(w["W"], N, w["rank"]),
            )
            for w in d["upper"]
        }
        lower = {
            int(w["size"]): LowerWitness(
                int(w["size"]),
                float(w["margin"]),
                w["method"],
                arr(w["R"], N, w["size"]),
                arr(w["Y"], w["size"], M),
            )
            for w in d["lower"]
        }
        return cls(
            (M, N),
            upper,
            lower,
            tuple(d["eps_targets"]),
            d["effort"],
            dict(d.get("stats", {})),
        )

    def witness_arrays(self, w: UpperWitness, A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(U, W)`` of an upper witness, built from ``A`` for the identity witness."""
        return identity_witness(A) if w.U is None else (w.U, w.W)

    def reverify(self, A: np.ndarray) -> list[str]:
        """Re-check every stored witness against ``A``; return a description of each failure."""
        A = check_attention(A)[0]
        fails = []
        for w in self.upper.values():
            if not certified_upper_error(A, *self.witness_arrays(w, A)) <= w.error:
                fails.append(f"upper rank {w.rank}")
        for w in self.lower.values():
            if not certified_lower_margin(A, w.R, w.Y) >= w.margin:
                fails.append(f"lower size {w.size}")
        return fails


def identity_witness(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``B = A`` as a rank-``min(M, N)`` factorization: ``(A, I)`` or ``(I, A^T)``."""
    M, N = A.shape
    return (A.copy(), np.eye(N)) if N <= M else (np.eye(M), A.T.copy())


def _f32(X: np.ndarray) -> np.ndarray:
    """Round to float32 values (held in float64): what gets certified is what is stored,
    and float32 storage of it is then exact."""
    return np.asarray(X, dtype=np.float32).astype(np.float64)


class _Builder:
    """Collects candidate witnesses, keeping the best *certified* one per rank / size."""

    def __init__(self, A: np.ndarray, previous: Profile | None):
        self.A = A
        self.M, self.N = A.shape
        self.upper: dict[int, UpperWitness] = {}
        self.lower: dict[int, LowerWitness] = {}
        self.rejected = 0
        if previous is not None:
            if tuple(previous.shape) != A.shape:
                raise ParameterError("previous", f"a profile of shape {A.shape}", previous.shape)
            for w in previous.upper.values():  # re-certified, never trusted
                self.offer_upper(w.U, w.W, w.method)
            for w in previous.lower.values():
                self.offer_lower(w.R, w.Y, w.method)

    def offer_upper(self, U: np.ndarray, W: np.ndarray, method: str) -> float:
        k = U.shape[1]
        U, W = _f32(U), _f32(W)
        e = certified_upper_error(self.A, U, W)
        cur = self.upper.get(k)
        if cur is None or e < cur.error:
            self.upper[k] = UpperWitness(
                k, e, method, np.array(U, np.float64), np.array(W, np.float64)
            )
        return e

    def offer_lower(self, R: np.ndarray, Y: np.ndarray, method: str) -> float:
        m = R.shape[1]
        R, Y = _f32(R), _f32(Y)
        mu = certified_lower_margin(self.A, R, Y)
        if not mu > 0:
            self.rejected += 1
            return mu
        cur = self.lower.get(m)
        if cur is None or mu > cur.margin:
            self.lower[m] = LowerWitness(
                m, mu, method, np.array(R, np.float64), np.array(Y, np.float64)
            )
        return mu

    def hi(self, eps: float) -> int:
        ok = [k for k, w in self.upper.items() if w.error <= eps]
        return min(ok) if ok else min(self.M, self.N)  # the implicit identity witness

    def lo(self, eps: float) -> int:
        return max((m for m, w in self.lower.items() if w.margin > eps), default=0)


def _trivial(b: _Builder) -> None:
    A, M, N = b.A, b.M, b.N
    b.offer_upper(np.zeros((M, 0)), np.zeros((N, 0)), "zero")
    # The identity witness (rank min(M, N), error 0) is implicit: see Profile.upper_end.
    Y = np.zeros((1, M))
    Y[0, int(A.sum(1).argmax())] = 1.0
    b.offer_lower(np.ones((N, 1)), Y, "row-sum")


def _first_below(curve: np.ndarray, eps: float) -> int | None:
    idx = np.nonzero(curve <= eps * (1 - 1e-9))[0]
    return int(idx[0]) if idx.size else None


def _cheap_stage(b: _Builder, eps_all: Sequence[float]) -> dict[str, Any]:
    """SVD projections, row covers and group (Gastinel-Kahan) witnesses for every eps."""
    A = b.A
    K = min(b.M, b.N)
    V, err_svd = _upper.svd_errors(A)
    order, radius = _upper.row_cover_order(A)
    for eps in eps_all:
        k = _first_below(err_svd, eps)
        if k is not None and 0 < k < K:
            for kk in (k, k + 1):  # k + 1 in case rounding puts k just above eps
                U, W = _upper.svd_witness(A, V, kk)
                if b.offer_upper(U, W, "svd") <= eps or kk == K:
                    break
        k = _first_below(radius, eps)
        if k is not None and 0 < k < K:
            U, W = _upper.row_cover_witness(A, order, k)
            b.offer_upper(U, W, "row-cover")
    m_cap = max(1, min(K, b.hi(min(eps_all))))
    sizes = list(range(1, m_cap + 1))
    best: dict[int, tuple[float, np.ndarray]] = {}
    for method in ("ward", "average-cosine"):
        labels = _lower.column_partitions(A, sizes, method=method)
        for m in sizes:
            _, _, mg = _lower.group_witness(A, labels[m - 1], m)
            if m not in best or mg > best[m][0]:
                best[m] = (mg, labels[m - 1])
    for eps in eps_all:
        ms = [m for m in sizes if best[m][0] > eps * (1 + 1e-9)]
        for m in sorted(ms, reverse=True)[:2]:
            R, Y, _ = _lower.group_witness(A, best[m][1], m)
            if b.offer_lower(R, Y, "groups") > eps:
                break
    return {"svd_V": V, "groups": best}


def _budgets(sizes: torch.Tensor, base: int, ref: int) -> torch.Tensor:
    """Step budget per problem: large problems cost more per step, so they get fewer
    steps (down to 0.5x) and small ones somewhat more (up to 1.5x) than ``base`` at ``ref``."""
    return (base * (ref / sizes.double()).clamp(0.5, 1.5)).round().long()


def _upper_start(b: _Builder, cache, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Starting factors at rank k: the truncated SVD of the best refined witness of a
    larger rank (already shaped by the l1 objective), else the truncated SVD of A."""
    larger = [w for w in b.upper.values() if w.rank > k and w.method.startswith("adam")]
    if larger:
        w = min(larger, key=lambda w: w.rank)
        Ub, Sb, Vbh = np.linalg.svd(w.U @ w.W.T, full_matrices=False)
        return Ub[:, :k] * Sb[:k], Vbh[:k].T
    return _upper.svd_witness(b.A, cache["svd_V"], k)


def _stack_A(bs: Sequence[_Builder], owners: Sequence[int]) -> torch.Tensor:
    """``[P, M, N]`` float32 stack of each problem's matrix (a view when all are one matrix)."""
    if len(bs) == 1:
        return torch.from_numpy(bs[0].A).float().expand(len(owners), -1, -1)
    mats = [torch.from_numpy(b.A).float() for b in bs]
    return torch.stack([mats[o] for o in owners])


def _upper_round(bs, caches, problems, steps, *, svd_start=False, method="adam") -> list[bool]:
    """One batched Adam refinement over ``(matrix, eps, rank)`` problems; success per problem.

    ``bs`` and ``caches`` are the builders and cheap-stage caches of the matrices batched
    together (one shape); a problem's first entry indexes them. Starts from
    :func:`_upper_start`, or with ``svd_start`` from the truncated SVD of A.
    """
    if not problems:
        return []
    M, N = bs[0].M, bs[0].N
    K = max(k for _, _, k in problems)
    P = len(problems)
    U0 = torch.zeros(P, M, K, dtype=torch.float32)
    W0 = torch.zeros(P, N, K, dtype=torch.float32)
    for p, (o, _, k) in enumerate(problems):
        if svd_start:
            U, W = _upper.svd_witness(bs[o].A, caches[o]["svd_V"], k)
        else:
            U, W = _upper_start(bs[o], caches[o], k)
        U0[p, :, :k] = torch.from_numpy(U)
        W0[p, :, :k] = torch.from_numpy(W)
    At = _stack_A(bs, [o for o, _, _ in problems])
    ranks = torch.tensor([k for _, _, k in problems])
    targets = torch.tensor([e for _, e, _ in problems], dtype=torch.float32)
    U, W, _ = _upper.refine_upper(At, U0, W0, ranks, targets, steps=_budgets(ranks, steps, 24))
    out = []
    for p, (o, eps, k) in enumerate(problems):
        b = bs[o]
        Uk = U[p, :, :k].double()
        Wk = W[p, :, :k].double()
        e = b.offer_upper(Uk.numpy(), Wk.numpy(), method)
        if eps < e < 1.3 * eps:
            # l1 refit of the rows that still violate the target (rows separate given W).
            A64 = torch.from_numpy(b.A)
            row_err = (A64 - Uk @ Wk.T).abs().sum(1)
            bad = torch.nonzero(row_err > 0.98 * eps).squeeze(1)
            if 0 < bad.numel() <= 32:
                Ub = _upper.l1_refit_rows(A64[bad][None], Uk[bad][None], Wk[None])[0]
                Uk = Uk.clone()
                Uk[bad] = Ub
                e = b.offer_upper(Uk.numpy(), Wk.numpy(), method + "+l1")
        out.append(e <= eps)
    return out


def _ascend(
    bs: Sequence[_Builder],
    problems: Sequence[tuple[int, float, int]],
    starts: Sequence[tuple[np.ndarray, np.ndarray]],
    steps: torch.Tensor,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Batched projected ascent (:func:`lower.refine_lower`) from one start per problem.

    ``problems`` are ``(matrix, eps, size)`` with the matrix an index into ``bs``,
    ``starts`` the matching ``(R [N, m], Y [m, M])``, ``steps`` the budget per problem.
    Starts are zero-padded to the largest size; returns the best ``(R, Y)`` per problem
    at its own size, in float64 (not yet certified).
    """
    M, N = bs[0].M, bs[0].N
    K = max(m for _, _, m in problems)
    P = len(problems)
    R0 = torch.zeros(P, N, K, dtype=torch.float32)
    Y0 = torch.zeros(P, K, M, dtype=torch.float32)
    for p, ((_, _, m), (R, Y)) in enumerate(zip(problems, starts, strict=True)):
        R0[p, :, :m] = torch.from_numpy(R)
        Y0[p, :m, :] = torch.from_numpy(Y)
    At = _stack_A(bs, [o for o, _, _ in problems])
    sizes = torch.tensor([m for _, _, m in problems])
    targets = torch.tensor([e for _, e, _ in problems], dtype=torch.float32)
    R, Y, _ = _lower.refine_lower(At, R0, Y0, sizes, targets, steps=steps)
    return [
        (R[p, :, :m].double().numpy(), Y[p, :m, :].double().numpy())
        for p, (_, _, m) in enumerate(problems)
    ]


def _lower_round(bs, caches, problems, steps) -> list[bool]:
    """One batched projected-ascent refinement over ``(matrix, eps, size)`` problems."""
    if not problems:
        return []
    starts = [
        _lower.group_witness(bs[o].A, caches[o]["groups"][m][1], m)[:2] for o, _, m in problems
    ]
    sizes = torch.tensor([m for _, _, m in problems])
    # Each ascent step moves mostly the worst test function, so larger sizes need more
    # steps; a step costs little more at larger sizes (the products are m x M x N).
    budgets = (steps * (sizes.double() / 12).sqrt().clamp(1.0, 2.0)).round().long()
    out = []
    for (o, eps, m), (Rp, Yp) in zip(problems, _ascend(bs, problems, starts, budgets), strict=True):
        b = bs[o]
        mu = b.offer_lower(Rp, Yp, "ascent")
        if not mu > eps and m <= _LP_MAX_SIZE and mu > _LP_NEAR * eps:
            # A near miss at a small size: polish with the exact alternating LPs.
            Rl, Yl, mg = _lower.lp_polish(b.A, Rp, Yp, rounds=_LP_ROUNDS)
            if mg > mu:
                mu = max(mu, b.offer_lower(Rl, Yl, "ascent+lp"))
        out.append(mu > eps)
    return out


# Typical gains of refinement, used only to place the first trial of each search.
_UPPER_FIRST = 0.7  # refined rank / SVD rank
_LOWER_BOOST = 2.5  # refined margin / group margin at the same size
# Exact LP polish of lower witnesses: sizes up to _LP_MAX_SIZE whose ascent margin is
# above _LP_NEAR * eps but not above eps (the R-LP has 2 N m + m^2 variables).
_LP_MAX_SIZE = 8
_LP_NEAR = 0.8
_LP_ROUNDS = 2
# The lower search stops once the sizes left undecided between lo and its nearest
# failed trial are fewer than this fraction of lo (they could raise lo by less than
# that): large sizes, where ascent trials cost most, get fewer rounds.
_RESOLUTION = 0.03


def _next_trial(best: int, fail: int | None, first: int | None, step: float) -> int:
    """Next size to try between a certified end ``best`` and a failed trial ``fail``.

    With no failure yet, gallop from ``best`` by a fraction ``step`` of it (at least 1);
    else take the midpoint. Sign conventions are the caller's: for the upper end ``best``
    is above ``fail`` and ``step`` is negative.
    """
    if first is not None:
        return first
    if fail is None:
        return best + int(math.copysign(max(1, round(abs(step) * best)), step))
    return (best + fail) // 2 if step < 0 else (best + fail + 1) // 2


def _refine(bs, caches, targets: Sequence[float], settings: dict[str, int]) -> None:
    """Per-eps search: one upper and one lower trial per matrix, eps and round, all batched.

    The first upper trial sits at ``_UPPER_FIRST * hi``; after a success the search
    gallops down by 15% of the rank, after a failure it bisects between the failure and
    the certified end (likewise upwards for the lower end, starting at the largest size
    whose group witness, boosted by a typical refinement gain, would pass). The lower
    search of an eps stops once fewer than ``_RESOLUTION * lo`` sizes are undecided.
    Failed sizes only steer the search; they never enter a bracket. The matrices of
    ``bs`` search independently (each its own trials, from its own results); they only
    share the batched optimizer runs.
    """
    keys = [(o, e) for o in range(len(bs)) for e in targets]
    up_fail: dict[tuple[int, float], int | None] = dict.fromkeys(keys)
    low_fail: dict[tuple[int, float], int | None] = dict.fromkeys(keys)
    for rnd in range(settings["rounds"]):
        up, lowp = [], []
        for o, e in keys:
            b, gk = bs[o], caches[o]["groups"]
            uf, lf = up_fail[o, e], low_fail[o, e]
            lo, hi = b.lo(e), b.hi(e)
            if lo >= hi:
                continue
            floor_k = max(lo, 1, uf + 1 if uf is not None else 0)
            if floor_k <= hi - 1:
                first = int(round(_UPPER_FIRST * hi)) if rnd == 0 else None
                k = _next_trial(hi, uf, first, -0.15)
                up.append((o, e, min(max(k, floor_k), hi - 1)))
            ceil_m = min(hi, min(b.M, b.N), lf - 1 if lf is not None else hi)
            if lo + 1 <= ceil_m and (lf is None or ceil_m - lo >= _RESOLUTION * lo):
                first = None
                if rnd == 0:
                    ok = [m for m in gk if lo < m <= ceil_m and gk[m][0] * _LOWER_BOOST > e]
                    first = max(ok) if ok else lo + 1
                m = min(max(_next_trial(lo, lf, first, 0.15), lo + 1), ceil_m)
                if m in gk:
                    lowp.append((o, e, m))
        if not up and not lowp:
            break
        for (o, e, k), ok in zip(
            up, _upper_round(bs, caches, up, settings["upper_steps"]), strict=True
        ):
            if not ok:
                uf = up_fail[o, e]
                up_fail[o, e] = k if uf is None else max(uf, k)
        for (o, e, m), ok in zip(
            lowp, _lower_round(bs, caches, lowp, settings["lower_steps"]), strict=True
        ):
            if not ok:
                lf = low_fail[o, e]
                low_fail[o, e] = m if lf is None else min(lf, m)


# Closing pass (:func:`_close`): brackets with 1 <= hi - lo <= _CLOSE_WIDTH get one more
# try at rank hi - 1 (if the best error there is below _CLOSE_UPPER_NEAR * eps) and at size
# lo + 1 <= _CLOSE_MAX_SIZE (if untried or its best margin is above _CLOSE_LOWER_NEAR * eps).
_CLOSE_WIDTH = 2
_CLOSE_UPPER_NEAR = 1.06
_CLOSE_LOWER_NEAR = 0.6
_CLOSE_MAX_SIZE = 12
_CLOSE_POLISH = 2  # lower starts per size that get the exact LP polish (best by ascent)
_CLOSE_LP_ROUNDS = 3


def _close_lower_starts(
    b: _Builder, m: int, seeds: int
) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Named starting ``(R, Y)`` pairs at size m: the best witness so far ("prev"),
    k-means partitions (raw and unit columns, ``seeds`` seeds each) and splits of the best
    size m - 1 witness's groups, each partition turned into a Gastinel-Kahan witness."""
    A = b.A
    starts = []
    if m in b.lower:
        starts.append(("prev", b.lower[m].R, b.lower[m].Y))
    parts = [("kmeans", lab) for lab in _lower.kmeans_partitions(A, m, list(range(seeds)))]
    if m - 1 in b.lower:
        parts += [("split", lab) for lab in _lower.split_partitions(A, b.lower[m - 1].R)]
    for name, lab in parts:
        R, Y, _ = _lower.group_witness(A, lab, m)
        starts.append((name, R, Y))
    return starts


def _close(bs, caches, targets: Sequence[float], settings: dict[str, int]) -> None:
    """Closing pass: extra search at the two sizes that would close a nearly closed bracket.

    For every matrix of ``bs`` and targeted eps with ``1 <= hi - lo <= _CLOSE_WIDTH``:

    - upper, rank ``hi - 1`` (not below lo): a longer Adam run from the truncated SVD
      (a different start and schedule from the refinement's), then the l1 row refit;
      only where the best error at that rank is already within ``_CLOSE_UPPER_NEAR`` of
      eps (restarts from perturbed starts land on the same error, measured on MiniLM
      heads, so far-off ranks are not worth the time);
    - lower, size ``lo + 1``: multi-start projected ascent from k-means column partitions
      (several seeds, raw and unit columns), splits of the lo witness's groups and the
      best witness so far, all in one batch; the best ``_CLOSE_POLISH`` per size then get
      the exact alternating LP polish.

    Every candidate goes through its matrix's builder (verified); the pass can only add
    witnesses, so it never widens a bracket.
    """
    if not (settings["close_upper_steps"] or settings["close_lower_steps"]):
        return
    ups: dict[tuple[int, int], float] = {}  # (matrix, rank) -> the smallest eps it would decide
    lows: dict[tuple[int, int], float] = {}  # (matrix, size) -> the largest eps it would decide
    for o, b in enumerate(bs):
        for e in targets:
            lo, hi = b.lo(e), b.hi(e)
            if not 1 <= hi - lo <= _CLOSE_WIDTH:
                continue
            k = hi - 1
            cur = b.upper.get(k)
            if k >= max(lo, 1) and cur is not None and cur.error < _CLOSE_UPPER_NEAR * e:
                ups[o, k] = min(ups.get((o, k), e), e)
            m = lo + 1
            low = b.lower.get(m)
            if m <= min(hi, _CLOSE_MAX_SIZE) and (
                low is None or low.margin > _CLOSE_LOWER_NEAR * e
            ):
                lows[o, m] = max(lows.get((o, m), e), e)
    if ups and settings["close_upper_steps"]:
        problems = [(o, e, k) for (o, k), e in sorted(ups.items())]
        _upper_round(
            bs, caches, problems, settings["close_upper_steps"], svd_start=True, method="close"
        )
    if not lows or not settings["close_lower_steps"]:
        return
    problems, starts, names = [], [], []
    for (o, m), e in sorted(lows.items()):
        for name, R, Y in _close_lower_starts(bs[o], m, settings["close_seeds"]):
            problems.append((o, e, m))
            starts.append((R, Y))
            names.append(name)
    budgets = torch.full((len(problems),), settings["close_lower_steps"])
    found = _ascend(bs, problems, starts, budgets)
    scored: dict[tuple[int, int], list[tuple[float, str, np.ndarray, np.ndarray]]] = {}
    for (o, _, m), name, (Rp, Yp) in zip(problems, names, found, strict=True):
        mu = bs[o].offer_lower(Rp, Yp, f"close-{name}")
        scored.setdefault((o, m), []).append((mu, name, Rp, Yp))
    for (o, m), cands in scored.items():
        b = bs[o]
        if b.lower.get(m) is not None and b.lower[m].margin > lows[o, m]:
            continue
        cands.sort(key=lambda c: -c[0])
        for _, name, Rp, Yp in cands[:_CLOSE_POLISH]:
            Rl, Yl, _ = _lower.lp_polish(b.A, Rp, Yp, rounds=_CLOSE_LP_ROUNDS)
            if b.offer_lower(Rl, Yl, f"close-{name}+lp") > lows[o, m]:
                break


def _prune(b: _Builder, keep_eps: Sequence[float]) -> None:
    """Keep the witnesses that decide a bracket on ``keep_eps`` plus the trivial ones."""
    up = {0} & set(b.upper)
    low = {1} & set(b.lower)
    for e in keep_eps:
        if b.hi(e) in b.upper:
            up.add(b.hi(e))
        m = b.lo(e)
        if m:
            low.add(m)
    b.upper = {k: b.upper[k] for k in sorted(up)}
    b.lower = {m: b.lower[m] for m in sorted(low)}


def profile_matrix(
    A: np.ndarray,
    *,
    eps: Sequence[float] = (0.05, 0.1, 0.2),
    effort: str = "default",
    previous: Profile | None = None,
    renormalize: bool = False,
    prune: bool = True,
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
        Time spent searching for witnesses. Every level is equally sound.
    previous : Profile, optional
        An earlier profile of the same matrix: its witnesses are re-verified and kept, so
        a new eps extends it.
    renormalize : bool
        Divide each row by its sum first (else rows must sum to 1 within 1e-4).
    prune : bool
        Keep only the witnesses that decide a targeted bracket (and the trivial ones).
        ``False`` keeps the best certified witness of every rank and size tried, also
        those that decide nothing (the near misses at ``hi - 1`` and ``lo + 1``, for
        diagnostics such as ``benchmarks/bench_closure_limits.py``); brackets are the same.

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
    near miss at a small size, the exact alternating LPs of METHOD.md section 7); then a
    closing pass on brackets of width 1 or 2 (:func:`_close`: a longer upper run at
    ``hi - 1``, multi-start lower witnesses at ``lo + 1`` from k-means partitions and
    splits of the lo witness's groups). Every candidate is verified in float64 before it
    counts (METHOD.md section 3).
    """
    check_choice("effort", effort, EFFORTS)
    targets = tuple(sorted(set(check_eps_grid(eps))))
    A64 = check_attention(A, renormalize=renormalize)
    if A64.shape[0] != 1:
        raise ParameterError("A", "a single matrix of shape (M, N)", A64.shape)
    return _profile_checked([A64[0]], targets, effort, [previous], prune)[0]


def profile_matrices(
    A: np.ndarray | Sequence[np.ndarray],
    *,
    eps: Sequence[float] = (0.05, 0.1, 0.2),
    effort: str = "default",
    previous: Sequence[Profile | None] | None = None,
    renormalize: bool = False,
    prune: bool = True,
) -> list[Profile]:
    """Certified rank profiles of several matrices of one shape, searched side by side.

    Each matrix gets the search :func:`profile_matrix` gives it alone (its own trials,
    decided by its own results); the matrices only share the batched optimizer runs, so
    torch's per-operation overhead, which dominates on heads of this size, is paid once
    per step for all of them instead of once per matrix.

    Parameters
    ----------
    A : array ``[H, M, N]`` or a sequence of ``[M, N]`` arrays of one shape
    eps, effort, renormalize, prune
        As in :func:`profile_matrix`.
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
    return _profile_checked(mats, targets, effort, prevs, prune)


def _profile_checked(
    mats: list[np.ndarray],
    targets: tuple[float, ...],
    effort: str,
    prevs: list[Profile | None],
    prune: bool,
) -> list[Profile]:
    """:func:`profile_matrices` on validated input: float64 ``[M, N]`` matrices of one
    shape, a sorted eps grid and one previous profile (or None) per matrix."""
    H = len(mats)
    settings = _EFFORT_SETTINGS[effort]
    with fixed_torch_threads(1):
        t0 = time.perf_counter()
        bs = [_Builder(a, p) for a, p in zip(mats, prevs, strict=True)]
        for b in bs:
            _trivial(b)
        finite = [e for e in targets if e < 1]
        caches = [_cheap_stage(b, finite or [0.5]) for b in bs]
        t1 = time.perf_counter()
        if finite:
            _refine(bs, caches, finite, settings)
        t2 = time.perf_counter()
        if finite:
            _close(bs, caches, finite, settings)
        t3 = time.perf_counter()
    seconds = {
        "cheap": (t1 - t0) / H,
        "refine": (t2 - t1) / H,
        "close": (t3 - t2) / H,
        "total": (t3 - t0) / H,
    }
    out = []
    for b, prev in zip(bs, prevs, strict=True):
        all_targets = tuple(sorted(set(targets) | set(prev.eps_targets if prev else ())))
        if prune:
            _prune(b, all_targets)
        stats: dict[str, Any] = {"seconds": dict(seconds), "batch": H}
        stats["rejected_lower"] = b.rejected
        stats["methods"] = {
            f"{e:g}": {
                "upper": b.upper[b.hi(e)].method if b.hi(e) in b.upper else "identity",
                "lower": b.lower[b.lo(e)].method if b.lo(e) else "none",
            }
            for e in targets
        }
        out.append(Profile((b.M, b.N), b.upper, b.lower, all_targets, effort, stats))
    return out
