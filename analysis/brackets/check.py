"""A conformance kit for bracket engines: :func:`check_bracket_engine`.

An engine is any object the store can run (:class:`analysis.store.engine.BracketEngine`:
``name``, ``version``, ``efforts``, ``profile_batch``, ``load_profile``), such as
:func:`analysis.brackets.engine.engine_for` of each shipped version. The kit runs it on
small matrices and checks what the store and the studies rely on, in the manner of
scikit-learn's ``check_estimator``: each failed check raises :class:`EngineCheckError` (an
``AssertionError``) whose message names the check.
"""

from __future__ import annotations

import contextlib
import json
import pickle
from collections.abc import Iterator
from typing import Any

import numpy as np

from analysis.attention import softmax64
from analysis.brackets.profile import Profile
from analysis.brackets.verify import certified_lower_margin, certified_upper_error
from analysis.validation import ParameterError

__all__ = ["CHECKS", "EngineCheckError", "check_bracket_engine"]

CHECKS: tuple[str, ...] = (
    "interface",
    "pickle",
    "determinism",
    "reverify",
    "load_profile",
    "float32",
    "known-answer",
)
"""The checks :func:`check_bracket_engine` runs, in order."""

_EPS = (0.1, 0.3, 0.5)


class EngineCheckError(AssertionError):
    """A check of :func:`check_bracket_engine` failed; ``check`` is its name (in :data:`CHECKS`).

    Examples
    --------
    >>> from analysis.brackets.check import EngineCheckError
    >>> err = EngineCheckError("pickle", object(), "TypeError: cannot pickle 'lock'")
    >>> err.check, isinstance(err, AssertionError)
    ('pickle', True)
    >>> str(err)
    "check_bracket_engine: check 'pickle' failed for engine object ?: TypeError: cannot pickle 'lock'"
    """

    def __init__(self, check: str, engine: Any, detail: str):
        self.check = check
        label = (
            f"{getattr(engine, 'name', type(engine).__name__)} {getattr(engine, 'version', '?')}"
        )
        super().__init__(
            f"check_bracket_engine: check '{check}' failed for engine {label}: {detail}"
        )


def _blocks(k: int = 3, b: int = 4) -> np.ndarray:
    """``k`` uniform ``b x b`` blocks on the diagonal, rows and columns permuted: row
    stochastic, rank ``k`` (error 0), and ``Y A R = I`` for one row and the indicator of
    the columns of each block (margin 1), so ``r_eps = k`` for every ``0 <= eps < 1``."""
    A = np.kron(np.eye(k), np.full((b, b), 1.0 / b))
    p = np.random.default_rng(0).permutation(k * b)
    return A[p][:, p[::-1]]


def _softmax() -> np.ndarray:
    """A 12 x 10 softmax matrix whose entries are float32 values (float32 input is exact)."""
    rng = np.random.default_rng(1)
    A = softmax64(rng.normal(size=(12, 3)), rng.normal(size=(10, 3)), 3.0)
    return A.astype(np.float32).astype(np.float64)


@contextlib.contextmanager
def _named(check: str, engine: Any) -> Iterator[None]:
    """Any exception inside (the engine's own, a pickling error, a malformed profile)
    becomes an :class:`EngineCheckError` naming ``check``."""
    try:
        yield
    except EngineCheckError:
        raise
    except Exception as exc:
        raise EngineCheckError(check, engine, f"{type(exc).__name__}: {exc}") from exc


def _run(engine: Any, A: np.ndarray, effort: str) -> Any:
    [prof] = engine.profile_batch([A], [1.0], eps=_EPS, effort=effort, previous=[None])
    return prof


def _record(prof: Any) -> dict[str, Any]:
    """The profile's witnesses and read-off as data (its ``stats`` hold timings: left out)."""
    d = prof.to_dict(witnesses=True, arrays="lists")
    return {k: v for k, v in d.items() if k != "stats"} | {
        "brackets": [tuple(prof.bracket(e)) for e in _EPS]
    }


def _reverify(A: np.ndarray, prof: Any) -> list[str]:
    """Each bracket end the profile reads off that no witness it stores certifies, with the
    certified numbers recomputed here from ``A`` and the witnesses' arrays."""
    stored = Profile.from_dict(prof.to_dict(witnesses=True, arrays="lists"))
    ups = [(w.rank, certified_upper_error(A, w.U, w.W)) for w in stored.upper.values()]
    los = [(w.size, certified_lower_margin(A, w.R, w.Y)) for w in stored.lower.values()]
    bad = []
    for eps in _EPS:
        lo, hi = prof.bracket(eps)
        if hi < min(A.shape) and not any(k <= hi and e <= eps for k, e in ups):
            bad.append(f"eps={eps}: no stored upper witness of rank <= {hi} certifies error <= eps")
        if lo > 0 and not any(m >= lo and mu > eps for m, mu in los):
            bad.append(f"eps={eps}: no stored lower witness of size >= {lo} certifies margin > eps")
    return bad


def check_bracket_engine(engine: Any, *, effort: str = "fast") -> tuple[str, ...]:
    """Check that ``engine`` behaves as the store and the studies rely on.

    Parameters
    ----------
    engine : object
        A bracket engine (:class:`analysis.store.engine.BracketEngine`).
    effort : str, keyword-only
        One of ``engine.efforts``, run on every matrix (``"fast"`` keeps the kit quick).

    Returns
    -------
    tuple of str
        :data:`CHECKS`, all passed.

    Raises
    ------
    EngineCheckError
        The first check that fails, named in the message:

        - ``interface``: ``name`` and ``version`` strings, ``efforts`` holding ``effort``,
          callable ``profile_batch`` and ``load_profile``; a run returns one profile with
          ``bracket``, ``reverify`` and ``to_dict``;
        - ``pickle``: the engine survives a pickle round trip (workers receive it so) and
          the copy computes the same profile;
        - ``determinism``: two runs give the same witnesses and brackets;
        - ``reverify``: every bracket end read off a profile (``lo > 0``, ``hi < min(M,
          N)``) is backed by a stored witness that :mod:`analysis.brackets.verify`
          certifies from the matrix; the profile serializes as
          :meth:`analysis.brackets.Profile.to_dict` does;
        - ``load_profile``: ``load_profile`` of its JSON reads off the same brackets;
        - ``float32``: a float32 matrix gives the profile of its float64 values;
        - ``known-answer``: a permuted block matrix with ``r_eps = 3`` for ``eps < 1``
          gets the bracket ``(3, 3)`` at each eps tried.

        An exception the engine raises inside a check fails that check, with its message.

    Examples
    --------
    >>> from analysis.brackets.check import check_bracket_engine
    >>> from analysis.brackets.engine import engine_for
    >>> check_bracket_engine(engine_for(4))[:3]
    ('interface', 'pickle', 'determinism')
    >>> check_bracket_engine(object())
    Traceback (most recent call last):
    ...
    analysis.brackets.check.EngineCheckError: check_bracket_engine: check 'interface' failed for engine object ?: lacks name, version, efforts, profile_batch, load_profile
    """
    missing = [a for a in ("name", "version", "efforts") if not hasattr(engine, a)]
    missing += [
        a for a in ("profile_batch", "load_profile") if not callable(getattr(engine, a, None))
    ]
    if missing:
        raise EngineCheckError("interface", engine, "lacks " + ", ".join(missing))
    if not (isinstance(engine.name, str) and isinstance(engine.version, str)):
        raise EngineCheckError("interface", engine, "name and version must be str")
    if effort not in tuple(engine.efforts):
        raise ParameterError(
            "effort", f"one of the engine's efforts {tuple(engine.efforts)}", effort
        )
    S, B = _softmax(), _blocks()
    with _named("interface", engine):  # one run: a list of one profile with its members
        first = _run(engine, S, effort)
        lacks = [a for a in ("bracket", "reverify", "to_dict") if not hasattr(first, a)]
        if lacks:
            raise EngineCheckError("interface", engine, "a profile lacks " + ", ".join(lacks))
    with _named("pickle", engine):  # anything a pickle raises: a lambda, a lock, a file
        copy = pickle.loads(pickle.dumps(engine))
        if _record(_run(copy, S, effort)) != _record(first):
            raise EngineCheckError("pickle", engine, "the unpickled copy computes another profile")
    with _named("determinism", engine):
        if _record(_run(engine, S, effort)) != _record(first):
            raise EngineCheckError("determinism", engine, "two runs on one matrix differ")
    with _named("reverify", engine):
        blocks = _run(engine, B, effort)
        bad = _reverify(S, first) + _reverify(B, blocks)
        if bad:
            raise EngineCheckError("reverify", engine, "; ".join(bad))
    with _named("load_profile", engine):
        for prof in (first, blocks):
            back = engine.load_profile(json.loads(json.dumps(prof.to_dict(witnesses=True))))
            if [tuple(back.bracket(e)) for e in _EPS] != [tuple(prof.bracket(e)) for e in _EPS]:
                raise EngineCheckError(
                    "load_profile", engine, "the loaded profile reads off other brackets"
                )
    with _named("float32", engine):
        if _record(_run(engine, S.astype(np.float32), effort)) != _record(first):
            raise EngineCheckError(
                "float32", engine, "float32 input gives another profile than float64"
            )
    got = [tuple(blocks.bracket(e)) for e in _EPS]
    if got != [(3, 3)] * len(_EPS):
        raise EngineCheckError(
            "known-answer", engine, f"brackets {got} at eps {_EPS}, expected (3, 3)"
        )
    return CHECKS
