"""``attnrank describe``: bad options and inputs are reported under their flags."""

from __future__ import annotations

import pytest

from analysis.cli import main
from analysis.descriptors.describe import describe_file
from analysis.validation import ParameterError


@pytest.mark.parametrize(
    "argv, name",
    [
        (["--eps", "-0.1"], "--eps"),
        (["--eps", "nan"], "--eps"),
        (["--eps", "0.1", "--temperatures", "0"], "--temperatures"),
        (["--eps", "0.1", "--blocks", "nope"], "--blocks"),
        (["--eps", "0.1", "--plugin", "no_such_module_xyz"], "--plugin"),
        (["--eps", "0.1", "--threads", "0"], "--threads"),
        (["--eps", "0.1", "--block-version", "native=3"], "--block-version"),
        (["--eps", "0.1", "--block-version", "sinks=1"], "--block-version"),
    ],
)
def test_bad_options_name_the_flag(extracts, tmp_path, capsys, argv, name):
    rc = main(["describe", str(extracts[0]), *argv, "--out", str(tmp_path / "o.csv"), "--quiet"])
    assert rc == 2
    assert f"error: {name}:" in capsys.readouterr().err
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"eps": [-0.1]}, "eps"),
        ({"eps": [0.1], "temperatures": [0]}, "temperatures"),
        ({"eps": [0.1], "blocks": ["nope"]}, "blocks"),
        ({"eps": [0.1], "plugins": ["no_such_module_xyz"]}, "module"),
        ({"eps": [0.1], "threads": 0}, "threads"),
        ({"eps": [0.1], "versions": {"native": 3}}, "versions"),
    ],
)
def test_the_library_names_its_parameters(extracts, kwargs, name):
    with pytest.raises(ParameterError) as info:
        describe_file(extracts[0], **kwargs)
    assert info.value.name == name


def test_block_version_selects_native_2(extracts, tmp_path, capsys):
    import pandas as pd

    out, feats = tmp_path / "o.csv", tmp_path / "f.csv"
    argv = ["describe", str(extracts[0]), "--eps", "0.1", "--blocks", "native", "--quiet"]
    assert main([*argv, "--block-version", "native=2", "--out", str(out)]) == 0
    assert main([*argv, "--out", str(tmp_path / "v1.csv"), "--features-out", str(feats)]) == 0
    assert "native__q_rank" in pd.read_csv(out)
    assert "native__q_rank" not in pd.read_csv(tmp_path / "v1.csv")
    with pytest.raises(SystemExit) as usage:  # argparse's usage error
        main([*argv, "--block-version", "native", "--out", str(out)])
    assert usage.value.code == 2
    assert "--block-version: expected BLOCK=N" in capsys.readouterr().err


def test_bad_input_file_is_INPUT(tmp_path, capsys):
    bad = tmp_path / "x.npz"
    bad.write_text("not a zip")
    out = str(tmp_path / "o.csv")
    assert main(["describe", str(bad), "--eps", "0.1", "--out", out, "--quiet"]) == 2
    assert "error: INPUT: expected an `attnrank extract` .npz" in capsys.readouterr().err
    assert main(["describe", str(tmp_path / "no.npz"), "--eps", "0.1", "--out", out]) == 2
    assert "error: INPUT: no such file" in capsys.readouterr().err
