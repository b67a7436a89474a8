"""attnrank atlas build | verify: outputs checked before work, exit status 0 / 1 / 2."""

from __future__ import annotations

import pytest

from analysis.atlas import load_atlas, write_atlas
from analysis.cli import main
from tests.cli.test_main import listed_commands


def test_atlas_help_lists_build_and_verify(capsys):
    with pytest.raises(SystemExit) as info:
        main(["atlas", "--help"])
    assert info.value.code == 0
    assert listed_commands(capsys.readouterr().out) == ["build", "verify"]


def test_build_then_verify_rows_and_a_sample(described_study, tmp_path, capsys):
    out = tmp_path / "out" / "small.parquet"
    assert main(["atlas", "build", str(described_study), "--out", str(out), "--no-progress"]) == 0
    atlas = load_atlas(out)
    assert atlas.attrs["atlas"]["provenance"]["command"].startswith("attnrank ")
    assert set(atlas["source"]) == {"checkpoint"}  # synthetic cells only with --synthetic
    capsys.readouterr()
    assert main(["atlas", "verify", str(out), "--rows", "0", "3", "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("row 0: PASS") and lines[1].startswith("row 3: PASS")
    assert lines[-1] == "atlas verify: 2 of 2 rows pass"
    assert main(["atlas", "verify", str(out), "--sample", "2", "--seed", "1", "--no-progress"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "atlas verify: 2 of 2 rows pass"


def test_verify_exits_1_naming_each_failed_row(atlas, tmp_path, capsys):
    tampered = atlas.copy()
    tampered.loc[2, "lower"] = tampered.loc[2, "lower"] + 1
    path = write_atlas(tampered, tmp_path / "tampered.parquet")
    assert main(["atlas", "verify", str(path), "--rows", "1", "2", "--no-progress"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("row 1: PASS")
    assert out[1].startswith("row 2: FAIL") and atlas.loc[2, "cell_key"] in out[1]
    assert out[-1] == "atlas verify: 1 of 2 rows pass, 1 fail"


def test_bad_flags_exit_2_before_any_work(described_study, atlas, tmp_path, capsys):
    folder = tmp_path / "a-folder"
    folder.mkdir()
    assert main(["atlas", "build", str(described_study), "--out", str(folder)]) == 2
    assert "--out: expected a file path, not a folder" in capsys.readouterr().err
    path = write_atlas(atlas, tmp_path / "atlas.parquet")
    assert main(["atlas", "verify", str(path), "--rows", str(len(atlas))]) == 2
    assert f"--rows: expected row numbers in 0..{len(atlas) - 1}" in capsys.readouterr().err
    assert main(["atlas", "verify", str(path), "--sample", str(len(atlas) + 1)]) == 2
    assert "--sample: expected at most" in capsys.readouterr().err
    assert main(["atlas", "verify", str(tmp_path / "absent.parquet"), "--rows", "0"]) == 2
    assert "FILE.parquet: no such atlas file" in capsys.readouterr().err
