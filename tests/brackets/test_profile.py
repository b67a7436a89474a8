"""Profiles: monotone brackets, re-verifiable witnesses, determinism, extension, errors."""

import json

import numpy as np
import pytest

from analysis.attention import derive_seed, softmax64
from analysis.brackets import Profile, profile_matrix
from analysis.validation import ParameterError

GRID = (0.02, 0.05, 0.1, 0.2, 0.3, 0.5)


def smooth_head(rng, n=32, d=3, beta=6.0):
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return softmax64(X, X, beta)


@pytest.fixture(scope="module")
def head_and_profile():
    rng = np.random.default_rng(7)
    A = smooth_head(rng)
    return A, profile_matrix(A, eps=(0.05, 0.1, 0.2), effort="default")


def test_monotone_in_eps(head_and_profile):
    _, prof = head_and_profile
    br = prof.brackets(GRID)
    los = [b.lo for b in br]
    his = [b.hi for b in br]
    assert all(a >= b for a, b in zip(los, los[1:], strict=False))
    assert all(a >= b for a, b in zip(his, his[1:], strict=False))
    assert all(1 <= b.lo <= b.hi for b in br)


def test_every_stored_witness_reverifies(head_and_profile):
    A, prof = head_and_profile
    assert prof.reverify(A) == []
    # and the numbers stored are the certified ones of the ends
    for e in GRID:
        assert prof.upper_end(e).error <= e
        low = prof.lower_end(e)
        assert low is not None and low.margin > e


def test_round_trip_dict(head_and_profile):
    A, prof = head_and_profile
    back = Profile.from_dict(json.loads(json.dumps(prof.to_dict())))
    assert back.brackets(GRID) == prof.brackets(GRID)
    assert back.reverify(A) == []


def test_refinement_never_worse_than_fast(head_and_profile):
    A, prof = head_and_profile
    fast = profile_matrix(A, eps=(0.05, 0.1, 0.2), effort="fast")
    for a, b in zip(prof.brackets((0.05, 0.1, 0.2)), fast.brackets((0.05, 0.1, 0.2)), strict=False):
        assert a.lo >= b.lo and a.hi <= b.hi


def test_deterministic(head_and_profile):
    A, prof = head_and_profile
    again = profile_matrix(A, eps=(0.05, 0.1, 0.2), effort="default")
    assert again.brackets(GRID) == prof.brackets(GRID)


def test_float32_input_same_brackets():
    rng = np.random.default_rng(11)
    A32 = smooth_head(rng, n=24).astype(np.float32)
    p32 = profile_matrix(A32, eps=(0.1, 0.2), effort="fast")
    p64 = profile_matrix(A32.astype(np.float64), eps=(0.1, 0.2), effort="fast")
    assert p32.brackets((0.1, 0.2)) == p64.brackets((0.1, 0.2))


def test_previous_profile_is_extended_and_kept():
    rng = np.random.default_rng(5)
    A = smooth_head(rng, n=24)
    first = profile_matrix(A, eps=(0.1,), effort="fast")
    second = profile_matrix(A, eps=(0.3,), effort="fast", previous=first)
    assert second.eps_targets == (0.1, 0.3)
    lo1, hi1 = first.bracket(0.1)
    lo2, hi2 = second.bracket(0.1)
    assert lo2 >= lo1 and hi2 <= hi1
    with pytest.raises(ParameterError, match="previous"):
        profile_matrix(A[:10, :10] / A[:10, :10].sum(1, keepdims=True), eps=(0.1,), previous=first)


def test_derive_seed_is_the_documented_hash():
    """The first 8 bytes of SHA-256 of ``f"{seed}:{key}"``, little-endian, halved (63 bits).

    The digests come from coreutils (``printf '0:a' | sha256sum``), not from hashlib; the
    byte order is reversed by hand. Stored synthetic matrices depend on these seeds.
    """
    digests = {
        (0, "a"): "9df3c5fab8ef8fe78a408912e52e76477b5bd838eec3cbf48191a848ec8563d3",
        (0, "b"): "e02192fd813f38fd4ce376d30d7e2e888d6fdf56f25505e3152304418b90871e",
        (1, "a"): "4162fddd39a3e4225e8e2392eced237fbeb34e6e218b5647d27bd4d2b9c0da24",
    }
    for (seed, key), digest in digests.items():
        first8 = [digest[i : i + 2] for i in range(0, 16, 2)]
        want = int("".join(reversed(first8)), 16) // 2
        assert derive_seed(seed, key) == want, (seed, key)
        assert 0 <= derive_seed(seed, key) < 2**63
    assert derive_seed(np.int64(1), "a") == derive_seed(1, "a")
    assert derive_seed(0, "a") != derive_seed(0, "b")
    assert derive_seed(1, "a") != derive_seed(0, "a")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"eps": (0.0,)}, "eps"),
        ({"eps": (float("nan"),)}, "eps"),
        ({"eps": (-0.1,)}, "eps"),
        ({"eps": ()}, "eps"),
        ({"effort": "heroic"}, "effort"),
    ],
)
def test_bad_parameters(kwargs, match):
    A = np.full((4, 4), 0.25)
    with pytest.raises(ParameterError, match=match):
        profile_matrix(A, **kwargs)


def test_bad_matrix():
    with pytest.raises(ParameterError, match="sums to"):
        profile_matrix(np.array([[0.5, 0.4], [0.5, 0.5]]))
    prof = profile_matrix(np.array([[0.5, 0.4], [0.5, 0.5]]), renormalize=True, effort="fast")
    assert prof.bracket(0.05)[1] <= 2
    with pytest.raises(ParameterError, match="single matrix"):
        profile_matrix(np.full((2, 3, 3), 1 / 3))


def test_compact_encoding_is_exact(head_and_profile):
    A, prof = head_and_profile
    d = prof.to_dict(arrays="float32-base64")
    back = Profile.from_dict(json.loads(json.dumps(d)))
    assert back.brackets(GRID) == prof.brackets(GRID)
    for k, w in prof.upper.items():
        np.testing.assert_array_equal(back.upper[k].U, w.U)  # float32 storage is lossless
    assert back.reverify(A) == []
    assert len(json.dumps(d)) < len(json.dumps(prof.to_dict())) / 2
    with pytest.raises(ParameterError, match="arrays"):
        prof.to_dict(arrays="pickle")


def test_tiny_eps_uses_identity_witness(head_and_profile):
    A, prof = head_and_profile
    w = prof.upper_end(1e-12)
    assert w.rank == min(A.shape) and w.method == "identity" and w.U is None
    from analysis.brackets.verify import certified_upper_error

    assert certified_upper_error(A, *prof.witness_arrays(w, A)) <= 1e-12


def test_from_dict_with_A_reverifies_and_names_profile(head_and_profile):
    from tests.fixtures.tamper import scale_upper, set_margin

    A, prof = head_and_profile
    d = json.loads(json.dumps(prof.to_dict(arrays="float32-base64")))
    back = Profile.from_dict(d, A=A)  # an intact profile loads
    assert back.brackets(GRID) == prof.brackets(GRID)
    hi = prof.bracket(0.1)[1]
    lo = prof.bracket(0.1)[0]
    for bad, what in (
        (scale_upper(d, hi, 1.5), f"upper rank {hi}"),
        (set_margin(d, lo, 0.99), f"lower size {lo}"),
    ):
        Profile.from_dict(bad)  # without A nothing is checked
        with pytest.raises(ParameterError, match=what) as info:
            Profile.from_dict(bad, A=A)
        assert info.value.name == "profile"
    with pytest.raises(ParameterError, match="shape") as info:
        Profile.from_dict(d, A=smooth_head(np.random.default_rng(0), n=12))
    assert info.value.name == "profile"


def test_reverify_reports_damaged_witnesses_instead_of_raising(head_and_profile):
    """Non-finite entries, a witness whose width disagrees with its rank, a profile of
    another shape: each is a failure in the list, not an exception."""
    from dataclasses import replace

    A, prof = head_and_profile
    hi = prof.bracket(0.1)[1]
    lo = prof.bracket(0.1)[0]
    w = prof.upper[hi]
    nan_U = w.U.copy()
    nan_U[0, 0] = np.nan
    bad = Profile.from_dict(prof.to_dict())
    bad.upper[hi] = replace(w, U=nan_U)
    assert bad.reverify(A) == [f"upper rank {hi}: non-finite or misshapen witness"]
    bad = Profile.from_dict(prof.to_dict())
    bad.upper[hi] = replace(w, rank=hi - 1)  # claims rank hi - 1 with hi columns
    assert bad.reverify(A) == [f"upper rank {hi}: non-finite or misshapen witness"]
    bad = Profile.from_dict(prof.to_dict())
    bad.lower[lo] = replace(prof.lower[lo], margin=float("nan"))
    assert len(bad.reverify(A)) == 1 and bad.reverify(A)[0].startswith(f"lower size {lo}:")
    other = smooth_head(np.random.default_rng(0), n=12)
    assert prof.reverify(other) == [f"shape {prof.shape} is not A's {other.shape}"]


def test_a_damaged_previous_profile_is_named(head_and_profile):
    """``previous`` witnesses are re-certified, never trusted; non-finite ones are refused
    under the parameter's name (not the verifier's ``U``)."""
    from dataclasses import replace

    A, prof = head_and_profile
    hi = prof.bracket(0.1)[1]
    bad = Profile.from_dict(prof.to_dict())
    U = bad.upper[hi].U.copy()
    U[0, 0] = np.inf
    bad.upper[hi] = replace(bad.upper[hi], U=U)
    with pytest.raises(ParameterError) as info:
        profile_matrix(A, eps=(0.3,), effort="fast", previous=bad)
    assert info.value.name == "previous"
