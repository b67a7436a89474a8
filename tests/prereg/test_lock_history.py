"""The lock freezes what decides the answer (issue 38, item 5).

- ``code_sha256``: a hash of the analysis code, recorded by every lock; a drifted code
  hash is caught (``code_drift`` and ``attnrank prereg check``), and ``amend --code``
  re-records it;
- ``first_locked_at`` and ``history`` survive amendments; a lock made before the fields
  reads the earliest time it records;
- an amendment of ``descriptors``, ``sampling``, ``hypotheses`` or the engine once
  outcomes exist makes the confirmatory hypotheses exploratory.
"""

from __future__ import annotations

import itertools
import json
import shutil
import time
from pathlib import Path

import pytest

import analysis
from analysis.cli import main
from analysis.datasets import write_example_design
from analysis.prereg.amend import amend_design
from analysis.prereg.code_hash import CODE_PATHS, code_drift, code_files, code_sha256
from analysis.prereg.lock import lock_design, lock_path
from analysis.prereg.lock_history import (
    exploratory_hypotheses,
    first_locked_at,
    post_outcome_amendments,
)

PACKAGE_PARENT = Path(analysis.__file__).resolve().parents[1]
OUTCOMES = {"time": "2026-01-01T00:00:00+00:00", "lock_sha256": "a" * 64, "store": "s"}


def _copy_code(dest: Path) -> Path:
    for rel, _ in code_files():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PACKAGE_PARENT / rel, target)
    return dest


def test_code_hash_covers_the_listed_code_and_nothing_else(tmp_path):
    files = dict(code_files())
    assert all(any(f == p or f.startswith(p + "/") for p in CODE_PATHS) for f in files)
    assert "analysis/compare/nested.py" in files and "analysis/descriptors/native.py" in files
    assert not any(f.endswith(".pyc") or "__pycache__" in f for f in files)
    copy = _copy_code(tmp_path / "copy")
    assert code_sha256(copy) == code_sha256()  # independent of where it is checked out
    # a compiled file and a file outside the list change nothing
    (copy / "analysis/compare/__pycache__").mkdir(exist_ok=True)
    (copy / "analysis/compare/__pycache__/nested.cpython-311.pyc").write_bytes(b"\0")
    (copy / "analysis/report").mkdir(parents=True, exist_ok=True)
    (copy / "analysis/report/markdown.py").write_text("x = 1\n")
    assert code_sha256(copy) == code_sha256()
    # line endings do not matter
    f = copy / "analysis/brackets/upper.py"
    f.write_bytes(f.read_bytes().replace(b"\n", b"\r\n"))
    assert code_sha256(copy) == code_sha256()


@pytest.mark.parametrize(
    "rel",
    [
        "analysis/brackets/upper.py",
        "analysis/descriptors/baseline.py",
        "analysis/compare/bootstrap.py",
        "analysis/store/run.py",
        "analysis/study/comparison.py",
    ],
)
def test_a_drifted_code_hash_is_caught(tmp_path, rel):
    copy = _copy_code(tmp_path / "copy")
    f = copy / rel
    f.write_text(f.read_text(encoding="utf-8").replace("1", "2", 1), encoding="utf-8")
    drifted = code_sha256(copy)
    assert drifted != code_sha256()
    record = {"design": "d.toml", "code_sha256": code_sha256()}
    msg = code_drift(record, drifted)
    assert msg is not None and code_sha256()[:12] in msg and drifted[:12] in msg
    assert code_drift(record) is None
    # a renamed file (same bytes) is another code set too
    g = copy / rel
    g.rename(g.with_name("renamed_" + g.name))
    assert code_sha256(copy) not in (code_sha256(), drifted)


def test_lock_records_the_code_and_check_warns_when_it_drifts(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    path = write_example_design("coded.toml")
    assert main(["prereg", "lock", str(path)]) == 0  # with the blocks' facts, as users do
    record = json.loads(lock_path(path).read_text(encoding="utf-8"))
    assert record["code_sha256"] == code_sha256()
    assert record["code_paths"] == list(CODE_PATHS)
    assert main(["prereg", "check", str(path)]) == 0
    assert "warning" not in capsys.readouterr().err
    # the lock as if the code had changed since (code_sha256 is outside the lock hash)
    stale = {**record, "code_sha256": "0" * 64}
    lock_path(path).write_text(json.dumps(stale), encoding="utf-8")
    assert main(["prereg", "check", str(path)]) == 0  # a warning, not a refusal
    err = " ".join(capsys.readouterr().err.split())
    assert "warning:" in err and "000000000000" in err and code_sha256()[:12] in err
    # amend --code re-records it, as an amendment of its own
    new = amend_design(path, reason="reviewed the code change", code=True)
    assert new["code_sha256"] == code_sha256()
    entry = new["amendments"][-1]
    assert entry["previous_code_sha256"] == "0" * 64
    assert entry["new_code_sha256"] == code_sha256()
    assert any(c.startswith("code_sha256 000000000000 -> ") for c in entry["changes"])
    assert main(["prereg", "check", str(path)]) == 0
    assert "warning" not in capsys.readouterr().err


def test_an_amendment_without_code_keeps_the_locked_code_hash(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write_example_design("kept.toml")
    record = lock_design(path)
    lock_path(path).write_text(json.dumps({**record, "code_sha256": "0" * 64}), encoding="utf-8")
    write_example_design(path, eps=(0.2,))
    new = amend_design(path, reason="finer eps")
    assert new["code_sha256"] == "0" * 64  # a code change is never accepted silently


def test_first_locked_at_survives_amendments(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write_example_design("first.toml")
    first = lock_design(path)
    assert first["first_locked_at"] == first["locked_at"]
    assert [e["event"] for e in first["history"]] == ["lock"]
    time.sleep(1.1)  # times are recorded to the second: the amendments come later
    write_example_design(path, eps=(0.2,))
    second = amend_design(path, reason="finer eps")
    write_example_design(path, eps=(0.3,))
    third = amend_design(path, reason="coarser eps", outcomes=OUTCOMES)
    assert third["first_locked_at"] == second["first_locked_at"] == first["locked_at"]
    assert third["relocked_at"] != first["locked_at"]  # the amendments are later
    assert [e["event"] for e in third["history"]] == ["lock", "amendment 1", "amendment 2"]
    assert [e["lock_sha256"] for e in third["history"]] == [
        first["lock_sha256"],
        second["lock_sha256"],
        third["lock_sha256"],
    ]


def test_a_legacy_lock_reads_the_earliest_time_it_records(tmp_path, monkeypatch):
    """A lock made before the fields, whose locked_at a re-lock moved (as MiniLM's)."""
    monkeypatch.chdir(tmp_path)
    path = write_example_design("legacy.toml")
    record = lock_design(path)
    for key in ("first_locked_at", "history", "code_sha256", "code_paths"):
        del record[key]
    record["locked_at"] = "2026-12-05T00:47:19+00:00"
    record["amendments"] = [
        {
            "time": "2026-12-03T12:34:16+00:00",
            "previous_lock_sha256": "l0",
            "new_lock_sha256": record["lock_sha256"],
        }
    ]
    lock_path(path).write_text(json.dumps(record), encoding="utf-8")
    assert first_locked_at(record) == "2026-12-03T12:34:16+00:00"
    write_example_design(path, eps=(0.2,))
    new = amend_design(path, reason="finer eps")
    assert new["first_locked_at"] == "2026-12-03T12:34:16+00:00"
    assert new["locked_at"] == "2026-12-05T00:47:19+00:00"
    assert "code_sha256" not in new  # stays unknown until amend --code
    assert [e["event"] for e in new["history"]][1:] == ["amendment 1", "amendment 2"]
    assert new["history"][0]["time"] == "2026-12-03T12:34:16+00:00"


@pytest.mark.parametrize(
    ("edit", "section"),
    [({"eps": (0.2,)}, "sampling"), ({"temperatures": (0.5, 1.0)}, "sampling")],
)
def test_a_sampling_amendment_after_outcomes_makes_hypotheses_exploratory(
    tmp_path, monkeypatch, edit, section
):
    monkeypatch.chdir(tmp_path)
    path = write_example_design("late.toml")
    lock_design(path)
    write_example_design(path, **edit)
    before = amend_design(path, reason="before any outcome")
    hyps = [
        {"id": "H1", "kind": "confirmatory"},
        {"id": "S1", "kind": "sensitivity"},
        {"id": "E1", "kind": "exploratory"},
    ]
    assert exploratory_hypotheses(before, hyps) == {}
    write_example_design(path, eps=(0.4,))
    after = amend_design(path, reason="after outcomes", outcomes=OUTCOMES)
    assert post_outcome_amendments(after) == [
        {"amendment": 2, "time": after["amendments"][1]["time"], "sections": [section]}
    ]
    demoted = exploratory_hypotheses(after, hyps)
    assert list(demoted) == ["H1", "S1"] and "amendment 2" in demoted["H1"]


def test_an_amendment_of_an_inert_section_after_outcomes_keeps_hypotheses(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write_example_design("inert.toml")
    lock_design(path)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('title = "toy"', 'title = "toy study"'), encoding="utf-8")
    rec = amend_design(path, reason="a better title", outcomes=OUTCOMES)
    assert rec["amendments"][0]["sections"] == ["title"]
    assert exploratory_hypotheses(rec, [{"id": "H1", "kind": "confirmatory"}]) == {}


SHIPPED = PACKAGE_PARENT / "preregistration"


@pytest.mark.parametrize("name", ["offline-minilm", "offline-families", "paper-checkpoints"])
def test_every_shipped_lock_records_engine_code_and_first_lock_time(name):
    """Recorded through ``attnrank prereg amend --code`` (never by hand): the lock hash
    and held-out list are those of the amendment before, the code hash is outside it.
    The code hash is not compared with the code now: it drifts with every merge, and
    that drift is a warning (re-recorded with ``amend --code``)."""
    rec = json.loads((SHIPPED / f"{name}.toml.lock").read_text(encoding="utf-8"))
    assert rec["engine"] == 4
    assert len(rec["code_sha256"]) == 64 and rec["code_paths"] == list(CODE_PATHS)
    assert rec["first_locked_at"] == first_locked_at({**rec, "first_locked_at": None})
    # the code hash came in by amendments (the first one recording it, later ones
    # re-recording it after merges), each leaving the held-out list alone and the lock
    # hash too unless it also re-locked a block's version (which the lock hash covers)
    coded = [a for a in rec["amendments"] if a.get("new_code_sha256")]
    assert coded and not coded[0]["previous_code_sha256"]
    assert all(a["previous_code_sha256"] for a in coded[1:])
    last = rec["amendments"][-1]
    assert last is coded[-1] and last["new_code_sha256"] == rec["code_sha256"]
    assert last["new_lock_sha256"] == rec["lock_sha256"]
    for before, after in itertools.pairwise(rec["amendments"]):
        if "new_lock_sha256" in before:  # recorded since the field exists
            assert after["previous_lock_sha256"] == before["new_lock_sha256"]
    for a in coded:
        assert a["previous_held_out_sha256"] == a["new_held_out_sha256"]
        assert not a["sections"]
        if not a.get("blocks"):
            assert a["previous_lock_sha256"] == a["new_lock_sha256"]
    assert rec["history"][-1]["event"] == f"amendment {len(rec['amendments'])}"


def test_the_minilm_report_calls_its_hypotheses_exploratory():
    """Amendments 4 (descriptors) and 5 (sampling) of the shipped MiniLM design were made
    after outcomes existed: every preregistered hypothesis is reported exploratory."""
    from analysis.prereg.design import load_design

    design = load_design(SHIPPED / "offline-minilm.toml")
    rec = json.loads((SHIPPED / "offline-minilm.toml.lock").read_text(encoding="utf-8"))
    late = post_outcome_amendments(rec)
    assert [(a["amendment"], a["sections"]) for a in late] == [
        (4, ["descriptors"]),
        (5, ["sampling"]),
    ]
    demoted = exploratory_hypotheses(rec, design.data["hypotheses"])
    assert sorted(demoted) == ["H1", "H2", "H3", "S1"]
    families = json.loads((SHIPPED / "offline-families.toml.lock").read_text(encoding="utf-8"))
    assert post_outcome_amendments(families) == []  # engine 4 -> 4 written out: no change
