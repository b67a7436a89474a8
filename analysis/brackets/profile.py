"""Certified rank profiles: best verified upper errors ``e_k`` and lower margins ``mu_m``.

A profile belongs to one matrix. Brackets for any eps are read off it:
``hi(eps) = min{k : e_k <= eps}``, ``lo(eps) = max{m : mu_m > eps}`` (0 if none), so they
are monotone in eps by construction. Every stored value is a certified number from
:mod:`analysis.brackets.verify`; a candidate that fails verification is discarded.

This module holds the profile and its witnesses (reading brackets, serialization,
re-verification); :mod:`analysis.brackets.search` computes profiles.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from analysis.attention import check_attention
from analysis.brackets.verify import certified_lower_margin, certified_upper_error
from analysis.validation import ParameterError, check_choice, check_eps_grid

if TYPE_CHECKING:
    import pandas as pd

PROFILE_FORMAT = 1


class Bracket(NamedTuple):
    """Certified ends ``lo <= r_eps(A) <= hi`` at one eps (a tuple: ``lo, hi = bracket``).

    Attributes
    ----------
    lo : int
        Largest size of a certified lower witness with margin > eps (0 if none).
    hi : int
        Least rank of a certified upper witness with error <= eps.

    Examples
    --------
    >>> from analysis.brackets import Bracket
    >>> b = Bracket(3, 5)
    >>> lo, hi = b
    >>> (lo, hi, b.closed, b == (3, 5))
    (3, 5, False, True)
    """

    lo: int
    hi: int

    @property
    def closed(self) -> bool:
        """Whether the bracket pins the rank (``lo == hi``)."""
        return self.lo == self.hi


@dataclass(frozen=True)
class UpperWitness:
    """Rank-k witness ``B = U W^T`` with certified error ``error``; ``U`` ``[M, k]``, ``W`` ``[N, k]``.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.brackets import profile_matrix
    >>> prof = profile_matrix(np.full((4, 4), 0.25), eps=(0.1,), effort="fast")
    >>> w = prof.upper_end(0.1)  # the uniform matrix is u u^T: one rank suffices
    >>> w.rank, w.U.shape, w.W.shape, w.error < 1e-12
    (1, (4, 1), (4, 1), True)
    """

    rank: int
    error: float
    method: str
    U: np.ndarray = field(repr=False)
    W: np.ndarray = field(repr=False)


@dataclass(frozen=True)
class LowerWitness:
    """Size-m witness ``(R, Y)`` with certified margin ``margin``; ``R`` ``[N, m]``, ``Y`` ``[m, M]``.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.brackets import profile_matrix
    >>> prof = profile_matrix(np.eye(3), eps=(0.5,), effort="fast")
    >>> w = prof.lower_end(0.5)  # margin > 0.5 at size 3: r_0.5(I) >= 3
    >>> w.size, w.R.shape, w.Y.shape, w.margin > 0.5
    (3, (3, 3), (3, 3), True)
    """

    size: int
    margin: float
    method: str
    R: np.ndarray = field(repr=False)
    Y: np.ndarray = field(repr=False)


def least_upper(upper: Mapping[int, UpperWitness], eps: float) -> UpperWitness | None:
    """The least-rank witness of ``upper`` with certified error <= eps (None if none).

    With :func:`largest_lower`, the one read-off of a bracket's ends from certified
    witnesses: :meth:`Profile.bracket` and the search's builders both use it.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.brackets import profile_matrix
    >>> from analysis.brackets.profile import least_upper
    >>> prof = profile_matrix(np.full((4, 4), 0.25), eps=(0.1,), effort="fast")
    >>> least_upper(prof.upper, 0.1).rank  # the uniform matrix is u u^T
    1
    >>> least_upper(prof.upper, 1.5).rank  # the zero matrix: every row is off by 1
    0
    >>> least_upper({}, 0.1) is None
    True
    """
    ok = [w for w in upper.values() if w.error <= eps]
    return min(ok, key=lambda w: w.rank) if ok else None


def largest_lower(lower: Mapping[int, LowerWitness], eps: float) -> LowerWitness | None:
    """The largest-size witness of ``lower`` with certified margin > eps (None if none).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.brackets import profile_matrix
    >>> from analysis.brackets.profile import largest_lower
    >>> prof = profile_matrix(np.eye(3), eps=(0.5,), effort="fast")
    >>> largest_lower(prof.lower, 0.5).size  # I's margin is 1 at size 3
    3
    >>> largest_lower(prof.lower, 1.0) is None  # no margin exceeds 1
    True
    """
    ok = [w for w in lower.values() if w.margin > eps]
    return max(ok, key=lambda w: w.size) if ok else None


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

    Examples
    --------
    >>> import json
    >>> from analysis.brackets import Profile, profile_matrix
    >>> from analysis.sources.synthetic import spherical
    >>> A = spherical(16, 3, 2.0, random_state=0).A
    >>> prof = profile_matrix(A, eps=(0.1, 0.3), effort="fast")
    >>> prof.bracket(0.3)
    Bracket(lo=3, hi=5)
    >>> bool(prof.errors()[5] <= 0.3 < prof.margins()[3])  # the read-off behind it
    True
    >>> d = json.loads(json.dumps(prof.to_dict()))
    >>> back = Profile.from_dict(d, A=A)  # every witness re-verified against A
    >>> back.brackets([0.1, 0.3]) == prof.brackets([0.1, 0.3])
    True
    >>> d["upper"][0]["error"] /= 2  # an edited file claims a smaller error
    >>> Profile.from_dict(d, A=A)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: profile: expected a profile whose every witness re-verifies against A, got [...]
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
        w = least_upper(self.upper, eps)
        return UpperWitness(min(self.shape), 0.0, "identity", None, None) if w is None else w

    def lower_end(self, eps: float) -> LowerWitness | None:
        """The largest-size stored witness with certified margin > eps (None if none)."""
        return largest_lower(self.lower, eps)

    def bracket(self, eps: float) -> Bracket:
        """Certified ``(lo, hi)`` with ``lo <= r_eps(A) <= hi``.

        Parameters
        ----------
        eps : float
            The tolerance, > 0.

        Returns
        -------
        Bracket
            A named tuple ``(lo, hi)``; ``lo, hi = prof.bracket(eps)`` unpacks it.

        Examples
        --------
        >>> import numpy as np
        >>> from analysis.brackets import profile_matrix
        >>> prof = profile_matrix(np.full((4, 4), 0.25), eps=(0.1,), effort="fast")
        >>> prof.bracket(0.1)
        Bracket(lo=1, hi=1)
        >>> lo, hi = prof.bracket(0.1)
        """
        (eps,) = check_eps_grid([eps])
        hi = self.upper_end(eps).rank
        low = self.lower_end(eps)
        lo = 0 if low is None else low.size
        if hi == 0:
            lo = 0
        if lo > hi:  # both certified: impossible unless the verifier is wrong
            raise RuntimeError(f"inconsistent certificates at eps={eps}: lo={lo} > hi={hi}")
        return Bracket(lo, hi)

    def brackets(self, eps: Sequence[float]) -> list[Bracket]:
        """:meth:`bracket` at each eps, in the order given.

        Examples
        --------
        >>> import numpy as np
        >>> from analysis.brackets import profile_matrix
        >>> prof = profile_matrix(np.eye(3), eps=(0.5, 2.5), effort="fast")
        >>> prof.brackets([0.5, 2.5])
        [Bracket(lo=3, hi=3), Bracket(lo=0, hi=0)]
        """
        return [self.bracket(e) for e in check_eps_grid(eps)]

    def to_frame(self, eps: Sequence[float]) -> pd.DataFrame:
        """Tidy table of the brackets at each eps: columns ``eps``, ``lower``, ``upper``.

        Examples
        --------
        >>> from analysis.brackets import profile_matrix
        >>> from analysis.sources.synthetic import identity
        >>> prof = profile_matrix(identity(3).A, eps=(0.5, 2.5), effort="fast")
        >>> prof.to_frame([0.5, 2.5])
           eps  lower  upper
        0  0.5      3      3
        1  2.5      0      0
        """
        import pandas as pd  # not at import: the engine's workers never need it

        grid = check_eps_grid(eps)
        ends = self.brackets(grid)
        return pd.DataFrame(
            {
                "eps": pd.Series(grid, dtype=float),
                "lower": pd.Series([b.lo for b in ends], dtype=int),
                "upper": pd.Series([b.hi for b in ends], dtype=int),
            }
        )

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

        Examples
        --------
        >>> import json
        >>> from analysis.brackets import profile_matrix
        >>> from analysis.sources.synthetic import permuted_blocks
        >>> prof = profile_matrix(permuted_blocks(8, 2, random_state=0).A, eps=(0.1,), effort="fast")
        >>> small = prof.to_dict(arrays="float32-base64")
        >>> len(json.dumps(small)) < len(json.dumps(prof.to_dict()))
        True
        >>> sorted(prof.to_dict(witnesses=False))
        ['arrays', 'effort', 'eps_targets', 'format', 'lower', 'shape', 'stats', 'upper']
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
    def from_dict(cls, d: dict[str, Any], *, A: np.ndarray | None = None) -> Profile:
        """Restore a profile written by :meth:`to_dict` (with witnesses).

        Without ``A`` nothing is checked: the errors and margins are the numbers as they
        were stored, which a damaged, stale or edited file can get wrong, so no bracket read
        off the restored profile is certified until :meth:`reverify` against its matrix
        returns ``[]``. With ``A``, the matrix the profile certifies, every witness is
        re-verified here (cheap next to the search that found them).

        Parameters
        ----------
        d : dict
            As written by :meth:`to_dict` with ``witnesses=True``.
        A : array ``[M, N]``, optional, keyword-only
            Re-verify every witness against this matrix (:meth:`reverify`).

        Raises
        ------
        ParameterError
            Named ``profile``: ``d`` is not such a dict, or, with ``A``, some witness fails
            re-verification (the failures are listed).

        Examples
        --------
        >>> from analysis.brackets import Profile, profile_matrix
        >>> from analysis.sources.synthetic import permuted_blocks
        >>> A = permuted_blocks(8, 2, random_state=0).A
        >>> prof = profile_matrix(A, eps=(0.1,), effort="fast")
        >>> Profile.from_dict(prof.to_dict(arrays="float32-base64"), A=A).bracket(0.1)
        Bracket(lo=2, hi=2)
        >>> Profile.from_dict({"shape": [8, 8]})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        analysis.validation.ParameterError: profile: expected a dict written by Profile.to_dict(witnesses=True), got "KeyError: 'upper'"
        """
        try:
            prof = cls._decode(d)
        except (KeyError, TypeError, ValueError) as exc:  # binascii.Error is a ValueError
            raise ParameterError(
                "profile",
                "a dict written by Profile.to_dict(witnesses=True)",
                f"{type(exc).__name__}: {exc}",
            ) from None
        if A is not None:
            fails = prof.reverify(A)
            if fails:
                raise ParameterError(
                    "profile", "a profile whose every witness re-verifies against A", fails
                )
        return prof

    @classmethod
    def _decode(cls, d: dict[str, Any]) -> Profile:
        M, N = (int(x) for x in d["shape"])
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
            (M, N), upper, lower, tuple(d["eps_targets"]), d["effort"], dict(d.get("stats", {}))
        )

    def witness_arrays(self, w: UpperWitness, A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(U, W)`` of an upper witness, built from ``A`` for the identity witness."""
        return identity_witness(A) if w.U is None else (w.U, w.W)

    def reverify(self, A: np.ndarray) -> list[str]:
        """Re-check every stored witness against ``A``; return a description of each failure.

        A witness fails when the certified value recomputed from its arrays (float64,
        :mod:`analysis.brackets.verify`) is not ``<=`` its stored error (upper) or not
        ``>=`` its stored margin (lower), NaN failing both, or when its arrays are missing,
        non-finite or not of the shape that its rank or size and the profile's shape give.
        A profile of another shape than ``A`` fails whole (one entry). ``[]`` means every
        number the profile holds is certified for ``A``.

        The comparison is exact. On the machine that certified a witness it repeats the
        same arithmetic (the verifier runs numpy's BLAS on one thread, whatever the
        caller's thread count); on another CPU a product rounded differently in its last
        bit can move the certified value by an ulp, and the witness then fails: a profile
        recomputed for nothing, never a wrong bracket.

        Examples
        --------
        >>> import numpy as np
        >>> from analysis.brackets import profile_matrix
        >>> from analysis.sources.synthetic import permuted_blocks
        >>> A = permuted_blocks(8, 2, random_state=0).A
        >>> prof = profile_matrix(A, eps=(0.1,), effort="fast")
        >>> prof.reverify(A)
        []
        >>> for fail in prof.reverify(np.full((8, 8), 1 / 8)):  # another matrix
        ...     print(fail)  # doctest: +ELLIPSIS
        upper rank 2: certified error 1.0000..., stored ...
        lower size 2: certified margin ..., stored 0.99999...
        """
        A = check_attention(A)[0]
        if tuple(self.shape) != A.shape:
            return [f"shape {tuple(self.shape)} is not A's {A.shape}"]
        M, N = A.shape
        fails = []
        for k, w in sorted(self.upper.items()):
            shapes = (np.shape(w.U), np.shape(w.W))
            e = float("nan")
            if k == w.rank and shapes == ((M, k), (N, k)):
                with contextlib.suppress(ParameterError):  # non-finite entries
                    e = certified_upper_error(A, w.U, w.W)
            if np.isnan(e):
                fails.append(f"upper rank {k}: non-finite or misshapen witness")
            elif not e <= w.error:
                fails.append(f"upper rank {k}: certified error {e!r}, stored {w.error!r}")
        for m, w in sorted(self.lower.items()):
            shapes = (np.shape(w.R), np.shape(w.Y))
            mu = float("nan")
            if m == w.size and m >= 1 and shapes == ((N, m), (m, M)):
                with contextlib.suppress(ParameterError):
                    mu = certified_lower_margin(A, w.R, w.Y)
            if np.isnan(mu):
                fails.append(f"lower size {m}: non-finite or misshapen witness")
            elif not mu >= w.margin:
                fails.append(f"lower size {m}: certified margin {mu!r}, stored {w.margin!r}")
        return fails


def identity_witness(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``B = A`` as a rank-``min(M, N)`` factorization: ``(A, I)`` or ``(I, A^T)``.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.brackets.profile import identity_witness
    >>> A = np.array([[0.5, 0.25, 0.25], [0.0, 1.0, 0.0]])  # M = 2 < N = 3
    >>> U, W = identity_witness(A)
    >>> U.shape, W.shape, bool(np.array_equal(U @ W.T, A))
    ((2, 2), (3, 2), True)
    """
    M, N = A.shape
    return (A.copy(), np.eye(N)) if N <= M else (np.eye(M), A.T.copy())
