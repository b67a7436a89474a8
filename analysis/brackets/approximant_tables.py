"""Approximant tables over an input: least certified ranks per matrix, set against brackets.

:func:`approximants_for_input` runs :func:`analysis.brackets.approximants.approximant_ranks`
over every matrix of one input (``attnrank approximants``; resumable from a checkpoint),
with the queries and keys of an extract
(:class:`analysis.brackets.io.QueriesKeys`);
:func:`compare_with_brackets` joins the ranks with certified brackets and bounds each
approximant's overhead, :func:`summarize` sums them up per method and eps.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm.auto import tqdm

from analysis.atomic import JsonlCheckpoint, as_checkpoint
from analysis.attention import derive_seed
from analysis.brackets.results import report_dropped
from analysis.validation import ParameterError, check_eps_grid

if TYPE_CHECKING:  # pandas only for the tables, not on the bracket path
    import pandas as pd

    from analysis.brackets.io import MatrixInput, QueriesKeys


def approximants_for_input(
    data: MatrixInput,
    qk: QueriesKeys | None,
    *,
    eps: Sequence[float],
    methods: Sequence[str] | None = None,
    seed: int = 0,
    progress: bool = True,
    checkpoint: str | os.PathLike | JsonlCheckpoint | None = None,
    say: Callable[[str], None] | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """Least certified rank of each efficient-attention approximant, every matrix and eps.

    Parameters
    ----------
    data : MatrixInput
    qk : QueriesKeys or None
        From :func:`load_queries_keys` (None: ``A`` only).
    methods : names from :data:`analysis.brackets.approximants.METHODS`; None takes every
        method the input allows (the Q/K ones need an extract without a mask).
    checkpoint : path or JsonlCheckpoint, optional
        JSON lines of finished matrices (keyed by input hash, index, temperature, eps,
        methods and seed); matrices already there are reused, so an interrupted run resumes.
        A stored table is reused only once every ranked row re-certifies
        (:func:`analysis.brackets.approximants.recheck_ranks`: each witness rebuilt at its
        stored rank, about 5% of the search's cost) and its rows are the methods x eps
        asked for; a table that fails is recomputed.
    say : callable, optional
        Receives ``"N stored approximant tables failed re-verification and were
        recomputed"`` when N > 0 (default: a :class:`UserWarning`).

    Returns
    -------
    table : DataFrame, one row per (matrix, method, eps): ``index``, ``layer``, ``head``,
        ``method``, ``eps``, ``rank``, ``error``, ``reached``
    notes : what was left out of the default methods, and why

    Examples
    --------
    Without queries and keys, the SVD and row-copy approximants; the uniform matrix
    has rank 1, and the identity needs its full rank 4 for eps < 1:

    >>> from analysis.datasets import example_matrix_input
    >>> data = example_matrix_input()  # the identity and the uniform matrix
    >>> from analysis.brackets.approximant_tables import approximants_for_input
    >>> table, notes = approximants_for_input(data, None, eps=(0.5,), progress=False)
    >>> table[["index", "method", "rank"]].values.tolist()
    [[0, 'svd', 4], [0, 'rows', 4], [1, 'svd', 1], [1, 'rows', 1]]
    >>> notes
    ['nystrom, linformer, performer left out: a .npy input has no queries or keys']
    """
    import pandas as pd

    from analysis.brackets.approximants import METHODS, QK_METHODS, approximant_ranks, recheck_ranks

    eps = check_eps_grid(eps)
    notes: list[str] = []
    if methods is None:
        why = (
            "a .npy input has no queries or keys"
            if qk is None
            else "the input masks some keys"
            if qk.mask is not None
            else "the input adds a logit bias to scale Q K^T"
            if qk.bias is not None
            else None
        )
        methods = [m for m in METHODS if why is None or m not in QK_METHODS]
        notes += [] if why is None else [f"{', '.join(QK_METHODS)} left out: {why}"]
    elif qk is None and any(m in QK_METHODS for m in methods):
        raise ParameterError(
            "methods", "svd, rows for a .npy input (it has no queries or keys)", list(methods)
        )
    elif qk is not None and qk.bias is not None and any(m in QK_METHODS for m in methods):
        # They approximate softmax(s Q K^T); with a bias that is not the matrix certified.
        raise ParameterError(
            "methods",
            "svd, rows for an input whose logits add a bias to scale Q K^T",
            list(methods),
        )
    t = "none" if data.temperature is None else repr(data.temperature)
    grid = ",".join(f"{e!r}" for e in eps)
    tag = f"{t}:{data.renormalized}:{grid}:{','.join(methods)}:{seed}"
    keys = [f"{data.sha256}:{i}:{tag}" for i in range(data.A.shape[0])]
    ck = as_checkpoint(checkpoint)
    done = ck.read(lambda rec: _rank_frame(rec["rows"])) if ck is not None else {}

    def inputs(i: int) -> dict[str, Any]:
        head = None if qk is None else qk.head(i)
        return {"qk": head, "random_state": derive_seed(seed, f"{data.sha256}:{i}:{t}")}

    cells = sorted((m, e) for m in methods for e in eps)
    dropped = 0
    for i, key in enumerate(keys):
        if key in done:
            df = done[key]
            rows = sorted(zip(df["method"], df["eps"].astype(float), strict=True))
            if rows != cells or recheck_ranks(df, data.A[i], **inputs(i)):
                del done[key]  # recomputed below, and appended after the failed line
                dropped += 1
    with contextlib.ExitStack() as stack:
        append = stack.enter_context(ck.appender()) if ck is not None else None
        for i in tqdm(
            range(data.A.shape[0]), desc="approximants", unit="matrix", disable=not progress
        ):
            if keys[i] in done:
                continue
            df = approximant_ranks(data.A[i], eps, methods=methods, **inputs(i))
            done[keys[i]] = df
            if append is not None:
                recs = df.astype(object).where(df.notna(), None).to_dict(orient="records")
                append({"key": keys[i], "rows": recs})
    report_dropped(dropped, "approximant table", say)
    parts = []
    for i, key in enumerate(keys):
        df = done[key].copy()
        df.insert(0, "head", data.heads[i])
        df.insert(0, "layer", data.layers[i])
        df.insert(0, "index", i)
        parts.append(df)
    return pd.concat(parts, ignore_index=True), notes


def _rank_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """A checkpointed :func:`~analysis.brackets.approximants.least_ranks` table, typed again."""
    import pandas as pd

    df = pd.DataFrame(rows, columns=["method", "eps", "rank", "error", "reached"])
    df["rank"] = df["rank"].astype("Int64")
    df["error"] = df["error"].astype(float)
    df["reached"] = df["reached"].astype(bool)
    return df


def compare_with_brackets(table: pd.DataFrame, brackets: pd.DataFrame) -> pd.DataFrame:
    """Join least ranks with certified brackets and bound each approximant's overhead.

    Parameters
    ----------
    table : DataFrame with ``index``, ``eps``, ``method``, ``rank`` (:func:`least_ranks`
        rows with a matrix ``index``)
    brackets : DataFrame with ``index``, ``eps``, ``lower``, ``upper``

    Returns
    -------
    ``table`` with ``lower``, ``upper`` and ``overhead_min = rank / upper``,
    ``overhead_max = rank / lower`` (inf where ``lower`` is 0, NaN where no rank reached
    eps or no bracket is given).

    Notes
    -----
    ``lower <= r_eps(A) <= upper`` (certified), so the approximant's rank over the optimum,
    ``rank / r_eps``, lies in ``[rank / upper, rank / lower]``; a value of
    ``overhead_min`` above 1 proves the approximant uses more rank than needed.

    Examples
    --------
    >>> from analysis.brackets import profile_matrix
    >>> from analysis.brackets.approximant_tables import compare_with_brackets
    >>> from analysis.brackets.approximants import approximant_ranks
    >>> from analysis.sources.synthetic import spherical
    >>> head = spherical(16, 3, 2.0, random_state=0)
    >>> ranks = approximant_ranks(head.A, [0.1], methods=("svd", "rows")).assign(index=0)
    >>> prof = profile_matrix(head.A, eps=(0.1,), effort="fast")
    >>> brackets = prof.to_frame([0.1]).assign(index=0)
    >>> out = compare_with_brackets(ranks, brackets)
    >>> out[["method", "rank", "lower", "upper", "overhead_min", "overhead_max"]].round(3)
      method  rank  lower  upper  overhead_min  overhead_max
    0    svd     9      5      9         1.000           1.8
    1   rows    11      5      9         1.222           2.2
    """
    out = table.merge(brackets[["index", "eps", "lower", "upper"]], on=["index", "eps"], how="left")
    rank = out["rank"].astype("Float64").to_numpy(float, na_value=np.nan)
    low = out["lower"].astype("Float64").to_numpy(float, na_value=np.nan)
    up = out["upper"].astype("Float64").to_numpy(float, na_value=np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["overhead_min"] = rank / up
        out["overhead_max"] = np.where(
            low > 0, rank / low, np.where(np.isnan(rank + low), np.nan, np.inf)
        )
    return out


def summarize(table: pd.DataFrame) -> pd.DataFrame:
    """Per method and eps: how often and at which rank each approximant reaches eps.

    Columns ``method``, ``eps``, ``matrices``, ``reached_share`` (a rank below full rank
    reaches eps), ``never_share`` (no tried rank does, not even full rank), and over the
    matrices where some rank does: ``median_rank`` and, when brackets were joined,
    ``median_overhead_min`` / ``median_overhead_max``.

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.brackets.approximant_tables import summarize
    >>> table = pd.DataFrame({"method": "svd", "eps": 0.1, "rank": pd.array([4, 6, None]),
    ...                       "reached": [True, True, False]})
    >>> summarize(table)[["method", "matrices", "reached_share", "never_share", "median_rank"]].round(3)
      method  matrices  reached_share  never_share  median_rank
    0    svd         3          0.667        0.333          5.0
    """
    import pandas as pd

    rows = []
    for (method, e), d in table.groupby(["method", "eps"], sort=False):
        some = d[d["rank"].notna()]
        row = {
            "method": method,
            "eps": e,
            "matrices": len(d),
            "reached_share": float(d["reached"].mean()),
            "never_share": float(d["rank"].isna().mean()),
            "median_rank": float(some["rank"].astype(float).median()) if len(some) else np.nan,
        }
        if "overhead_min" in d:
            row["median_overhead_min"] = float(some["overhead_min"].median())
            row["median_overhead_max"] = float(some["overhead_max"].median())
        rows.append(row)
    return pd.DataFrame(rows)
