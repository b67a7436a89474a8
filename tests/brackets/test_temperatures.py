"""One head at several temperatures, searched side by side (``profile_temperatures``),
and the device argument of the search."""

import numpy as np
import pytest

from analysis.attention import softmax64
from analysis.brackets import profile_matrices, profile_matrix, profile_temperatures
from analysis.validation import ParameterError
from tests.fixtures.known import blocks, blocks_threshold, permute

EPS = (0.05, 0.1, 0.2)
TEMPS = (0.5, 1.0, 2.0)


def head_at(rng, temps=TEMPS, n=24, d=3, scale=6.0):
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    return np.stack([softmax64(X, X, scale, None, t) for t in temps])


def test_temperatures_together_are_sound_and_recorded(rng):
    A = head_at(rng)
    profs = profile_temperatures(A, TEMPS, eps=EPS)
    for t, a, p in zip(TEMPS, A, profs, strict=True):
        assert p.reverify(a) == []
        assert p.stats["temperature"] == t and p.stats["batch"] == 3
    # the same search as profile_matrices on the same batch
    same = profile_matrices(A, eps=EPS)
    assert [p.brackets(EPS) for p in profs] == [p.brackets(EPS) for p in same]


def test_temperatures_together_are_never_worse_than_the_fast_search(rng):
    A = head_at(rng, scale=9.0)
    for a, p in zip(A, profile_temperatures(A, TEMPS, eps=EPS), strict=True):
        fast = profile_matrix(a, eps=EPS, effort="fast")
        for b, f in zip(p.brackets(EPS), fast.brackets(EPS), strict=True):
            assert f.lo <= b.lo <= b.hi <= f.hi


def test_known_answer_holds_in_a_batch_of_temperatures(rng):
    """Smoothed blocks keep their exact rank wherever they sit in the batch."""
    sizes, h = [5, 7, 4, 8], 0.2
    A = permute(blocks(sizes, h), rng)
    eps = 0.5 * blocks_threshold(sizes, h)
    for p in profile_temperatures([A, A, A], TEMPS, eps=(eps,)):
        assert p.bracket(eps) == (4, 4)
        assert p.reverify(A) == []


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"temperatures": (1.0, 1.0, 2.0)}, "temperatures"),
        ({"temperatures": (1.0, -1.0, 2.0)}, "temperatures"),
        ({"temperatures": (1.0, 2.0)}, "A"),
        ({"temperatures": TEMPS, "previous": [None]}, "previous"),
        ({"temperatures": TEMPS, "device": "nonsense"}, "device"),
    ],
)
def test_bad_arguments_name_the_parameter(rng, kwargs, param):
    A = head_at(rng)
    temps = kwargs.pop("temperatures")
    with pytest.raises(ParameterError) as err:
        profile_temperatures(A, temps, eps=EPS, **kwargs)
    assert err.value.name == param


def test_device_cpu_is_the_default_search(rng):
    A = head_at(rng)
    a = profile_matrices(A, eps=EPS)
    b = profile_matrices(A, eps=EPS, device="cpu")
    for p, q in zip(a, b, strict=True):
        assert p.brackets(EPS) == q.brackets(EPS)
        assert sorted(p.upper) == sorted(q.upper)
        for k in p.upper:
            np.testing.assert_array_equal(p.upper[k].U, q.upper[k].U)


def test_an_unavailable_device_is_a_clear_error(rng):
    import torch

    A = head_at(rng)[1]
    if not torch.cuda.is_available():
        with pytest.raises(ParameterError, match="device: .*no CUDA device"):
            profile_matrix(A, eps=EPS, device="cuda")
        with pytest.raises(ParameterError, match="device: .*no CUDA device"):
            profile_matrices([A, A], eps=EPS, device="cuda:0")
    with pytest.raises(ParameterError, match="^device: "):
        profile_matrix(A, eps=EPS, device="tpu-of-dreams")


@pytest.mark.skipif(
    not __import__("torch").cuda.is_available(), reason="needs a CUDA device (the GPU path)"
)
def test_cuda_search_is_certified_on_the_cpu(rng):  # pragma: no cover - GPU only
    A = head_at(rng)
    profs = profile_matrices(A, eps=EPS, device="cuda")
    for a, p in zip(A, profs, strict=True):
        assert p.reverify(a) == []
        fast = profile_matrix(a, eps=EPS, effort="fast")
        for b, f in zip(p.brackets(EPS), fast.brackets(EPS), strict=True):
            assert f.lo <= b.lo <= b.hi <= f.hi
