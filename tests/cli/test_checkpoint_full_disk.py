"""A checkpoint write that fails (a full disk) keeps what was computed (issue 52, item 4).

The run goes on with one line on stderr; lines that cannot reach ``OUT.partial`` go to the
run's private stash (or stay in memory until they can be written), and a re-run resumes
from them instead of computing everything again.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile

import pytest

import analysis.brackets.io as bio
from analysis.atomic import JsonlCheckpoint
from analysis.cli import main

pytestmark = pytest.mark.skipif(
    not os.path.isdir("/proc/self/fd"), reason="names an open file by /proc/self/fd"
)


def _full_disk_for(monkeypatch, suffix):
    """``fsync`` of any file whose name ends in ``suffix`` fails with ENOSPC."""
    real = os.fsync

    def fsync(fd):
        if os.readlink(f"/proc/self/fd/{fd}").endswith(suffix):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


@pytest.fixture
def tmp(tmp_path, monkeypatch):
    base = tmp_path / "tmp"
    base.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    return base


ARGV = ["--eps", "0.1", "0.2", "--witnesses", "--effort", "fast", "--quiet"]


def _brackets(path):
    return [(m["brackets"], m["witnesses"]) for m in json.loads(path.read_text())["matrices"]]


def test_a_failing_checkpoint_does_not_stop_the_run(stack, tmp, tmp_path, capsys, monkeypatch):
    good = tmp_path / "good.json"
    assert main(["bracket", str(stack), *ARGV, "--out", str(good)]) == 0
    capsys.readouterr()
    out = tmp_path / "out.json"
    with monkeypatch.context() as m:
        _full_disk_for(m, ".partial")
        rc = main(["bracket", str(stack), *ARGV, "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "Traceback" not in err
    notes = [ln for ln in err.splitlines() if "cannot write the checkpoint" in ln]
    assert len(notes) == 1 and "No space left on device" in notes[0], err
    assert _brackets(out) == _brackets(good)


def test_a_full_disk_run_resumes(stack, tmp, tmp_path, capsys, monkeypatch):
    good = tmp_path / "good.json"
    assert main(["bracket", str(stack), *ARGV, "--out", str(good)]) == 0
    capsys.readouterr()

    def full_disk(self, path):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    with monkeypatch.context() as m:
        _full_disk_for(m, ".partial")
        m.setattr(bio.ResultWriter, "write", full_disk)
        rc = main(["bracket", str(stack), *ARGV, "--out", str(tmp_path / "first.json")])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err, err
    assert "--out: expected" in err.splitlines()[-1] and "re-run" in err

    calls = []
    real = bio._block
    monkeypatch.setattr(bio, "_block", lambda args: calls.append(1) or real(args))
    other = tmp_path / "elsewhere" / "second.json"
    assert main(["bracket", str(stack), *ARGV, "--out", str(other)]) == 0
    assert calls == []  # every profile reused (re-verified), none searched again
    assert _brackets(other) == _brackets(good)


def test_approximants_survive_a_failing_checkpoint(stack, tmp, tmp_path, capsys, monkeypatch):
    argv = ["approximants", str(stack), "--eps", "0.1", "--methods", "svd", "rows", "--quiet"]
    good = tmp_path / "good.csv"
    assert main([*argv, "--out", str(good)]) == 0
    out = tmp_path / "out.csv"
    with monkeypatch.context() as m:
        _full_disk_for(m, ".partial")
        rc = main([*argv, "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 0 and "Traceback" not in err, err
    assert out.read_text() == good.read_text()


def test_unsaved_records_are_written_once_the_disk_has_room(tmp_path, monkeypatch):
    real, fails = os.fsync, [2]

    def fsync(fd):
        if fails[0]:
            fails[0] -= 1
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd)

    said = []
    ck = JsonlCheckpoint(tmp_path / "ck.jsonl", say=said.append)
    with monkeypatch.context() as m:
        m.setattr(os, "fsync", fsync)
        with ck.appender() as append:
            for k in "abc":
                append({"key": k, "value": k.upper()})
    assert len(said) == 1 and "No space left on device" in said[0]
    again = JsonlCheckpoint(tmp_path / "ck.jsonl").read()
    assert {k: r["value"] for k, r in again.items()} == {"a": "A", "b": "B", "c": "C"}
