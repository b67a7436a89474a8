"""Sweep configuration, presets, designs and the resumable cache (analysis.laws.sweep)."""

import pytest

from analysis.laws import sweep
from analysis.laws.sweep import (
    CHECKPOINT_NAME,
    default_config,
    make_config,
    read_checkpoint,
    run_sweep,
)
from analysis.validation import ParameterError


def test_make_config_defaults():
    c = make_config(default_config("spherical"))
    assert c.dims == (2, 3, 4) and c.n == 512 and c.eps == (0.1,) and c.effort == "thorough"
    q = make_config(default_config("spherical", quick=True))
    assert q.n == 256 and q.effort == "default" and len(q.seeds) == 2
    assert all(set(q.betas[d]) <= set(c.betas[d]) for d in c.dims)
    with pytest.raises(ParameterError, match="^betas:"):
        make_config(default_config("ball"), dims=[7])


def test_asymptotic_design_config():
    c = make_config(default_config("spherical"), design="asymptotic", eps=[0.2], n=512)
    assert c.design == "asymptotic" and 4 not in c.dims and 3 in c.dims
    assert any("d = 4 left out" in note and "need n >=" in note for note in c.notes)
    for kwargs, flag in [
        ({"family": "ball", "eps": [0.2]}, "design"),
        ({"family": "spherical", "eps": [0.1, 0.2]}, "eps"),
        ({"family": "spherical", "eps": [0.2], "betas": [1, 2]}, "betas"),
        ({"family": "spherical", "eps": [0.1], "dims": [4]}, "n"),
    ]:
        fam = kwargs.pop("family")
        with pytest.raises(ParameterError, match=f"^{flag}:"):
            make_config(default_config(fam), design="asymptotic", **kwargs)
    with pytest.raises(ParameterError, match="^design:"):
        make_config(default_config("spherical"), design="clever")


def test_resume_skips_cached_brackets(tmp_path, monkeypatch):
    cfg = make_config(
        default_config("spherical"),
        dims=[2],
        betas=[1, 4],
        n=24,
        eps=[0.2],
        seeds=[0],
        effort="fast",
    )
    first = run_sweep(cfg, out=tmp_path, progress=False)
    assert not first["cached"].any() and len(first) == 2
    # A torn last line (a crash mid-write) is ignored, not fatal.
    with open(tmp_path / CHECKPOINT_NAME, "a") as f:
        f.write('{"key": "spherical:2:24:16.0')

    def boom(job):
        raise AssertionError(f"recomputed {job['key']}")

    # run_sweep looks bracket_job up in its own module at call time
    monkeypatch.setattr(sweep, "bracket_job", boom)
    again = run_sweep(cfg, out=tmp_path, progress=False)
    assert again["cached"].all()
    assert again[["lower", "upper"]].equals(first[["lower", "upper"]])
    # A new beta computes only the new matrix.
    calls = []
    monkeypatch.setattr(sweep, "bracket_job", lambda j: calls.append(j["key"]) or boom(j))
    cfg2 = make_config(
        default_config("spherical"),
        dims=[2],
        betas=[1, 4, 9],
        n=24,
        eps=[0.2],
        seeds=[0],
        effort="fast",
    )
    with pytest.raises(AssertionError, match="recomputed spherical:2:24:9.0"):
        run_sweep(cfg2, out=tmp_path, progress=False)
    from analysis.brackets import LATEST_ENGINE  # a sweep's default engine

    assert calls == [f"spherical:2:24:9.0:0:0.2:fast:engine{LATEST_ENGINE}"]
    # After the torn line, a new record starts on its own line and is read back.
    monkeypatch.undo()
    third = run_sweep(cfg2, out=tmp_path, progress=False)
    assert third["cached"].tolist() == [True, True, False]
    assert len(read_checkpoint(tmp_path / CHECKPOINT_NAME)) == 3
