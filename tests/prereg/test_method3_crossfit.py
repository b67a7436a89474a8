"""Method 3 defaults of the cross-fit and the refit bootstrap; method 2 unchanged."""

from __future__ import annotations

import pytest

from analysis.prereg.options import REFIT_REPLICATES_V3, design_options
from analysis.prereg.schema import (
    CALIBRATION_REPEATS_V3,
    LEAVE_ONE_HEAD_OUT,
    calibration_repeats,
    design_calibration,
)
from analysis.validation import ParameterError

CROSS = {"calibration": "cross-fitted by head, 5 folds"}


def _data(method=None, descriptors=CROSS, **inference):
    data = {"metrics": {"primary": "interval_sq_loss"}, "hypotheses": [], "inference": inference}
    data["descriptors"] = dict(descriptors)
    if method is not None:
        data["method"] = method
    return data


def test_method_2_keeps_one_assignment_and_no_refits():
    assert calibration_repeats(_data()) == calibration_repeats(_data(2)) == 1
    opts = design_options(_data())
    assert (opts["refit_replicates"], opts["refit_confirmatory"]) == (0, False)
    opts = design_options(_data(refit_replicates=50))  # a sensitivity, as before
    assert (opts["refit_replicates"], opts["refit_confirmatory"]) == (50, False)


def test_method_3_defaults_and_explicit_keys_win():
    assert calibration_repeats(_data(3)) == CALIBRATION_REPEATS_V3 > 1
    assert calibration_repeats(_data(3, {**CROSS, "calibration_repeats": 1})) == 1
    assert calibration_repeats(_data(2, {**CROSS, "calibration_repeats": 7})) == 7
    assert calibration_repeats(_data(3, {"calibration": "in-sample"})) == 1
    opts = design_options(_data(3))
    assert (opts["refit_replicates"], opts["refit_confirmatory"]) == (REFIT_REPLICATES_V3, True)
    opts = design_options(_data(3, refit_bootstrap="sensitivity"))
    assert opts["refit_confirmatory"] is False
    assert design_options(_data(3, refit_replicates=0))["refit_confirmatory"] is False
    assert design_options(_data(2, refit_replicates=9, refit_bootstrap="confirmatory"))[
        "refit_confirmatory"
    ]


def test_method_3_without_the_key_leaves_one_head_out():
    """Method 3's default needs no fold seed; method 2 without the key stays in-sample."""
    assert design_calibration(_data(3, {})) == LEAVE_ONE_HEAD_OUT
    assert design_calibration(_data(3, {"calibration": LEAVE_ONE_HEAD_OUT})) == LEAVE_ONE_HEAD_OUT
    assert design_calibration(_data(2, {})) is None
    assert design_calibration(_data(3)) == 5  # a stated K wins
    assert calibration_repeats(_data(3, {})) == 1


@pytest.mark.parametrize(
    ("data", "name"),
    [
        (_data(3, {**CROSS, "calibration_repeats": 0}), "descriptors.calibration_repeats"),
        (_data(3, {**CROSS, "calibration_repeats": True}), "descriptors.calibration_repeats"),
        (
            _data(3, {"calibration": "in-sample", "calibration_repeats": 4}),
            "descriptors.calibration_repeats",
        ),
        (
            _data(3, {"calibration_repeats": 20}),  # leave one head out has no repeats
            "descriptors.calibration_repeats",
        ),
        (
            _data(2, {"calibration": "cross-fitted by head, leave 1 head out"}),
            "descriptors.calibration",
        ),
        (_data(3, refit_bootstrap="always"), "inference.refit_bootstrap"),
        (_data(2, refit_bootstrap="confirmatory"), "inference.refit_bootstrap"),
    ],
)
def test_bad_values_are_refused(data, name):
    with pytest.raises(ParameterError) as err:
        calibration_repeats(data)
        design_options(data)
    assert err.value.name == name
