"""No empty progress bars (issue 53, item 7): a store with nothing stored yet draws no
"re-verify (default): 0profile" bar; a run with nothing to do draws no profiles bar."""

from __future__ import annotations

from analysis.store import RunSpec, Store, run_brackets


def test_no_bar_for_nothing_to_reverify(filled_store, engine, capsys):
    run_brackets(filled_store, (0.1,), engine=engine, run=RunSpec(progress=True))
    err = capsys.readouterr().err
    assert "re-verify" not in err  # nothing stored before this run
    assert "profiles (default)" in err  # the bar of the work that was done stays


def test_no_bar_for_an_empty_store(tmp_path, engine, capsys):
    with Store(tmp_path / "empty", create=True) as store:
        run_brackets(store, (0.1,), engine=engine, run=RunSpec(progress=True))
    assert capsys.readouterr().err == ""
