"""``--engine N`` on ``attnrank bracket`` and ``attnrank store bracket``: the engine version
is a value; profiles of two versions are kept apart in a store, never mixed."""

from __future__ import annotations

import json

import pytest

import analysis.brackets.versions as versions
from analysis.cli import main
from analysis.store import Store


@pytest.fixture
def two_engines(monkeypatch):
    """The package as if it had engines 4 and 5 (5 the newest). Engine 5's search is not
    in this checkout yet; the versions are values here, what is tested is that each
    reaches the search and the store as itself."""
    monkeypatch.setattr(versions, "ENGINE_VERSIONS", (4, 5))
    monkeypatch.setattr(versions, "LATEST_ENGINE", 5)


def _search_engines(monkeypatch) -> list:
    """Record the ``engine=`` every profile_matrices call of ``attnrank bracket`` gets."""
    import analysis.brackets.io as io

    seen = []
    real = io.profile_matrices

    def spy(*args, **kwargs):
        seen.append(kwargs.get("engine"))
        return real(*args, **kwargs)

    monkeypatch.setattr(io, "profile_matrices", spy)
    return seen


def test_bracket_json_records_the_engine_and_verify_needs_none(stack, tmp_path, monkeypatch):
    seen = _search_engines(monkeypatch)
    out = tmp_path / "r.json"
    args = ["bracket", str(stack), "--eps", "0.2", "--effort", "fast", "--quiet"]
    assert main([*args, "--witnesses", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    keys = ["input_sha256", "temperature", "renormalized", "effort", "engine", "matrices"]
    assert list(res) == keys and res["engine"] == versions.LATEST_ENGINE
    assert seen and set(seen) == {versions.LATEST_ENGINE}
    del res["engine"]  # verify reads no engine: a result without the key re-checks as well
    out.write_text(json.dumps(res))
    assert main(["verify", str(stack), str(out)]) == 0


def test_bracket_engine_flag_reaches_the_search(stack, tmp_path, monkeypatch, two_engines):
    seen = _search_engines(monkeypatch)
    out = tmp_path / "r4.json"
    args = ["bracket", str(stack), "--eps", "0.2", "--effort", "fast", "--quiet"]
    assert main([*args, "--engine", "4", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["engine"] == 4 and set(seen) == {4}
    seen.clear()
    assert main([*args, "--out", str(out)]) == 0  # default: the newest
    assert json.loads(out.read_text())["engine"] == 5 and set(seen) == {5}


@pytest.mark.parametrize("command", [["bracket", "STACK", "--eps", "0.2"], ["store", "bracket"]])
@pytest.mark.parametrize("bad", ["3", "four", "4.0"])
def test_an_unknown_engine_is_an_error_naming_engine(command, bad, stack, synthetic_store, capsys):
    argv = [str(stack) if a == "STACK" else a for a in command]
    if command[0] == "store":
        argv += [str(synthetic_store), "--eps", "0.2"]
    assert main([*argv, "--engine", bad, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--engine: expected one of the engine versions 4" in err and repr(bad) in err


def test_store_bracket_keeps_each_engines_profiles_apart(synthetic_store, capsys, two_engines):
    s, fast = str(synthetic_store), ["--eps", "0.2", "--effort", "fast", "--quiet"]
    assert main(["store", "bracket", s, *fast, "--engine", "4"]) == 0
    assert "engine 4): 3 computed" in capsys.readouterr().out
    with Store(s) as store:
        four = {(p.matrix_key, p.revision, p.blob) for p in store.profiles()}
    assert main(["brackets", s, *fast]) == 0  # the old spelling; default engine: the newest
    out = capsys.readouterr().out
    assert "engine 5): 3 computed" in out
    assert "3 stored profiles of another engine version were left as they are" in out
    with Store(s) as store:
        assert store.engines() == ["analysis.brackets 4", "analysis.brackets 5"]
        assert {(p.matrix_key, p.revision, p.blob) for p in store.profiles(engine=4)} == four
        assert len(store.cells(engine=5)) == 3
        with pytest.raises(Exception, match="^engine: .*analysis.brackets 4, analysis.brackets 5"):
            store.cells()
    assert main(["store", "bracket", s, *fast, "--engine", "4"]) == 0
    assert "0 computed, 0 extended, 3 already stored" in capsys.readouterr().out


def test_prereg_lock_pins_the_newest_and_amend_takes_numbers(tmp_path, capsys, two_engines):
    from analysis.datasets import write_example_design
    from analysis.prereg.lock import lock_path

    root = tmp_path / "study"
    path = write_example_design(root / "preregistration" / "toy.toml")
    assert main(["prereg", "lock", str(path)]) == 0
    assert "engine:          5" in capsys.readouterr().out
    assert json.loads(lock_path(path).read_text())["engine"] == 5
    path.write_text("engine = 4\n" + path.read_text())
    assert main(["prereg", "check", str(path)]) == 1
    assert "engine changed: 5 -> 4" in capsys.readouterr().err
    amend = ["prereg", "amend", str(path), "--reason", "back to 4"]
    assert main([*amend, "--numbers", "median=2.0"]) == 2
    assert "--numbers: expected NAME=BEFORE:AFTER" in capsys.readouterr().err
    assert main([*amend, "--numbers", "median hi/lo=2.05:2.57"]) == 0
    assert "engine: 5 -> 4" in capsys.readouterr().out
    entry = json.loads(lock_path(path).read_text())["amendments"][-1]
    assert entry["numbers"] == {"median hi/lo": {"before": 2.05, "after": 2.57}}
    assert main(["prereg", "check", str(path)]) == 0
    path.write_text(path.read_text().replace("engine = 4", "engine = 7"))
    assert main(["prereg", "check", str(path)]) == 2
    assert "engine: expected one of the engine versions 4, 5, got 7" in capsys.readouterr().err
