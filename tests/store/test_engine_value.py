"""The package's engine carries its version as a value, into the search and the store label."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import analysis.brackets.engine as engine_module
import analysis.brackets.versions as versions
from analysis.brackets.engine import Engine, default_engine, engine_for
from analysis.store.engine import engine_label
from analysis.validation import ParameterError


@pytest.fixture
def two_engines(monkeypatch):
    monkeypatch.setattr(versions, "ENGINE_VERSIONS", (4, 5))
    monkeypatch.setattr(versions, "LATEST_ENGINE", 5)


def test_the_version_reaches_the_search(monkeypatch, two_engines):
    seen = []
    for name in ("profile_matrix", "profile_temperatures"):
        real = getattr(engine_module, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            seen.append((_name, kwargs.get("engine")))
            return _real(*args, **kwargs)

        monkeypatch.setattr(engine_module, name, spy)
    A = np.eye(4)
    kw = {"eps": (0.5,), "effort": "fast"}
    Engine(version=4).profile_batch([A], [1.0], previous=[None], **kw)
    default_engine().profile_batch([A, A], [1.0, 2.0], previous=[None, None], **kw)
    assert seen == [("profile_matrix", 4), ("profile_temperatures", 5)]


def test_the_version_is_a_value(two_engines):
    four, five = engine_for(4), Engine(version="5")
    assert (four.version, four.number, five.number) == ("4", 4, 5)
    assert default_engine() == five != four
    assert engine_label(four) == "analysis.brackets 4"
    assert engine_label(five) == "analysis.brackets 5"
    assert pickle.loads(pickle.dumps(four)) == four  # workers receive the version


@pytest.mark.parametrize("bad", [3, "3", 4.0, True, "latest"])
def test_an_unknown_version_is_named(bad):
    with pytest.raises(ParameterError) as info:
        Engine(version=bad)
    assert info.value.name == "engine" and info.value.got == bad
    assert "engine versions 4" in str(info.value)
