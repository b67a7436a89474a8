"""How the isotonic calibration maps meet the training rows: in-sample or cross-fitted.

:class:`Calibration` states the choice; :func:`head_folds` and
:func:`repeated_head_folds` assign whole training heads to folds, reproducibly from a
seed; :func:`~analysis.compare.covariates.prepare_covariates` fits and applies the maps.
docs/method.md, section 4 "Calibrated baseline", gives the estimator and the fold RNG.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.validation import ParameterError

__all__ = [
    "CALIBRATION_MODES",
    "Calibration",
    "head_folds",
    "leave_one_head_out",
    "repeated_head_folds",
]

#: How a calibrated block's isotonic maps meet the training rows (:class:`Calibration`).
CALIBRATION_MODES: tuple[str, ...] = ("in-sample", "cross-fitted")


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


@dataclass(frozen=True)
class Calibration:
    """How the isotonic calibration maps are fitted and applied to training rows.

    ``Calibration()`` is in-sample: one map per covariate, fitted on every training row
    and applied to every row. ``Calibration(folds=K, seed=S)`` is cross-fitted by head:
    the training heads are split into K folds (:func:`head_folds`), a training
    row's calibrated value comes from the map fitted on the training rows of the other
    folds, and held-out rows use the map fitted on all training rows.
    ``Calibration(folds=K, seed=S, repeats=R)`` averages R such cross-fits over R fold
    assignments (:func:`repeated_head_folds`; the first is the one of ``repeats=1``).
    ``Calibration(leave_one_out=True)`` puts every training head in a fold of its own
    (:func:`leave_one_head_out`): K is the number of training heads, found at fit time,
    and no seed is involved.

    Attributes
    ----------
    folds : int or None
        K >= 2 for cross-fitting; None for in-sample.
    seed : int or None
        The seed the fold assignment derives from (an int >= 0 when cross-fitted, None
        otherwise); a study passes the design's ``[inference] seed``.
    repeats : int
        R >= 1 fold assignments whose out-of-fold values are averaged (default 1, a
        single assignment); R > 1 only when cross-fitted with K folds.
    leave_one_out : bool
        Leave one head out (default False); then ``folds`` and ``seed`` are None and
        ``repeats`` is 1.

    Notes
    -----
    In-sample maps have about as many steps as there are distinct training outcomes
    they can follow, so on the training rows they absorb part of each head's own
    deviation (head effects): the baseline looks better in sample than on new heads,
    and a richer block fitted next to it has less left to explain. Cross-fitted
    training values are, like held-out values, predictions for heads the map did not
    see.

    One fold assignment is one random split of the heads, and the effects fitted on
    its calibrated values move with the seed (on the paper-lengths study, by a large
    share of their bootstrap SE). With R assignments, training row i of head h gets
    ``(1/R) sum_r g_(r, -k_r(h))(x_i)``, the mean of its out-of-fold values; the part
    of the result that depends on the seed shrinks like ``1 / sqrt(R)``. Leave one head
    out removes that part altogether: each head's map is fitted on all other training
    heads, the same split whatever a seed would say, at the cost of H maps per covariate
    instead of R x K.

    Examples
    --------
    >>> from analysis.compare.covariates import Calibration
    >>> Calibration().describe(), Calibration(folds=5, seed=1).describe()
    ('in-sample', 'cross-fitted by head, 5 folds (seed 1)')
    >>> Calibration(folds=5, seed=1, repeats=20).describe()
    'cross-fitted by head, 5 folds, 20 repeats (seed 1)'
    >>> Calibration(leave_one_out=True).describe()
    'cross-fitted by head, leave one head out'
    >>> Calibration(folds=1, seed=0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: calibration: expected a number of folds K >= 2...
    """

    folds: int | None = None
    seed: int | None = None
    repeats: int = 1
    leave_one_out: bool = False

    def __post_init__(self) -> None:
        if not _is_int(self.repeats) or self.repeats < 1:
            raise ParameterError(
                "calibration", "a number of repeated fold assignments R >= 1", self.repeats
            )
        if not isinstance(self.leave_one_out, (bool, np.bool_)):
            raise ParameterError("calibration", "leave_one_out True or False", self.leave_one_out)
        if self.leave_one_out:
            given = {"folds": self.folds, "seed": self.seed, "repeats": self.repeats}
            if self.folds is not None or self.seed is not None or self.repeats != 1:
                raise ParameterError(
                    "calibration",
                    "no folds, seed or repeats when leaving one head out (leave_one_out=True)",
                    given,
                )
            return
        if self.folds is None:
            if self.seed is not None:
                raise ParameterError(
                    "calibration", "no seed for in-sample calibration (folds=None)", self.seed
                )
            if self.repeats != 1:
                raise ParameterError(
                    "calibration", "no repeats for in-sample calibration (folds=None)", self.repeats
                )
            return
        if not _is_int(self.folds) or self.folds < 2:
            raise ParameterError("calibration", "a number of folds K >= 2 (an integer)", self.folds)
        if not _is_int(self.seed) or self.seed < 0:
            raise ParameterError(
                "calibration", "a seed (an integer >= 0) for the fold assignment", self.seed
            )

    @property
    def mode(self) -> str:
        """``"cross-fitted"`` or ``"in-sample"`` (:data:`CALIBRATION_MODES`)."""
        return "in-sample" if self.folds is None and not self.leave_one_out else "cross-fitted"

    def describe(self) -> str:
        """``"cross-fitted by head, 5 folds (seed 20261202)"``, with ``", R repeats"``
        after the folds when R > 1, ``"cross-fitted by head, leave one head out"`` or
        ``"in-sample"``."""
        if self.leave_one_out:
            return "cross-fitted by head, leave one head out"
        if self.folds is None:
            return "in-sample"
        reps = f", {self.repeats} repeats" if self.repeats > 1 else ""
        return f"cross-fitted by head, {self.folds} folds{reps} (seed {self.seed})"

    def record(self) -> dict[str, object]:
        """The calibration as a study's ``compare.json`` records it: ``mode``, ``folds``,
        ``seed``, ``description``, and ``repeats`` / ``leave_one_out`` only when set (so a
        single assignment's record is what it always was).

        Examples
        --------
        >>> from analysis.compare.calibration import Calibration
        >>> Calibration(folds=5, seed=3).record()["description"]
        'cross-fitted by head, 5 folds (seed 3)'
        >>> Calibration(leave_one_out=True).record()["leave_one_out"]
        True
        """
        out: dict[str, object] = {
            "mode": self.mode,
            "folds": self.folds,
            "seed": self.seed,
            "description": self.describe(),
        }
        if self.repeats > 1:
            out["repeats"] = self.repeats
        if self.leave_one_out:
            out["leave_one_out"] = True
        return out

    def fold_labels(self, clusters: np.ndarray, train: np.ndarray) -> np.ndarray | None:
        """The ``calibration_folds`` that
        :func:`~analysis.compare.covariates.prepare_covariates` takes for this calibration.

        Parameters
        ----------
        clusters : array (n,)
            Head of each row.
        train : array of bool (n,)
            Training rows.

        Returns
        -------
        numpy.ndarray or None
            None in-sample; :func:`leave_one_head_out` (n,) when leaving one head
            out; :func:`head_folds` (n,) when ``repeats == 1``;
            :func:`repeated_head_folds` (R, n) otherwise.

        Examples
        --------
        >>> import numpy as np
        >>> from analysis.compare.calibration import Calibration
        >>> heads, train = np.arange(6), np.ones(6, bool)
        >>> Calibration().fold_labels(heads, train) is None
        True
        >>> Calibration(folds=2, seed=0, repeats=3).fold_labels(heads, train).shape
        (3, 6)
        >>> Calibration(leave_one_out=True).fold_labels(heads, train).tolist()
        [0, 1, 2, 3, 4, 5]
        """
        if self.leave_one_out:
            return leave_one_head_out(clusters, train)
        if self.folds is None:
            return None
        if self.repeats == 1:
            return head_folds(clusters, train, folds=self.folds, seed=self.seed)
        return repeated_head_folds(
            clusters, train, folds=self.folds, seed=self.seed, repeats=self.repeats
        )


def _training_heads(clusters: np.ndarray, train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted training heads (as strings) and each training row's index among them."""
    clusters = np.asarray(clusters).astype(str)
    train = np.asarray(train, dtype=bool)
    if clusters.shape != train.shape or clusters.ndim != 1:
        raise ParameterError("train", "a boolean mask as long as clusters", train.shape)
    heads = np.unique(clusters[train])
    return heads, np.searchsorted(heads, clusters[train])


def leave_one_head_out(clusters: np.ndarray, train: np.ndarray) -> np.ndarray:
    """One fold per training head: the head's index among the sorted training heads.

    Parameters
    ----------
    clusters : array (n,)
        Head (cluster) of each row; compared as strings.
    train : array of bool (n,)
        Training rows; only their heads get folds.

    Returns
    -------
    numpy.ndarray of int (n,)
        Fold ``0..H-1`` of each training row (its head's rank among the H sorted training
        heads), -1 on the other rows.

    Raises
    ------
    ParameterError
        Named ``calibration`` when there are fewer than 2 training heads (a map fitted
        on the other heads needs one).

    Notes
    -----
    The cross-fit with K = H folds: the map for head h's rows is fitted on every other
    training head. The labels involve no random draw, so the calibrated values, and every
    effect computed from them, cannot depend on a seed.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare.calibration import leave_one_head_out
    >>> heads = np.repeat(["h2", "h0", "h1"], 2)
    >>> leave_one_head_out(heads, np.arange(6) < 4).tolist()
    [1, 1, 0, 0, -1, -1]
    """
    heads, index = _training_heads(clusters, train)
    if len(heads) < 2:
        raise ParameterError(
            "calibration",
            "at least 2 training heads to leave one head out",
            f"{len(heads)} training heads",
        )
    out = np.full(len(np.asarray(train)), -1, dtype=int)
    out[np.asarray(train, dtype=bool)] = index
    return out


def _assign(
    clusters: np.ndarray, train: np.ndarray, folds: int, seeds: list[np.random.SeedSequence]
) -> np.ndarray:
    """One row of fold labels per seed sequence (see :func:`head_folds`)."""
    heads, index = _training_heads(clusters, train)
    train = np.asarray(train, dtype=bool)
    if folds > len(heads):
        raise ParameterError(
            "calibration",
            f"at most as many folds as training heads ({len(heads)})",
            f"cross-fitted by head, {folds} folds",
        )
    out = np.full((len(seeds), len(train)), -1, dtype=int)
    for r, ss in enumerate(seeds):
        order = np.random.default_rng(ss).permutation(len(heads))
        head_fold = np.empty(len(heads), dtype=int)
        head_fold[order] = np.arange(len(heads)) % folds
        out[r, train] = head_fold[index]
    return out


def head_folds(clusters: np.ndarray, train: np.ndarray, *, folds: int, seed: int) -> np.ndarray:
    """Assign whole training heads to ``folds`` folds, reproducibly from ``seed``.

    Parameters
    ----------
    clusters : array (n,)
        Head (cluster) of each row; compared as strings.
    train : array of bool (n,)
        Training rows; only their heads are assigned.
    folds : int, keyword-only
        K >= 2, at most the number of training heads.
    seed : int, keyword-only
        Seed of the assignment (a study passes its ``[inference] seed``).

    Returns
    -------
    numpy.ndarray of int (n,)
        Fold ``0..K-1`` of each training row (equal for all rows of a head), -1 on the
        other rows.

    Raises
    ------
    ParameterError
        Named ``calibration`` when K is not an integer >= 2 or exceeds the number of
        training heads.

    Notes
    -----
    The training heads are sorted (as strings); with
    ``rng = numpy.random.default_rng(numpy.random.SeedSequence(seed).spawn(1)[0])`` (the
    first child stream of the seed, so independent of a bootstrap seeded with
    ``default_rng(seed)``) and ``order = rng.permutation(H)``, head ``order[i]`` gets
    fold ``i % K``: fold sizes differ by at most one head. Held-out rows play no part,
    so the assignment depends only on the training heads' ids and the seed. It is row
    0 of :func:`repeated_head_folds` for any number of repeats.

    Examples
    --------
    Six heads of two rows, the last one held out; both rows of a head share a fold:

    >>> import numpy as np
    >>> from analysis.compare.covariates import head_folds
    >>> heads = np.repeat(["h0", "h1", "h2", "h3", "h4", "h5"], 2)
    >>> train = np.arange(12) < 10
    >>> head_folds(heads, train, folds=2, seed=0).tolist()
    [0, 0, 1, 1, 0, 0, 1, 1, 0, 0, -1, -1]
    """
    spec = Calibration(folds=folds, seed=seed)  # validates K and the seed
    return _assign(clusters, train, spec.folds, np.random.SeedSequence(spec.seed).spawn(1))[0]


def repeated_head_folds(
    clusters: np.ndarray, train: np.ndarray, *, folds: int, seed: int, repeats: int
) -> np.ndarray:
    """R assignments of whole training heads to ``folds`` folds, reproducibly from ``seed``.

    Parameters
    ----------
    clusters : array (n,)
        Head (cluster) of each row; compared as strings.
    train : array of bool (n,)
        Training rows; only their heads are assigned.
    folds : int, keyword-only
        K >= 2, at most the number of training heads.
    seed : int, keyword-only
        Seed of the assignments (a study passes its ``[inference] seed``).
    repeats : int, keyword-only
        R >= 1.

    Returns
    -------
    numpy.ndarray of int (R, n)
        Row r: the fold of each training row under assignment r, -1 on the other rows.

    Raises
    ------
    ParameterError
        Named ``calibration`` when K or R is not valid (:class:`Calibration`) or K
        exceeds the number of training heads.

    Notes
    -----
    Assignment r is :func:`head_folds`'s rule with the generator
    ``numpy.random.default_rng(numpy.random.SeedSequence(seed).spawn(R)[r])``: the r-th
    child stream of the seed. A child's stream depends on its index only, not on R, so
    row 0 is :func:`head_folds`'s single assignment and the first R rows of a larger R
    are these.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.compare.covariates import head_folds, repeated_head_folds
    >>> heads, train = np.arange(8), np.arange(8) < 6
    >>> labels = repeated_head_folds(heads, train, folds=3, seed=0, repeats=4)
    >>> labels.shape, bool((labels[0] == head_folds(heads, train, folds=3, seed=0)).all())
    ((4, 8), True)
    """
    spec = Calibration(folds=folds, seed=seed, repeats=repeats)  # validates K, seed, R
    seeds = np.random.SeedSequence(spec.seed).spawn(spec.repeats)
    return _assign(clusters, train, spec.folds, seeds)
