"""Issue 52, item 10 (its design-folder part): a design whose folder cannot be written
is one line naming the folder, not a traceback."""

from __future__ import annotations

import os
import pathlib

import pytest

from analysis.cli import main
from analysis.datasets import write_example_design
from analysis.prereg.lock import lock_design, lock_path


@pytest.fixture
def read_only(tmp_path, monkeypatch):
    """A folder this user cannot write: its mode 0555, and (as root, which the mode does
    not stop) every write into it refused as the file system would refuse it."""
    folder = tmp_path / "designs"
    folder.mkdir()

    def make_read_only():
        folder.chmod(0o555)
        if os.geteuid() == 0:
            real_open = os.open

            def refuse(path, flags, *args, **kwargs):
                p = pathlib.Path(os.fsdecode(path)).resolve()
                if p.parent == folder.resolve() and flags & (os.O_WRONLY | os.O_RDWR):
                    raise PermissionError(13, "Permission denied", str(p))
                return real_open(path, flags, *args, **kwargs)

            monkeypatch.setattr(os, "open", refuse)
            real_io_open = pathlib.Path.open

            def refuse_path(self, mode="r", *args, **kwargs):
                if self.resolve().parent == folder.resolve() and set(mode) & set("wax+"):
                    raise PermissionError(13, "Permission denied", str(self.resolve()))
                return real_io_open(self, mode, *args, **kwargs)

            monkeypatch.setattr(pathlib.Path, "open", refuse_path)

    yield folder, make_read_only
    folder.chmod(0o755)


@pytest.mark.parametrize("command", ["draw", "lock", "amend"])
def test_an_unwritable_design_folder_is_one_line(read_only, capsys, monkeypatch, command):
    folder, make_read_only = read_only
    monkeypatch.chdir(folder.parent)
    kwargs = {"held_out": None} if command == "draw" else {}
    design = write_example_design(folder / "d.toml", **kwargs)
    if command == "amend":
        lock_design(design)
        write_example_design(design, eps=(0.2,))
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    make_read_only()
    argv = ["prereg", command, str(design)] + (["--reason", "r"] if command == "amend" else [])
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "a design in a folder this user can write" in err
    assert str(folder.resolve()) in err and "Permission denied" in err
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert not lock_path(design).exists() or command == "amend"
