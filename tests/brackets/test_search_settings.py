"""One frozen SearchSettings per effort: complete, read-only, ordered, pinned to the version."""

import dataclasses
import math

import pytest

import analysis.brackets as engine
import analysis.brackets.settings as settings_module
from analysis.brackets import EFFORTS, SearchSettings, search_settings, settings_sha256
from analysis.brackets.settings import SETTINGS
from analysis.validation import ParameterError

#: ``settings_sha256(effort)`` of every engine version, by version. The settings decide
#: which witnesses the search finds, so a change to them must come with a new engine
#: version (``analysis.brackets.__version__``): add that version's row here, and never edit
#: the row of a released one. A settings change without a version bump fails
#: :func:`test_settings_are_pinned_to_the_engine_version`; so does a version bump without
#: its row. (These are fingerprints, not copies of the values: editing ``settings.py``
#: alone cannot make this test pass again.)
SETTINGS_SHA256 = {
    "4": {
        "fast": "2026a894902ea2887fd95eaea4e7fa3b641913bc64c371d2bac984d3e8239175",
        "default": "ab889028021c07b23dc65b3ab5e70f921bd3d63fa064cce7195da595d14f9e3b",
        "thorough": "a1b94376a59278fe36b10a1468c57c189d619cb7925a4d00d74e6f78da119122",
    },
}


def test_every_effort_has_its_settings():
    assert EFFORTS == ("fast", "default", "thorough") == tuple(SETTINGS)
    for effort in EFFORTS:
        assert search_settings(effort) is SETTINGS[effort]
        assert isinstance(SETTINGS[effort], SearchSettings)


def test_unknown_effort_names_the_parameter():
    with pytest.raises(ParameterError, match="effort"):
        search_settings("slow")
    with pytest.raises(ParameterError, match="effort"):
        settings_sha256("slow")


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


def test_settings_are_pinned_to_the_engine_version():
    """A settings change needs a new ``analysis.brackets.__version__`` (and its row above)."""
    assert engine.__version__ in SETTINGS_SHA256, (
        f"engine version {engine.__version__!r} has no recorded settings hashes: add its row"
    )
    found = {effort: settings_sha256(effort) for effort in EFFORTS}
    assert found == SETTINGS_SHA256[engine.__version__], (
        "the search settings changed: bump analysis.brackets.__version__ and record the "
        "new hashes under it"
    )


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(SearchSettings)])
def test_every_field_is_in_the_hash(monkeypatch, name):
    """Changing any one field, a float by one ulp, changes the pinned hash."""
    before = {effort: settings_sha256(effort) for effort in EFFORTS}
    old = getattr(SETTINGS["default"], name)
    new = math.nextafter(old, math.inf) if isinstance(old, float) else old + 1
    changed = dict(SETTINGS) | {"default": dataclasses.replace(SETTINGS["default"], **{name: new})}
    monkeypatch.setattr(settings_module, "SETTINGS", changed)
    assert settings_sha256("default") != before["default"]
    assert settings_sha256("fast") == before["fast"]  # the other efforts keep theirs
