"""Reading bracket ends off certified witnesses at the boundary: ``mu > eps``, ``e <= eps``.

A lower witness of certified margin ``mu`` proves ``r_eps >= m`` only for ``eps < mu``
(:func:`analysis.brackets.certified_lower_margin`), so a margin exactly equal to eps must
not count; an upper witness of certified error ``e`` proves ``r_eps <= k`` for ``eps >= e``.
"""

from __future__ import annotations

import numpy as np

from analysis.brackets import Profile
from analysis.brackets.profile import LowerWitness, UpperWitness, largest_lower, least_upper
from analysis.brackets.verify import certified_lower_margin, certified_upper_error


def _identity_witnesses():
    """Witnesses of sizes 1 to 3 of the 3 x 3 identity, with their certified margins."""
    I3 = np.eye(3)
    out = {}
    for m in (1, 2, 3):
        R, Y = I3[:, :m], I3[:m]
        out[m] = LowerWitness(m, certified_lower_margin(I3, R, Y), "test", R, Y)
    return out


def test_a_margin_exactly_equal_to_eps_is_rejected():
    lower = _identity_witnesses()
    mu = lower[3].margin
    assert 0.99 < mu < 1.0
    lower[2] = LowerWitness(2, np.nextafter(mu, 2.0), "test", lower[2].R, lower[2].Y)
    lower[1] = LowerWitness(1, np.nextafter(lower[2].margin, 2.0), "test", lower[1].R, lower[1].Y)
    # eps equal to the size-3 margin, bit for bit: size 3 is refused, size 2 (one ulp
    # above) is the largest accepted; at eps = size 2's margin, size 1.
    assert largest_lower(lower, mu).size == 2
    assert largest_lower(lower, lower[2].margin).size == 1
    assert largest_lower(lower, lower[1].margin) is None
    assert largest_lower(lower, np.nextafter(mu, 0.0)).size == 3  # one ulp below: accepted
    prof = Profile((3, 3), {}, lower, (0.5,), "fast")
    assert prof.bracket(mu).lo == 2
    assert prof.lower_end(lower[1].margin) is None
    assert prof.bracket(lower[1].margin).lo == 0


def test_an_error_exactly_equal_to_eps_is_accepted():
    A = np.full((4, 4), 0.25)
    u = np.full((4, 1), 0.5)
    e = certified_upper_error(A, u, u)
    upper = {1: UpperWitness(1, e, "test", u, u)}
    assert least_upper(upper, e).rank == 1
    assert least_upper(upper, np.nextafter(e, 0.0)) is None
