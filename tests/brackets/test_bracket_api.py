"""The typed read-off of a profile: ``Bracket``, ``brackets`` in the order given, ``to_frame``."""

import numpy as np
import pytest

from analysis.brackets import Bracket, profile_matrix
from analysis.sources.synthetic import identity, spherical

EPS = (0.3, 0.05, 0.1)  # not sorted: the order given is the order returned


@pytest.fixture(scope="module")
def prof():
    return profile_matrix(spherical(24, 3, 4.0, random_state=1).A, eps=EPS, effort="fast")


def test_bracket_is_a_named_pair_that_unpacks(prof):
    b = prof.bracket(0.1)
    assert type(b) is Bracket
    lo, hi = b
    assert (b.lo, b.hi) == (lo, hi) and lo <= hi
    assert b.closed == (lo == hi)


def test_brackets_follow_the_given_order(prof):
    got = prof.brackets(EPS)
    assert got == [prof.bracket(e) for e in EPS]
    assert all(type(b) is Bracket for b in got)
    # monotone in eps: the bracket at the largest eps is the lowest
    assert got[0].hi <= got[2].hi <= got[1].hi and got[0].lo <= got[2].lo <= got[1].lo


def test_to_frame_is_the_tidy_form_of_brackets(prof):
    df = prof.to_frame(EPS)
    assert list(df.columns) == ["eps", "lower", "upper"]
    assert df["eps"].tolist() == list(EPS)
    assert list(zip(df["lower"], df["upper"], strict=True)) == [
        tuple(b) for b in prof.brackets(EPS)
    ]
    assert df["lower"].dtype == np.int64 and df["upper"].dtype == np.int64


def test_known_answer_through_the_typed_api():
    """r_eps(I_5) = 5 for eps < 1 and 0 for eps >= 1 (every row has l1 norm 1); at eps = 1
    exactly the certified error of B = 0 is 1 plus a rounding allowance, so 1.5."""
    p = profile_matrix(identity(5).A, eps=(0.5,), effort="fast")
    assert p.brackets([0.5, 1.5]) == [Bracket(5, 5), Bracket(0, 0)]
    assert p.bracket(0.5).closed
