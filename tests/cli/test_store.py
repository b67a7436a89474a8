"""``attnrank store add`` / ``attnrank store bracket`` and their old spellings."""

from __future__ import annotations

import pytest

from analysis.cli import main
from analysis.store import Store

DEPRECATED = "is deprecated and will be removed in the next release"


def snapshot(path) -> dict:
    """What a store holds, independent of timing: matrices, cells and stored profiles."""
    with Store(path) as store:
        matrices = [(r.key, r.array_sha256) for r in store.matrices()]
        cells = store.cells().to_dict("records")
        profiles = {}
        for p in store.profiles():
            d = p.profile_dict()
            d["stats"].pop("seconds")  # wall-clock times of the search
            profiles[p.matrix_key, p.temperature, p.version] = (p.eps_grid, p.brackets, d)
    return {"matrices": matrices, "cells": cells, "profiles": profiles}


def test_store_add_and_bracket_equal_the_old_spellings(tmp_path, extracts, capsys):
    new, old = tmp_path / "new", tmp_path / "old"
    files = [str(p) for p in extracts]
    assert main(["store", "add", str(new), *files]) == 0
    out_new = capsys.readouterr()
    assert main(["store-add", str(old), *files]) == 0
    out_old = capsys.readouterr()
    assert out_new.out.replace(str(new), "S") == out_old.out.replace(str(old), "S")
    assert out_new.err == ""
    assert out_old.err.count("\n") == 1
    assert "`attnrank store-add` " + DEPRECATED in out_old.err
    assert "`attnrank store add`" in out_old.err

    bracket = ["--eps", "0.1", "0.2", "--temperatures", "1", "2", "--effort", "fast"]
    assert main(["store", "bracket", str(new), *bracket, "--quiet"]) == 0
    out_new = capsys.readouterr()
    assert main(["brackets", str(old), *bracket, "--no-progress"]) == 0
    out_old = capsys.readouterr()
    assert "8 computed" in out_new.out and "8 computed" in out_old.out
    assert out_new.err == ""
    assert out_old.err.count("\n") == 1 and "`attnrank brackets` " + DEPRECATED in out_old.err
    assert snapshot(new) == snapshot(old)


def test_store_bracket_resumes(synthetic_store, capsys):
    s, fast = str(synthetic_store), ["--effort", "fast", "--quiet"]
    assert main(["store", "bracket", s, "--eps", "0.1", "0.2", *fast]) == 0
    assert "3 computed" in capsys.readouterr().out
    assert main(["store", "bracket", s, "--eps", "0.1", "--temperatures", "0.5", "1", *fast]) == 0
    assert "3 computed, 0 extended, 3 already stored" in capsys.readouterr().out


def test_store_bracket_recomputes_and_reports_a_tampered_profile(synthetic_store, capsys):
    from tests.fixtures.tamper import edit_store_profile, set_margin

    s, fast = str(synthetic_store), ["--eps", "0.1", "--effort", "fast", "--quiet"]
    assert main(["store", "bracket", s, *fast]) == 0
    assert "re-verification" not in capsys.readouterr().out
    before = snapshot(synthetic_store)
    with Store(synthetic_store) as store:
        p = next(store.profiles())
    lo = p.brackets[0.1][0]
    edit_store_profile(s, p.matrix_key, 1.0, "fast", lambda d: set_margin(d, lo, 0.9))
    assert main(["store", "bracket", s, *fast]) == 0
    out = capsys.readouterr().out
    assert "1 computed, 0 extended, 2 already stored" in out
    assert "1 stored profile failed re-verification and was recomputed" in out
    after = snapshot(synthetic_store)
    assert after["cells"] == before["cells"]
    assert {k: v[2] for k, v in after["profiles"].items()} == {
        k: v[2] for k, v in before["profiles"].items()
    }


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--eps", "nan"], "--eps"),
        (["--eps", "0.1", "--temperatures", "0"], "--temperatures"),
        (["--eps", "0.1", "--workers", "0"], "--workers"),
    ],
)
@pytest.mark.parametrize("command", [["store", "bracket"], ["brackets"]])
def test_store_bracket_errors_name_the_flag(synthetic_store, command, argv, flag, capsys):
    assert main([*command, str(synthetic_store), *argv, "--quiet"]) == 2
    assert f"error: {flag}:" in capsys.readouterr().err


def test_missing_store_and_version_clash_name_the_flag(synthetic_store, tmp_path, capsys):
    assert main(["store", "bracket", str(tmp_path / "missing"), "--eps", "0.1"]) == 2
    assert "error: STORE: no store at" in capsys.readouterr().err
    s = str(synthetic_store)
    base = ["store", "bracket", s, "--eps", "0.1", "--quiet", "--profile-version", "v1"]
    assert main([*base, "--effort", "fast"]) == 0
    capsys.readouterr()
    assert main([*base, "--effort", "thorough"]) == 2
    assert "error: --profile-version:" in capsys.readouterr().err
