"""The stash of a failed final write is private to its user (issue 52, item 5).

It lives under the shared temporary folder at a name anyone can guess, so its folder is
made mode 0700 and checked (owner, mode, a real folder), and no link in it is followed: a
planted link is neither written through nor loaded on resume.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile

import pytest

from analysis.cli import main
from analysis.cli.outputs import stash_path, write_failed

pytestmark = pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes")


def _one_line(err: str, flag: str) -> None:
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and f"{flag}: expected" in lines[0], err


@pytest.fixture
def tmp(tmp_path, monkeypatch):
    base = tmp_path / "tmp"
    base.mkdir(mode=0o777)
    base.chmod(0o1777)  # a shared temporary folder, sticky as /tmp is
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    return base


def _fail_final_write(monkeypatch):
    import analysis.brackets.io as bio

    def full_disk(self, path):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(bio.ResultWriter, "write", full_disk)


ARGV = ["--eps", "0.1", "--effort", "fast", "--quiet"]


def test_the_stash_folder_is_private_to_its_user(stack, tmp, tmp_path, capsys, monkeypatch):
    with monkeypatch.context() as m:
        _fail_final_write(m)
        rc = main(["bracket", str(stack), *ARGV, "--out", str(tmp_path / "o.json")])
    assert rc == 2 and "re-run" in capsys.readouterr().err
    (stash,) = tmp.rglob("bracket-*.jsonl")
    st = os.lstat(stash.parent)
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700
    assert st.st_uid == os.getuid() and str(os.getuid()) in stash.parent.name
    assert stat.S_IMODE(os.lstat(stash).st_mode) & 0o077 == 0


@pytest.mark.parametrize("how", ["open to others", "another owner", "a link"])
def test_a_stash_folder_not_private_is_refused(stack, tmp, tmp_path, capsys, monkeypatch, how):
    folder = stash_path("bracket", "x").parent
    if how == "a link":
        (tmp_path / "theirs").mkdir(mode=0o700)
        folder.symlink_to(tmp_path / "theirs")
    else:
        folder.mkdir(mode=0o700)
        if how == "open to others":
            folder.chmod(0o777)
        elif os.getuid() == 0:
            os.chown(folder, 65534, 65534)
        else:
            pytest.skip("making a folder of another owner needs root")
    monkeypatch.setattr(
        "analysis.cli.brackets.profile_file",
        lambda *a, **k: pytest.fail("work started with a stash folder that is not private"),
    )
    rc = main(["bracket", str(stack), *ARGV, "--out", str(tmp_path / "o.json")])
    assert rc == 2
    _one_line(capsys.readouterr().err, "stash")


def test_a_planted_link_is_not_loaded_on_resume(stack, tmp, tmp_path, capsys, monkeypatch):
    with monkeypatch.context() as m:
        _fail_final_write(m)
        assert main(["bracket", str(stack), *ARGV, "--out", str(tmp_path / "o.json")]) == 2
    capsys.readouterr()
    (stash,) = tmp.rglob("bracket-*.jsonl")
    planted = tmp_path / "planted.jsonl"
    planted.write_text(stash.read_text())
    stash.unlink()
    stash.symlink_to(planted)
    rc = main(["bracket", str(stack), *ARGV, "--out", str(tmp_path / "again.json")])
    assert rc == 2
    _one_line(capsys.readouterr().err, "stash")
    assert not (tmp_path / "again.json.partial").exists()


def test_a_planted_link_is_not_written_through(tmp, tmp_path):
    stash = stash_path("bracket", "sha")
    stash.parent.mkdir(mode=0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    stash.symlink_to(victim)
    ck = tmp_path / "o.json.partial"
    ck.write_text('{"key": "k", "profile": {}}\n')
    exc = OSError(errno.ENOSPC, "No space left on device")
    err = write_failed("out", tmp_path / "o.json", exc, ck, stash)
    assert victim.read_text() == "precious"
    assert not stash.is_symlink() and stash.read_text() == ck.read_text()
    assert str(stash) in str(err)
