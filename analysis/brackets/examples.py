"""A small random attention head for the documentation of :mod:`analysis.brackets`.

Like scikit-learn's ``datasets.make_*``, :func:`example_head` makes from a seed the matrix
that the ``Examples`` sections of this package bracket, so each example states only what
it shows.
"""

from __future__ import annotations

import numpy as np

from analysis.validation import ParameterError

__all__ = ["example_head"]


def example_head(n: int = 8, *, seed: int = 0, scale: float = 3.0) -> np.ndarray:
    """A random ``n x n`` attention head: each row a softmax of ``scale`` x N(0, 1) logits.

    Parameters
    ----------
    n : int, default 8
        Queries and keys.
    seed : int, default 0
        Seed of :func:`numpy.random.default_rng`.
    scale : float, default 3.0
        Logit scale (an inverse temperature); larger makes rows peakier and the rank at a
        given eps smaller.

    Returns
    -------
    numpy.ndarray
        Shape ``(n, n)``, float64, positive, each row summing to 1.

    Raises
    ------
    ParameterError
        When ``n`` is not a positive int.

    Notes
    -----
    ``A = exp(scale Z)`` with ``Z`` standard normal, then each row is divided by its sum:
    the softmax of the logits ``scale Z`` (the row's constant does not matter).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.brackets.examples import example_head
    >>> A = example_head()
    >>> A.shape, bool(np.allclose(A.sum(1), 1.0)), bool((A > 0).all())
    ((8, 8), True, True)
    >>> example_head(0)
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: n: expected a positive int, got 0
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ParameterError("n", "a positive int", n)
    rng = np.random.default_rng(seed)
    A = np.exp(scale * rng.normal(size=(n, n)))
    A /= A.sum(1, keepdims=True)
    return A
