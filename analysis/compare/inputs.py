"""Inputs as a factor of the nested comparison: input fixed effects and the crossed bootstrap.

Every head of a checkpoint reads the same inputs, so the cells of one input are correlated
across heads. Two opt-in settings of :class:`~analysis.compare.spec.ComparisonSpec` (the
design's ``[inference] input_effects`` and ``resample``) treat the inputs as a factor:

- ``input_effects = "fixed"``: both models of every pair get one intercept per input level
  (a ``(checkpoint, input_id, length)`` level), shared by all heads reading it
  (:func:`add_input_effects`);
- ``resample_inputs = True``: each bootstrap replicate draws the held-out heads within
  strata as before and, independently, the inputs within each checkpoint; a cell's weight
  is its head's count times its input's count (:func:`crossed_draws`).

docs/method.md, section "Inputs as a factor".
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from analysis.compare.bootstrap import _Draws, bootstrap_counts
from analysis.compare.covariates import PreparedCovariates, greedy_independent
from analysis.validation import ParameterError

__all__ = [
    "INPUT_BLOCK",
    "INPUT_EFFECTS",
    "add_input_effects",
    "check_input_settings",
    "crossed_draws",
    "input_labels",
]

#: ``input_effects``: no input effects (``"none"``, the default) or one intercept per
#: input level in every model (``"fixed"``).
INPUT_EFFECTS: tuple[str, ...] = ("none", "fixed")
#: Block name of the input indicator columns (``input__<level>``).
INPUT_BLOCK = "input"


def check_input_settings(input_effects: object, resample_inputs: object, spec: object) -> None:
    """Validate a spec's ``input_effects`` and ``resample_inputs`` (and what the crossed
    bootstrap does not support: the studentized bootstrap and a confirmatory refit
    bootstrap, which resamples heads only).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from analysis.compare.inputs import check_input_settings
    >>> spec = SimpleNamespace(bootstrap="cluster", refit_confirmatory=False)
    >>> check_input_settings("fixed", True, spec)
    >>> check_input_settings("random", False, spec)
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: input_effects: expected none or fixed, got 'random'
    """
    if not isinstance(input_effects, str) or input_effects not in INPUT_EFFECTS:
        raise ParameterError("input_effects", " or ".join(INPUT_EFFECTS), input_effects)
    if not isinstance(resample_inputs, bool):
        raise ParameterError("resample_inputs", "true or false", resample_inputs)
    if resample_inputs and spec.bootstrap == "studentized":
        raise ParameterError(
            "resample_inputs",
            'the percentile bootstrap (bootstrap = "cluster"): the studentized one has no '
            "two-way (head x input) variance yet",
            "bootstrap = studentized",
        )
    if resample_inputs and spec.refit_confirmatory:
        raise ParameterError(
            "resample_inputs",
            "a refit bootstrap that is a sensitivity (it resamples heads only)",
            "refit_confirmatory = True",
        )


def _need(table: pd.DataFrame, columns: tuple[str, ...], key: str) -> None:
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ParameterError(key, f"a table with columns {', '.join(columns)}", f"no {missing}")


def input_labels(table: pd.DataFrame, *, with_length: bool = True) -> np.ndarray:
    """Each row's input level: ``stratum|input_id|length`` (``stratum`` when the table has
    one, the checkpoint of a study's table), without the length when ``with_length`` is
    False (the unit the crossed bootstrap draws: an input with all its lengths).

    Examples
    --------
    >>> import pandas as pd
    >>> from analysis.compare.inputs import input_labels
    >>> t = pd.DataFrame({"stratum": ["a", "b"], "input_id": [0, 0], "length": [16, 32]})
    >>> input_labels(t).tolist(), input_labels(t, with_length=False).tolist()
    (['a|0|16', 'b|0|32'], ['a|0', 'b|0'])
    """
    parts = [table["stratum"].astype(str)] if "stratum" in table.columns else []
    parts.append(table["input_id"].astype(str))
    if with_length:
        parts.append(table["length"].astype(str))
    out = parts[0]
    for p in parts[1:]:
        out = out + "|" + p
    return out.to_numpy()


def add_input_effects(
    prep: PreparedCovariates, table: pd.DataFrame, train: np.ndarray
) -> PreparedCovariates:
    """Each model's matrix with one indicator per input level (:func:`input_labels`) but
    the first in sorted order (the estimators add the intercept).

    A column whose training values lie in the span of the intercept and the indicators
    (constant within every input level, checkpoint indicators included) is dropped with
    reason ``"constant within input"``; one that does so only together with columns kept
    before it, ``"collinear within input"``.

    Raises
    ------
    ParameterError
        Named ``inference.input_effects`` when the table lacks ``input_id`` or ``length``,
        or an input level has no training rows.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from analysis.compare.covariates import prepare_covariates
    >>> from analysis.compare.inputs import add_input_effects
    >>> t = pd.DataFrame({"input_id": np.tile([0, 1], 4), "length": 16,
    ...                   "base__x": np.arange(8.0), "rich__w": np.tile([1.0, 5.0], 4),
    ...                   "y_lower": 0.0, "y_upper": 1.0})
    >>> train = np.arange(8) < 6
    >>> prep = prepare_covariates(t, {"base": ["base"], "rich": ["base", "rich"]}, train)
    >>> fe = add_input_effects(prep, t, train)
    >>> fe.columns["rich"], fe.dropped.iloc[-1].tolist()
    (('base__x', 'input__1|16'), ['rich', 'rich__w', 'constant within input'])
    """
    _need(table, ("input_id", "length"), "inference.input_effects")
    labels = input_labels(table)
    train = np.asarray(train, bool)
    levels = sorted(set(labels))
    missing = sorted(set(levels) - set(labels[train]))
    if missing:
        raise ParameterError(
            "inference.input_effects", "training rows at every input level", missing[:5]
        )
    D = (labels[:, None] == np.asarray(levels[1:], dtype=object)[None, :]).astype(float)
    names = tuple(f"{INPUT_BLOCK}__{c}" for c in levels[1:])
    matrices, columns, dropped = {}, {}, []
    for m, X in prep.matrices.items():
        cols = prep.columns[m]
        keep = greedy_independent(X[train], fixed=D[train]) if cols else []
        for j, c in enumerate(cols):
            if j not in keep:
                alone = greedy_independent(X[train][:, [j]], fixed=D[train])
                why = "collinear within input" if alone else "constant within input"
                dropped.append((m, c, why))
        matrices[m] = np.column_stack([X[:, keep], D])
        columns[m] = tuple(cols[j] for j in keep) + names
    if dropped:
        rows = pd.DataFrame(dropped, columns=["model", "column", "reason"])
        prep = replace(prep, dropped=pd.concat([prep.dropped, rows], ignore_index=True))
    return replace(prep, matrices=matrices, columns=columns)


def crossed_draws(
    table: pd.DataFrame, draws: _Draws, held: np.ndarray, rng: np.random.Generator
) -> _Draws:
    """The crossed (head x input) bootstrap built on the head draws ``draws``.

    Each replicate keeps its draw of held-out units (``draws.counts``) and draws,
    independently, the held-out inputs (``input_id`` with all its lengths) with
    replacement within each checkpoint (the table's ``stratum``; one stratum without it).
    The returned draws' units are the (unit, input) pairs of the held-out cells, each with
    count ``count_unit * count_input``, so :func:`~analysis.compare.bootstrap.replicate_means`
    and :func:`~analysis.compare.bootstrap.spearman_replicates` read them unchanged; the
    expected weight of every cell is 1.

    Raises
    ------
    ParameterError
        Named ``inference.resample`` when the table lacks ``input_id`` or ``length``, or
        a (checkpoint, length) has fewer than 2 held-out inputs.

    Examples
    --------
    Two held-out heads reading two inputs of one length; one head draw, then the inputs:

    >>> import numpy as np
    >>> import pandas as pd
    >>> from analysis.compare.bootstrap import _held_out_draws
    >>> from analysis.compare.inputs import crossed_draws
    >>> t = pd.DataFrame({"cluster": np.repeat(["h0", "h1"], 2), "input_id": [0, 1] * 2,
    ...                   "length": 16})
    >>> held, rng = np.ones(4, bool), np.random.default_rng(0)
    >>> heads = _held_out_draws(t, t["cluster"].to_numpy(), held, 99, rng)
    >>> both = crossed_draws(t, heads, held, rng)
    >>> both.n_units, both.counts.shape, both.n_heads
    (4, (99, 4), 2)
    >>> bool((both.counts.sum(axis=1) == 4).all())  # 2 heads x 2 inputs in every replicate
    True
    """
    _need(table, ("input_id", "length"), "inference.resample")
    sub = table.loc[held]
    per = sub.assign(_s=sub["stratum"].astype(str) if "stratum" in sub.columns else "")
    few = per.groupby(["_s", "length"])["input_id"].nunique()
    if (few < 2).any():
        (s, length), n = few.idxmin(), int(few.min())
        raise ParameterError(
            "inference.resample",
            "at least 2 held-out inputs per (checkpoint, length) to resample inputs",
            f"{n} at checkpoint {s!r}, length {length}" if s else f"{n} at length {length}",
        )
    in_codes, in_uniq = pd.factorize(input_labels(sub, with_length=False))
    in_strata = per["_s"].to_numpy()[np.unique(in_codes, return_index=True)[1]]
    in_counts = bootstrap_counts(in_uniq.size, draws.counts.shape[0], rng, in_strata)
    pair = draws.codes.astype(np.int64) * in_uniq.size + in_codes
    codes, uniq = pd.factorize(pair)
    unit_of, input_of = uniq // in_uniq.size, uniq % in_uniq.size
    counts = draws.counts[:, unit_of] * in_counts[:, input_of]
    sizes = np.bincount(codes, minlength=uniq.size).astype(float)
    return _Draws(codes, draws.per_cluster[unit_of], uniq.size, counts, sizes, draws.n_heads)
