"""Attention matrices and bracket input files: the fixtures of :mod:`analysis.brackets`."""

from __future__ import annotations

from typing import Any

import numpy as np

from analysis.brackets.io import MatrixInput, profile_file, result_json
from analysis.executor import RunSpec
from analysis.validation import ParameterError

__all__ = ["example_bracket_result", "example_head", "example_matrix_input"]


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
    >>> from analysis.datasets import example_head
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


def example_matrix_input() -> MatrixInput:
    """Two 4 x 4 matrices as read from an input file: the identity and the uniform matrix.

    At eps = 0.5 the identity has ``r_eps = 4`` (a rank-k approximant leaves some row
    with l1 error at least 1 when k < 4) and the uniform matrix rank 1 (it is rank 1).

    Returns
    -------
    MatrixInput
        ``A`` of shape (2, 4, 4), (layer, head) = (0, 0) and (0, 1), the stand-in file
        hash ``"sha-of-the-input-file"``, no temperature, not renormalized.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.datasets import example_matrix_input
    >>> data = example_matrix_input()
    >>> data.A.shape, bool(np.array_equal(data.A[0], np.eye(4))), data.A[1].max()
    ((2, 4, 4), True, np.float64(0.25))
    """
    A = np.stack([np.eye(4), np.full((4, 4), 0.25)])
    return MatrixInput(A, [0, 0], [0, 1], "sha-of-the-input-file", None, False)


def example_bracket_result() -> tuple[MatrixInput, dict[str, Any]]:
    """:func:`example_matrix_input` and its ``attnrank bracket`` result at eps = 0.5.

    Returns
    -------
    data : MatrixInput
        :func:`example_matrix_input`.
    result : dict
        :func:`analysis.brackets.io.result_json` of the ``fast`` profiles, witnesses in.

    Examples
    --------
    >>> from analysis.datasets import example_bracket_result
    >>> data, result = example_bracket_result()
    >>> [m["brackets"][0]["lower"] for m in result["matrices"]]  # r_0.5 = 4 and 1
    [4, 1]
    """
    data = example_matrix_input()
    profs = profile_file(data, eps=(0.5,), effort="fast", execution=RunSpec(progress=False))
    return data, result_json(data, profs, eps=(0.5,), effort="fast", witnesses=True)
