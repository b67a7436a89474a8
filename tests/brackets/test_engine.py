"""The package's engine as the store takes it (``analysis.brackets.engine``): the same
searches as the functions it adapts, a picklable object, the store's interface."""

import pickle

import numpy as np
import pytest

import analysis.brackets as brackets
from analysis.attention import softmax64
from analysis.brackets import profile_matrix, profile_temperatures
from analysis.brackets.engine import Engine, default_engine
from analysis.store.engine import BracketEngine, StoredProfile, engine_label

EPS = (0.1, 0.2)
TEMPS = (0.5, 1.0)


def _head(rng, temps, n=16, d=3, scale=6.0):
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    return [softmax64(X, X, scale, None, t) for t in temps]


def _without_timings(d):
    stats = {k: v for k, v in d["stats"].items() if k != "seconds"}
    return {**d, "stats": stats}


def test_it_is_the_store_engine_and_labels_as_before():
    engine = default_engine()
    assert isinstance(engine, BracketEngine)
    # the label stores recorded before the engine was a value ("analysis.brackets 4"):
    # a change would set every stored profile apart as another engine's
    assert engine_label(Engine(version=4)) == "analysis.brackets 4"
    assert engine_label(engine) == f"analysis.brackets {brackets.LATEST_ENGINE}"
    assert engine.efforts == brackets.EFFORTS


def test_it_pickles_with_its_version():
    engine = default_engine()
    back = pickle.loads(pickle.dumps(engine))
    assert isinstance(back, Engine) and back == engine
    assert engine_label(back) == engine_label(engine)


def test_a_batch_of_one_is_profile_matrix(rng):
    (A,) = _head(rng, (1.0,))
    (prof,) = default_engine().profile_batch([A], [1.0], eps=EPS, effort="fast", previous=[None])
    alone = profile_matrix(A, eps=EPS, effort="fast")
    assert isinstance(prof, StoredProfile)
    assert "temperature" not in prof.stats  # as the store's one-temperature profiles
    assert _without_timings(prof.to_dict()) == _without_timings(alone.to_dict())


def test_a_batch_is_profile_temperatures(rng):
    mats = _head(rng, TEMPS)
    profs = default_engine().profile_batch(
        mats, TEMPS, eps=EPS, effort="fast", previous=[None, None]
    )
    together = profile_temperatures(mats, TEMPS, eps=EPS, effort="fast")
    assert [_without_timings(p.to_dict()) for p in profs] == [
        _without_timings(p.to_dict()) for p in together
    ]
    assert [p.stats["temperature"] for p in profs] == list(TEMPS)


def test_previous_profiles_are_extended(rng):
    (A,) = _head(rng, (1.0,))
    engine = default_engine()
    (first,) = engine.profile_batch([A], [1.0], eps=(0.1,), effort="fast", previous=[None])
    stored = engine.load_profile(first.to_dict(witnesses=True, arrays="float32-base64"))
    assert stored.reverify(A) == []
    (more,) = engine.profile_batch([A], [1.0], eps=(0.2,), effort="fast", previous=[stored])
    assert more.eps_targets == (0.1, 0.2)


def test_an_unknown_effort_names_the_parameter(rng):
    (A,) = _head(rng, (1.0,))
    from analysis.validation import ParameterError

    with pytest.raises(ParameterError) as info:
        default_engine().profile_batch([A], [1.0], eps=EPS, effort="slow", previous=[None])
    assert info.value.name == "effort"


def test_a_design_accepts_exactly_the_engine_efforts():
    """prereg may not import the engine (import-linter): both take the effort names from
    the ground floor (analysis.validation.EFFORTS), one tuple, the same object."""
    from analysis.prereg.schema import EFFORTS as DESIGN_EFFORTS
    from analysis.validation import EFFORTS

    assert DESIGN_EFFORTS is EFFORTS is brackets.EFFORTS
    assert EFFORTS == default_engine().efforts
