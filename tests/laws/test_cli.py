"""``attnrank laws`` (analysis.cli.laws): errors name the flag, the --json schema, outputs."""

import json
import math

import pytest

from analysis.cli import main

TINY = ["--dims", "2", "--betas", "1", "8", "--n", "32", "--seeds", "0", "1", "--eps", "0.2"]
TINY += ["--effort", "fast", "--workers", "1", "--n-boot", "20", "--quiet"]


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--family", ["--family", "torus"]),
        ("--dims", ["--family", "spherical", "--dims", "1"]),
        ("--dims", ["--family", "spherical", "--dims", "2", "2"]),
        ("--betas", ["--family", "spherical", "--betas", "4"]),
        ("--betas", ["--family", "spherical", "--betas", "0", "4"]),
        ("--betas", ["--family", "spherical", "--dims", "5"]),
        ("--n", ["--family", "spherical", "--n", "4"]),
        ("--eps", ["--family", "spherical", "--eps", "1.5"]),
        ("--eps", ["--family", "spherical", "--eps", "nan"]),
        ("--seeds", ["--family", "spherical", "--seeds", "-1"]),
        ("--effort", ["--family", "spherical", "--effort", "huge"]),
        ("--workers", ["--family", "spherical", *TINY[:-3], "--workers", "0"]),
        ("--n-boot", ["--family", "spherical", "--n-boot", "-2"]),
        ("--design", ["--family", "spherical", "--design", "clever"]),
        ("--design", ["--family", "ball", "--design", "asymptotic", "--eps", "0.2"]),
        ("--eps", ["--family", "spherical", "--design", "asymptotic", "--eps", "0.1", "0.2"]),
        # the asymptotic design says what it left out, here before any bracket: --n is too
        # small for every d
        ("--n", ["--family", "spherical", "--design", "asymptotic", "--dims", "4"]),
    ],
)
def test_errors_name_the_parameter(flag, value, tmp_path, capsys):
    rc = main(["laws", *value, "--out", str(tmp_path / "o"), "--quiet"])
    assert rc == 2
    err = capsys.readouterr().err
    assert f"error: {flag}:" in err


def test_json_schema_and_outputs(tmp_path, capsys):
    out = tmp_path / "o"
    rc = main(["laws", "--family", "ball", *TINY, "--out", str(out), "--json"])
    assert rc == 0
    res = json.loads(capsys.readouterr().out)
    assert set(res) == {"family", "fits"} and res["family"] == "ball"
    (fit,) = res["fits"]
    assert fit["d"] == 2 and fit["theory"] == 1.0 and fit["eps"] == 0.2 and fit["n"] == 32
    assert fit["beta_range"] == [1.0, 8.0]
    assert fit["n_ok"] is (32 >= math.exp(8 / 8))
    assert len(fit["ci"]) == 2 and all(math.isfinite(v) for v in fit["ci"])
    assert math.isfinite(fit["slope"])
    for name in ("brackets.csv", "fits.csv", "fits.md", "results.json", "law.png", "law.pdf"):
        assert (out / name).is_file(), name
    # the spherical entry has no n_ok
    rc = main(["laws", "--family", "spherical", *TINY, "--out", str(out / "s"), "--json"])
    (fit,) = json.loads(capsys.readouterr().out)["fits"]
    assert "n_ok" not in fit and fit["theory"] == 0.5
