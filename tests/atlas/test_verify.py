"""reverify_rows on a small real study: rows re-derived from the MiniLM weights and the
synthetic generator pass; a row whose lower end, upper end or matrix hash was changed
fails, naming the row and the check that failed."""

from __future__ import annotations

import json

import pytest

from analysis.atlas import failure_lines, reverify_rows
from analysis.validation import ParameterError

CHECKS = ["matrix_match", "bracket_match", "witnesses_verified", "passed"]


@pytest.fixture(scope="module")
def rows(atlas):
    """Real rows of two inputs, both temperatures, and the last (synthetic) row."""
    real = atlas.index[atlas["source"] == "checkpoint"]
    synthetic = atlas.index[atlas["source"] == "synthetic"]
    chosen = [real[0], real[5], real[17], real[-1], synthetic[-1]]
    return atlas.loc[chosen]


def test_rows_rederived_from_the_sources_pass(rows):
    checks = reverify_rows(rows)
    assert checks["row"].tolist() == rows.index.tolist()
    assert checks[CHECKS].all().all(), checks["line"].tolist()
    assert (checks["rederived_lower"].to_numpy() == rows["lower"].to_numpy()).all()
    assert (checks["rederived_upper"].to_numpy() == rows["upper"].to_numpy()).all()
    real = rows.loc[rows["source"] == "checkpoint"]
    assert set(real["temperature"]) == {1.0, 2.0} and real["length"].nunique() == 2
    assert failure_lines(checks) == []


def test_a_tampered_row_fails_and_is_named(rows):
    tampered = rows.copy()
    first, second, third, fourth = tampered.index[:4]
    tampered.loc[first, "lower"] = tampered.loc[first, "lower"] + 1
    tampered.loc[second, "matrix_sha256"] = "f" * 64
    tampered.loc[third, "upper"] = tampered.loc[third, "upper"] + 1
    tampered.loc[fourth, "lower_method"] = (
        "row-sum" if rows.loc[fourth, "lower_method"] != "row-sum" else "ascent"
    )
    checks = reverify_rows(tampered).set_index("row")
    assert checks.loc[first, CHECKS].tolist() == [True, False, True, False]
    assert checks.loc[second, CHECKS].tolist() == [False, True, True, False]
    assert checks.loc[third, CHECKS].tolist() == [True, False, True, False]
    assert checks.loc[fourth, CHECKS].tolist() == [True, False, True, False]
    assert checks.loc[tampered.index[4], "passed"]  # the untouched row still passes
    lines = failure_lines(checks.reset_index())
    assert len(lines) == 4
    assert lines[0].startswith(f"row {first}: FAIL ") and "re-derived as" in lines[0]
    assert lines[1].startswith(f"row {second}: FAIL ") and "matrix hash differs" in lines[1]
    assert "constructions" in lines[3]
    assert all(
        rows.loc[i, "cell_key"] in line for i, line in zip(tampered.index[:4], lines, strict=True)
    )


def test_a_row_of_another_input_is_not_found_in_the_sources(rows):
    tampered = rows.iloc[[0]].copy()
    tampered["input_id"] = "corpus:elsewhere"
    tampered["matrix_key"] = "0" * 20
    checks = reverify_rows(tampered)
    assert not checks.loc[0, "passed"] and "no such matrix" in checks.loc[0, "line"]


def test_no_rows_or_missing_columns_are_refused(rows):
    with pytest.raises(ParameterError, match="^atlas_rows: expected a non-empty"):
        reverify_rows(rows.iloc[:0])
    with pytest.raises(ParameterError, match="^atlas_rows: .*missing: matrix_sha256"):
        reverify_rows(rows.drop(columns="matrix_sha256"))


def test_a_rederived_witness_that_does_not_verify_fails_the_row(rows, monkeypatch):
    """An engine whose witnesses claim a smaller error than they have (a search bug) is
    caught by the verifier, whatever bracket it gives."""
    import dataclasses

    from analysis.brackets.engine import Engine

    real_batch = Engine.profile_batch

    def overclaiming(self, *args, **kwargs):
        profs = real_batch(self, *args, **kwargs)
        for prof in profs:
            k = max(prof.upper)
            prof.upper[k] = dataclasses.replace(prof.upper[k], error=prof.upper[k].error / 2 - 1e-3)
        return profs

    monkeypatch.setattr(Engine, "profile_batch", overclaiming)
    checks = reverify_rows(rows.iloc[[0, -1]])
    assert not checks["witnesses_verified"].any() and not checks["passed"].any()
    assert checks["matrix_match"].all()
    assert all("witnesses fail: upper rank" in line for line in checks["line"])


def test_the_engine_reruns_the_stored_profiles_batch(rows, monkeypatch):
    """A profile depends on the batch of temperatures it was searched in, its eps grid and
    effort: the re-derivation repeats the row's, from scratch, with the row's engine."""
    from analysis.brackets.engine import Engine

    calls = []
    real_batch = Engine.profile_batch

    def spy(self, matrices, temperatures, **kwargs):
        calls.append((self.number, list(temperatures), kwargs))
        return real_batch(self, matrices, temperatures, **kwargs)

    monkeypatch.setattr(Engine, "profile_batch", spy)
    row = rows.iloc[0]
    assert reverify_rows(rows.iloc[[0]])["passed"].all()
    [(version, temps, kwargs)] = calls
    assert version == row["engine_version"]
    assert temps == json.loads(row["search_temperatures"]) == [1.0, 2.0]
    assert list(kwargs["eps"]) == json.loads(row["profile_eps"])
    assert kwargs["effort"] == row["effort"] == "fast"
    assert kwargs["previous"] == [None, None]
