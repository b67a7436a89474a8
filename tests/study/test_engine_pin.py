"""A study profiles with, and reads, the engine its design pins: never another's."""

from __future__ import annotations

import sqlite3

import pytest

import analysis.brackets.versions as versions
from analysis.brackets.engine import engine_for
from analysis.datasets import open_example_study
from analysis.store import RunSpec, Store, run_brackets
from analysis.study.results import bracket_table, cells_engine
from analysis.study.stages import bracket_stage, synthetic_stage
from analysis.validation import ParameterError


def test_the_study_profiles_and_reads_its_pinned_engine_only(tmp_path, monkeypatch):
    monkeypatch.setattr(versions, "ENGINE_VERSIONS", (4, 5))
    monkeypatch.setattr(versions, "LATEST_ENGINE", 5)
    monkeypatch.chdir(tmp_path)
    study = open_example_study("studies/pinned.toml", synthetic=True)  # new: the newest
    assert study.engine == 5 and study.lock.record["engine"] == 5
    plan, kw = study.plan, {"run": RunSpec(progress=False)}
    with Store(study.paths.store, create=True) as store:
        keys = synthetic_stage(study, store)
        with pytest.raises(ParameterError) as info:  # the package's engine 4: refused
            bracket_stage(study, store, [], keys, engine=engine_for(4), **kw)
        assert info.value.name == "engine" and info.value.got == 4
        assert store.engines() == []
        assert bracket_stage(study, store, [], keys, engine=None, **kw) == len(keys)
        assert store.engines() == ["analysis.brackets 5"]
        # engine 4's profiles of the same matrices (`attnrank store bracket --engine 4`)
        run_brackets(
            store,
            plan.eps,
            engine=engine_for(4),
            effort=plan.effort,
            matrix_keys=keys,
            run=RunSpec(progress=False),
        )
        assert store.engines() == ["analysis.brackets 4", "analysis.brackets 5"]
    # mark engine 4's brackets, so that a read of them (or of a mix) shows
    con = sqlite3.connect(study.paths.store / Store.INDEX)
    with con:
        con.execute(
            "UPDATE brackets SET lo = 99, hi = 99 WHERE profile_id IN "
            "(SELECT id FROM profiles WHERE engine = 'analysis.brackets 4')"
        )
    con.close()
    with Store(study.paths.store) as store:
        label = cells_engine(study)
        assert label == "analysis.brackets 5"
        table = bracket_table(store, plan, [], keys, study.design.held_out, label)
        assert len(table) == len(keys) * len(plan.eps)
        assert not (table[["lo", "hi"]] == 99).any().any()
        with pytest.raises(ParameterError, match="^engine: .*analysis.brackets 4, analysis"):
            bracket_table(store, plan, [], keys, study.design.held_out)
        again = bracket_stage(study, store, [], keys, engine=None, **kw)
        assert again == 0  # its own profiles stored: nothing recomputed, engine 4's untouched
        assert (store.cells(engine=4)[["lo", "hi"]] == 99).all().all()


def test_a_design_pinning_an_engine_the_package_lacks_does_not_run(tmp_path, monkeypatch):
    from analysis.datasets import write_example_design
    from analysis.prereg import load_design, lock_design
    from analysis.study import StudyOptions, run_study
    from analysis.study.core import block_facts

    monkeypatch.chdir(tmp_path)
    path = write_example_design("studies/seven.toml")
    path.write_text("engine = 7\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
    lock_design(path, **block_facts(load_design(path)))  # no engines given: recorded as written
    with pytest.raises(ParameterError) as info:
        run_study(path, say=lambda _: None, options=StudyOptions(progress=False))
    assert info.value.name == "engine" and info.value.got == 7
    assert "one of the engine versions" in str(info.value)
    assert not (tmp_path / "data").exists()  # refused before any work


def test_a_design_pins_a_non_default_engine_by_writing_it(tmp_path, monkeypatch):
    """A version newer than the released default (engine 6 beside LATEST 5) is offered to a
    design that writes it; a design without the key still pins the default."""
    from analysis.prereg import load_design, lock_design
    from analysis.study.core import block_facts, engine_versions

    monkeypatch.setattr(versions, "ENGINE_VERSIONS", (4, 5, 6))
    monkeypatch.setattr(versions, "LATEST_ENGINE", 5)
    assert engine_versions() == (4, 6, 5)
    monkeypatch.chdir(tmp_path)
    study = open_example_study("studies/default.toml", synthetic=True)
    assert study.engine == 5 and study.lock.record["engine"] == 5
    path = tmp_path / "studies" / "six.toml"
    text = (tmp_path / "studies" / "default.toml").read_text(encoding="utf-8")
    path.write_text("engine = 6\n" + text, encoding="utf-8")
    record = lock_design(path, engines=engine_versions(), **block_facts(load_design(path)))
    assert record["engine"] == 6
    bad = tmp_path / "studies" / "seven.toml"
    bad.write_text("engine = 7\n" + text, encoding="utf-8")
    with pytest.raises(
        ParameterError, match=r"^engine: expected one of the engine versions 4, 5, 6, got 7"
    ):
        lock_design(bad, engines=engine_versions(), **block_facts(load_design(bad)))
