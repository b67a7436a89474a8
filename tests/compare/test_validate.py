"""validate-comparison: simulation shape, width handling, CLI JSON and refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.cli import main
from analysis.compare import StudySizes, load_widths, simulate_study, validate_comparison
from analysis.validation import ParameterError

ROOT = Path(__file__).resolve().parents[2]


def _widths(path: Path, eps=(0.05, 0.1, 0.2)) -> Path:
    rows = [(e, lo, lo * r) for e in eps for lo in (2, 3, 5) for r in (1, 2, 3)]
    pd.DataFrame(rows, columns=["eps", "lower", "upper"]).to_csv(path, index=False)
    return path


def test_load_widths(tmp_path):
    w = load_widths(_widths(tmp_path / "w.csv"))
    assert set(w.columns) == {"eps", "lower", "upper", "width"}
    assert w["width"].min() == 0 and np.isclose(w["width"].max(), np.log2(3))
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"eps": [0.1], "lower": [3], "upper": [2]}).to_csv(bad, index=False)
    with pytest.raises(ParameterError, match="widths"):
        load_widths(bad)
    with pytest.raises(FileNotFoundError, match="never invented"):
        load_widths(tmp_path / "missing.csv")


def test_simulated_study_shape(tmp_path):
    w = load_widths(_widths(tmp_path / "w.csv"))
    df = simulate_study(StudySizes(), w, effect=0.1, random_state=0)
    assert len(df) == 72 * 18
    assert df.groupby("cluster")["held_out"].nunique().max() == 1
    assert df.loc[df.held_out, "cluster"].nunique() == 18
    assert (df["y_lower"] <= df["y_upper"]).all()
    widths = np.round(df["y_upper"] - df["y_lower"], 9)
    assert set(widths) <= set(np.round(w["width"], 9))
    with pytest.raises(ParameterError, match="effect"):
        simulate_study(StudySizes(), w, effect=1.5)
    with pytest.raises(ParameterError, match="eps"):
        simulate_study(StudySizes(eps=(0.3,)), w, effect=0.1)


def test_validate_comparison_small(tmp_path):
    w = load_widths(_widths(tmp_path / "w.csv"))
    sizes = StudySizes(n_heads=24, n_held_out=8, n_boot=199)
    res = validate_comparison(w, simulations=3, sizes=sizes, random_state=0)
    d = res.to_dict()
    assert set(d) == {
        "false_positive_rate",
        "power",
        "simulations",
        "alpha",
        "effect",
        "icc",
        "design",
    }
    assert d["simulations"] == 3 and 0 <= d["false_positive_rate"] <= 1
    assert len(res.to_frame()) == 6
    again = validate_comparison(w, simulations=3, sizes=sizes, random_state=0)
    pd.testing.assert_frame_equal(res.to_frame(), again.to_frame())  # seeded
    with pytest.raises(ParameterError, match="simulations"):
        validate_comparison(w, simulations=0)


def test_cli_json_with_design(tmp_path, capsys):
    w = _widths(tmp_path / "w.csv")
    rc = main(
        [
            "validate-comparison",
            "--design",
            str(ROOT / "preregistration" / "offline-minilm.toml"),
            "--simulations",
            "1",
            "--seed",
            "3",
            "--json",
            "--widths",
            str(w),
        ]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["simulations"] == 1 and out["alpha"] == 0.05 and out["effect"] == 0.1
    assert out["icc"] == 0.5 and out["design"].endswith("offline-minilm.toml")


def test_cli_refuses_without_widths(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    rc = main(["validate-comparison", "--simulations", "1", "--seed", "0", "--json"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "minilm_bracket_widths.csv" in err and "never invented" in err
    assert main(["validate-comparison", "--simulations", "0", "--seed", "0", "--widths", "x"]) == 2
    assert "--simulations" in capsys.readouterr().err
    assert (
        main(
            [
                "validate-comparison",
                "--simulations",
                "1",
                "--seed",
                "0",
                "--effect",
                "2",
                "--widths",
                "x",
            ]
        )
        == 2
    )
    assert "--effect" in capsys.readouterr().err
