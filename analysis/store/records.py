"""The records a store hands out (:class:`MatrixRecord`, :class:`ProfileRecord`) and the
computed profile it takes in (:class:`ProfileResult`)."""

from __future__ import annotations

import dataclasses
import json
import zlib
from typing import Any


@dataclasses.dataclass(frozen=True)
class MatrixRecord:
    """One matrix's index row (arrays are read separately with :meth:`Store.arrays`).

    Examples
    --------
    >>> from analysis.sources.synthetic import identity
    >>> from analysis.store import Store
    >>> with Store("records", create=True) as st:
    ...     rec = st.matrix(st.add_synthetic(identity(8)))
    >>> rec.source, rec.checkpoint, rec.layer, rec.head, rec.input_id, rec.length, rec.causal
    ('synthetic', 'identity', 0, 0, 'fixed', 8, False)
    """

    key: str
    source: str
    checkpoint: str
    layer: int
    head: int
    input_id: str
    length: int
    head_id: str
    n_rows: int
    head_dim: int
    causal: bool
    array_file: str
    array_sha256: str
    meta: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class ProfileRecord:
    """A stored profile of one (matrix, temperature, version, engine).

    Examples
    --------
    >>> from analysis.brackets.engine import default_engine
    >>> from analysis.sources.synthetic import identity
    >>> from analysis.store import RunSpec, Store, run_brackets
    >>> with Store("profiles", create=True) as st:
    ...     key = st.add_synthetic(identity(8))
    ...     quiet = RunSpec(progress=False)
    ...     _ = run_brackets(st, (0.5,), engine=default_engine(), effort="fast", run=quiet)
    ...     rec = st.profile(key, 1.0, "fast")
    >>> rec.brackets, rec.eps_grid, rec.effort, rec.revision, rec.profile_dict()["eps_targets"]
    ... # r_eps(I_8) = 8 for eps < 1
    ({0.5: (8, 8)}, (0.5,), 'fast', 1, [0.5])
    """

    id: int
    matrix_key: str
    temperature: float
    version: str
    effort: str
    eps_grid: tuple[float, ...]
    engine: str
    elapsed_s: float
    revision: int
    brackets: dict[float, tuple[int, int]]
    blob: bytes = dataclasses.field(repr=False)

    def profile_dict(self) -> dict[str, Any]:
        """The engine's ``Profile.to_dict(witnesses=True)`` as stored, unchecked (the store
        knows no engine): :func:`analysis.store.run_brackets` re-verifies it against its
        matrix before trusting it."""
        return json.loads(zlib.decompress(self.blob).decode("utf-8"))


@dataclasses.dataclass(frozen=True)
class ProfileResult:
    """One computed profile as :meth:`Store.put_profile` stores it: the engine's
    ``Profile.to_dict(witnesses=True)``, its ``{eps: (lo, hi)}`` brackets on ``eps_grid``,
    and the wall seconds of the search.

    Examples
    --------
    >>> from analysis.store.store import ProfileResult
    >>> ProfileResult("fast", (0.5,), {}, {0.5: (4, 4)}, 0.25).brackets
    {0.5: (4, 4)}
    """

    effort: str
    eps_grid: tuple[float, ...]
    profile: dict[str, Any]
    brackets: dict[float, tuple[int, int]]
    elapsed_s: float
