"""Parameter validation, resume, the --json schema and a small real sweep end to end."""

import json
import math

import pytest

import analysis.laws as laws
from analysis.cli import main
from analysis.validation import ParameterError

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
    ],
)
def test_errors_name_the_parameter(flag, value, tmp_path, capsys):
    rc = main(["laws", *value, "--out", str(tmp_path / "o"), "--quiet"])
    assert rc == 2
    err = capsys.readouterr().err
    assert f"error: {flag}:" in err


def test_make_config_defaults():
    c = laws.make_config("spherical")
    assert c.dims == (2, 3, 4) and c.n == 512 and c.eps == (0.1,) and c.effort == "thorough"
    q = laws.make_config("spherical", quick=True)
    assert q.n == 256 and q.effort == "default" and len(q.seeds) == 2
    assert all(set(q.betas[d]) <= set(c.betas[d]) for d in c.dims)
    with pytest.raises(ParameterError, match="--betas"):
        laws.make_config("ball", dims=[7])


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


def test_resume_skips_cached_brackets(tmp_path, monkeypatch):
    cfg = laws.make_config(
        "spherical", dims=[2], betas=[1, 4], n=24, eps=[0.2], seeds=[0], effort="fast"
    )
    first = laws.run_sweep(cfg, out=tmp_path, progress=False)
    assert not first["cached"].any() and len(first) == 2
    # A torn last line (a crash mid-write) is ignored, not fatal.
    with open(tmp_path / laws.CHECKPOINT_NAME, "a") as f:
        f.write('{"key": "spherical:2:24:16.0')

    def boom(job):
        raise AssertionError(f"recomputed {job['key']}")

    monkeypatch.setattr(laws, "bracket_job", boom)
    again = laws.run_sweep(cfg, out=tmp_path, progress=False)
    assert again["cached"].all()
    assert again[["lower", "upper"]].equals(first[["lower", "upper"]])
    # A new beta computes only the new matrix.
    calls = []
    monkeypatch.setattr(laws, "bracket_job", lambda j: calls.append(j["key"]) or boom(j))
    cfg2 = laws.make_config(
        "spherical", dims=[2], betas=[1, 4, 9], n=24, eps=[0.2], seeds=[0], effort="fast"
    )
    with pytest.raises(AssertionError, match="recomputed spherical:2:24:9.0"):
        laws.run_sweep(cfg2, out=tmp_path, progress=False)
    from analysis.brackets import __version__ as engine_version

    assert calls == [f"spherical:2:24:9.0:0:0.2:fast:engine{engine_version}"]
    # After the torn line, a new record starts on its own line and is read back.
    monkeypatch.undo()
    third = laws.run_sweep(cfg2, out=tmp_path, progress=False)
    assert third["cached"].tolist() == [True, True, False]
    assert len(laws.read_checkpoint(tmp_path / laws.CHECKPOINT_NAME)) == 3


def test_small_real_sweep_end_to_end(tmp_path):
    # A real sweep (engine brackets on real spherical matrices), small enough for a test.
    cfg = laws.make_config(
        "spherical", dims=[2], betas=[1, 4, 16], n=48, eps=[0.2], seeds=[0, 1], effort="fast"
    )
    res = laws.run_laws(cfg, out=tmp_path, progress=False, n_boot=30, workers=2)
    table = laws.run_sweep(cfg, out=tmp_path, progress=False)
    assert table["cached"].all() and len(table) == 6
    assert (table["lower"] >= 1).all() and (table["lower"] <= table["upper"]).all()
    assert (table["upper"] <= 48).all()
    # distinct seeds draw distinct clouds; each (beta, seed) its own matrix seed
    assert table["matrix_seed"].nunique() == 6
    (fit,) = res["fits"]
    # the midpoint slope is the LS slope of points inside the brackets: in the identified set
    assert fit["slope_set"][0] <= fit["slope_mid"] <= fit["slope_set"][1]
    assert fit["slope"] > 0  # the rank grows with beta on this sweep
    assert res["timing"]["matrices"] == 6
    assert (tmp_path / "fits.md").read_text().count("\n") == 3
