"""Output paths are checked before any work, and a failed final write strands nothing.

``bracket --out``, ``describe --out / --features-out``, ``extract --out`` and
``approximants --out``: a folder, a path under a file, or a folder that cannot be written
is a one-line error naming the flag, before the input is read or anything computed. When
the final write of ``bracket --out`` or ``approximants --out`` fails anyway (a full disk),
the finished work is kept where a re-run, with any ``--out``, picks it up.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
import tempfile
import time

import pytest

import analysis.brackets.io as bio
import analysis.sources.extract  # noqa: F401  (loaded, so that it can be patched)
from analysis.cli import build_parser, main


def _no_work(monkeypatch):
    """Make every computing entry point fail the test if it is reached."""

    def boom(*a, **k):
        raise AssertionError("work started before the output path was checked")

    monkeypatch.setattr("analysis.cli.brackets.profile_file", boom)
    monkeypatch.setattr("analysis.cli.brackets.load_matrices", boom)
    monkeypatch.setattr("analysis.descriptors.describe.describe_file", boom)
    # the package exports a function of the module's name: patch the module itself
    monkeypatch.setattr(sys.modules["analysis.sources.extract"], "extract", boom)


def _read_only(monkeypatch, folder):
    """``folder`` refuses new files: chmod 555, and (root ignores modes) every create in it
    raising EACCES as the OS would for another user."""
    folder.mkdir(exist_ok=True)
    folder.chmod(0o555)
    real_mkstemp, real_open = tempfile.mkstemp, os.open

    def refuse(path):
        return os.path.realpath(os.path.dirname(os.fspath(path))) == os.path.realpath(folder)

    def mkstemp(*a, dir=None, **k):
        if dir is not None and os.path.realpath(dir) == os.path.realpath(folder):
            raise PermissionError(errno.EACCES, "Permission denied", str(dir))
        return real_mkstemp(*a, dir=dir, **k)

    def open_(path, flags, *a, **k):
        if flags & os.O_CREAT and refuse(path):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real_open(path, flags, *a, **k)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    monkeypatch.setattr(os, "open", open_)
    return folder


def _one_line_error(rc, err, flag):
    assert rc == 2, err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and f"{flag}: expected" in lines[0], err


def test_bracket_out_a_folder_fails_at_once(stack, tmp_path, capsys, monkeypatch):
    _no_work(monkeypatch)
    build_parser()  # the command's modules imported: what is timed is the command
    start = time.perf_counter()
    rc = main(["bracket", str(stack), "--eps", "0.1", "--quiet", "--out", str(tmp_path)])
    elapsed = time.perf_counter() - start
    _one_line_error(rc, capsys.readouterr().err, "--out")
    assert elapsed < 1.0
    assert not (tmp_path.parent / (tmp_path.name + ".partial")).exists()


def test_bracket_out_under_a_file_fails_at_once(stack, tmp_path, capsys, monkeypatch):
    _no_work(monkeypatch)
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    out = blocker / "out.json"
    rc = main(["bracket", str(stack), "--eps", "0.1", "--quiet", "--out", str(out)])
    _one_line_error(rc, capsys.readouterr().err, "--out")


def test_bracket_out_read_only_fails_at_once(stack, tmp_path, capsys, monkeypatch):
    ro = _read_only(monkeypatch, tmp_path / "ro")
    _no_work(monkeypatch)
    rc = main(["bracket", str(stack), "--eps", "0.1", "--quiet", "--out", str(ro / "o.json")])
    _one_line_error(rc, capsys.readouterr().err, "--out")


@pytest.mark.parametrize("flag", ["--out", "--features-out"])
@pytest.mark.parametrize("where", ["folder", "read-only"])
def test_describe_outputs_fail_at_once(extracts, tmp_path, capsys, monkeypatch, flag, where):
    target = tmp_path / "dir" if where == "folder" else _read_only(monkeypatch, tmp_path / "ro")
    target.mkdir(exist_ok=True)
    path = target if where == "folder" else target / "o.csv"
    _no_work(monkeypatch)
    outs = {"--out": str(tmp_path / "ok.csv"), "--features-out": str(tmp_path / "f.csv")}
    outs[flag] = str(path)
    argv = ["describe", str(extracts[0]), "--eps", "0.1", "--quiet"]
    rc = main([*argv, *[x for kv in outs.items() for x in kv]])
    _one_line_error(rc, capsys.readouterr().err, flag)


@pytest.mark.parametrize("where", ["folder", "read-only"])
def test_extract_out_fails_at_once(tmp_path, capsys, monkeypatch, where):
    if where == "folder":
        out = tmp_path
    else:
        out = _read_only(monkeypatch, tmp_path / "ro") / "x.npz"
    _no_work(monkeypatch)
    rc = main(["extract", "minilm", "--corpus-seed", "0", "--length", "8", "--out", str(out)])
    _one_line_error(rc, capsys.readouterr().err, "--out")


def test_approximants_out_a_folder_fails_at_once(stack, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(
        "analysis.cli.brackets.approximants_for_input",
        lambda *a, **k: pytest.fail("work started before the output path was checked"),
    )
    monkeypatch.setattr(
        "analysis.cli.brackets.load_matrices",
        lambda *a, **k: pytest.fail("the input was read before the output path was checked"),
    )
    build_parser()  # the command's modules imported: what is timed is the command
    start = time.perf_counter()
    rc = main(["approximants", str(stack), "--eps", "0.1", "--quiet", "--out", str(tmp_path)])
    elapsed = time.perf_counter() - start
    _one_line_error(rc, capsys.readouterr().err, "--out")
    assert elapsed < 1.0
    assert not (tmp_path.parent / (tmp_path.name + ".partial")).exists()


def test_approximants_failed_final_write_strands_nothing(stack, tmp_path, capsys, monkeypatch):
    import analysis.brackets.approximants as ap

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    argv = ["approximants", str(stack), "--eps", "0.1", "0.3", "--methods", "svd", "rows"]
    argv += ["--seed", "3", "--quiet"]
    good = tmp_path / "good.csv"
    assert main([*argv, "--out", str(good)]) == 0
    capsys.readouterr()

    def full_disk(path, *a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    with monkeypatch.context() as m:
        m.setattr("analysis.cli.brackets.atomic_write", full_disk)
        first = tmp_path / "first.csv"
        rc = main([*argv, "--out", str(first)])
    err = capsys.readouterr().err
    _one_line_error(rc, err, "--out")
    assert "re-run" in err and not first.exists()
    assert len(list((tmp_path / "tmp").rglob("approximants-*.jsonl"))) == 1

    calls = []
    real = ap.approximant_ranks
    monkeypatch.setattr(ap, "approximant_ranks", lambda *a, **k: calls.append(1) or real(*a, **k))
    other = tmp_path / "elsewhere" / "second.csv"
    assert main([*argv, "--out", str(other)]) == 0
    assert "resuming from the finished tables" in capsys.readouterr().err
    assert calls == []  # every table reused (re-certified), none computed again
    assert other.read_text() == good.read_text()
    assert not list((tmp_path / "tmp").rglob("*.jsonl"))  # the stash is gone once written
    assert not (tmp_path / "elsewhere" / "second.csv.partial").exists()


def test_a_failed_final_write_strands_nothing(stack, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    argv = ["bracket", str(stack), "--eps", "0.1", "0.2", "--witnesses", "--effort", "fast"]
    good = tmp_path / "good.json"
    assert main([*argv, "--quiet", "--out", str(good)]) == 0
    capsys.readouterr()

    def full_disk(self, path):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    with monkeypatch.context() as m:
        m.setattr(bio.ResultWriter, "write", full_disk)
        rc = main([*argv, "--quiet", "--out", str(tmp_path / "first.json")])
    err = capsys.readouterr().err
    _one_line_error(rc, err, "--out")
    assert "re-run" in err

    calls = []
    real = bio._block
    monkeypatch.setattr(bio, "_block", lambda args: calls.append(1) or real(args))
    other = tmp_path / "elsewhere" / "second.json"
    assert main([*argv, "--quiet", "--out", str(other)]) == 0
    assert calls == []  # every profile reused (re-verified), none searched again
    got, want = json.loads(other.read_text()), json.loads(good.read_text())
    for m, n in zip(got["matrices"], want["matrices"], strict=True):  # "seconds" may differ
        assert (m["brackets"], m["witnesses"]) == (n["brackets"], n["witnesses"])
    assert main(["verify", str(stack), str(other)]) == 0
    assert not list((tmp_path / "tmp").rglob("*.jsonl"))  # the stash is gone once written


def _special(tmp_path, kind):
    """A node of ``kind`` at tmp_path/out.json; None when it cannot be made here."""
    node = tmp_path / "out.json"
    if kind == "fifo":
        os.mkfifo(node)
    elif kind == "symlink":
        (tmp_path / "target.json").write_text("precious")
        node.symlink_to(tmp_path / "target.json")
    else:  # a character device: only root may make one (a copy of /dev/null's numbers)
        try:
            os.mknod(node, 0o600 | stat.S_IFCHR, os.stat("/dev/null").st_rdev)
        except (PermissionError, AttributeError):
            return None
    return node


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX special files")
@pytest.mark.parametrize("kind", ["fifo", "symlink", "device"])
@pytest.mark.parametrize("command", ["bracket", "approximants"])
def test_out_onto_a_special_node_is_refused(stack, tmp_path, capsys, monkeypatch, kind, command):
    node = _special(tmp_path, kind)
    if node is None:
        pytest.skip("making a device node needs root")
    before = os.lstat(node)
    rc = main([command, str(stack), "--eps", "0.1", "--quiet", "--out", str(node)])
    err = capsys.readouterr().err
    _one_line_error(rc, err, "--out")
    after = os.lstat(node)  # the very node, untouched: not replaced by a regular file
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    if kind == "symlink":
        assert "link" in err and (tmp_path / "target.json").read_text() == "precious"
    assert not (tmp_path / "out.json.partial").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX special files")
def test_atomic_write_never_replaces_a_fifo(tmp_path):
    from analysis.atomic import atomic_write

    node = tmp_path / "fifo"
    os.mkfifo(node)
    with pytest.raises(FileExistsError), atomic_write(node, mode="w") as fh:
        fh.write("x")
    assert stat.S_ISFIFO(os.lstat(node).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["fifo"]  # no temporary file left
