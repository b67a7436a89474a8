"""One frozen SearchSettings per effort: complete, read-only, ordered, pinned to the version."""

import dataclasses

import pytest

import analysis.brackets as engine
from analysis.brackets import EFFORTS, SearchSettings, search_settings
from analysis.brackets.search import SETTINGS
from analysis.validation import ParameterError


def test_every_effort_has_its_settings():
    assert EFFORTS == ("fast", "default", "thorough") == tuple(SETTINGS)
    for effort in EFFORTS:
        assert search_settings(effort) is SETTINGS[effort]
        assert isinstance(SETTINGS[effort], SearchSettings)


def test_unknown_effort_names_the_parameter():
    with pytest.raises(ParameterError, match="effort"):
        search_settings("slow")


def test_settings_are_read_only():
    with pytest.raises(TypeError):
        SETTINGS["fast"] = SETTINGS["default"]  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        SETTINGS["default"].rounds = 9  # type: ignore[misc]


def test_more_effort_never_means_less_search():
    per_effort = ("rounds", "upper_steps", "lower_steps")
    per_effort += ("close_upper_steps", "close_lower_steps", "close_seeds")
    fast, default, thorough = (dataclasses.asdict(SETTINGS[e]) for e in EFFORTS)
    for name in per_effort:
        assert fast[name] <= default[name] <= thorough[name], name
    # the rest is one value for all efforts
    for name in set(fast) - set(per_effort):
        assert fast[name] == default[name] == thorough[name], name


def test_settings_are_those_of_this_engine_version():
    """Settings decide the witnesses found: a change needs a new ``__version__``."""
    assert engine.__version__ == "4"
    common = {
        "upper_first": 0.7,
        "lower_boost": 2.5,
        "lp_max_size": 8,
        "lp_near": 0.8,
        "lp_rounds": 2,
        "resolution": 0.03,
        "close_width": 2,
        "close_upper_near": 1.06,
        "close_lower_near": 0.6,
        "close_max_size": 12,
        "close_polish": 2,
        "close_lp_rounds": 3,
    }
    per_effort = {
        "fast": (0, 0, 0, 0, 0, 0),
        "default": (6, 300, 400, 1200, 600, 3),
        "thorough": (7, 800, 1200, 2500, 1200, 8),
    }
    names = ("rounds", "upper_steps", "lower_steps")
    names += ("close_upper_steps", "close_lower_steps", "close_seeds")
    for effort, values in per_effort.items():
        want = common | dict(zip(names, values, strict=True))
        assert dataclasses.asdict(SETTINGS[effort]) == want, effort
