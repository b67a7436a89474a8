"""A sweep carries its engine version: in every job, its cache key and the search."""

from __future__ import annotations

import pytest

import analysis.brackets.versions as versions
import analysis.laws.sweep as sweep
from analysis.laws import bracket_job, default_config, job_key, make_config
from analysis.validation import ParameterError

KW = {"dims": [3], "betas": [1.0, 7.0], "n": 8, "eps": [0.1], "seeds": [0], "effort": "fast"}


def test_jobs_carry_the_engine_into_key_and_search(monkeypatch):
    monkeypatch.setattr(versions, "ENGINE_VERSIONS", (4, 5))
    monkeypatch.setattr(versions, "LATEST_ENGINE", 5)
    newest = make_config(default_config("spherical"), **KW).jobs()
    four = make_config(default_config("spherical"), **KW).with_engine(4).jobs()
    assert {j["engine"] for j in newest} == {5} and {j["engine"] for j in four} == {4}
    assert all(j["key"].endswith(":engine5") for j in newest)
    assert all(j["key"].endswith(":engine4") for j in four)
    assert job_key({k: v for k, v in four[0].items() if k != "engine"}) == newest[0]["key"]
    seen = []
    real = sweep.profile_matrix

    def spy(*args, **kwargs):
        seen.append(kwargs.get("engine"))
        return real(*args, **kwargs)

    monkeypatch.setattr(sweep, "profile_matrix", spy)
    bracket_job(four[0])
    assert seen == [4]


def test_an_unknown_engine_is_named():
    with pytest.raises(ParameterError) as info:
        make_config(default_config("spherical"), **KW).with_engine(3)
    assert info.value.name == "engine"
