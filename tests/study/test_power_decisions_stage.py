"""The method-3 power stage: decisions' power from the pilot, before outcomes; after
outcomes only exploratory (its own file, the lock untouched). The simulations are
replaced by stand-ins: what is tested is where the record goes and how it is labelled."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import analysis.study.power_decisions as stage_v3
from analysis.datasets import example_validation, write_example_design
from analysis.prereg import load_design, lock_design, power_path
from analysis.prereg.lock import lock_path
from analysis.prereg.options import design_sesoi, design_sesoi_shares
from analysis.store import Store
from analysis.study import Study, block_facts
from analysis.study.core import engine_versions
from analysis.study.power import power_stage
from analysis.validation import ParameterError

QUIET = {"say": lambda _: None}
EMPTY = pd.DataFrame()


def _method3_study(tmp_path, monkeypatch) -> tuple[Study, dict]:
    monkeypatch.chdir(tmp_path)
    path = write_example_design("studies/v3.toml", temperatures=(0.5, 1.0), eps=(0.1, 0.2))
    text = path.read_text().replace('statement = "s"}', 'statement = "s", sesoi = 0.002}')
    # the example's held-out heads are the per-checkpoint draw (method 3's default is the
    # stratified one): the design states the rule its heads were drawn by
    text = text.replace("[held_out]\n", '[held_out]\nstratify = ["checkpoint"]\n')
    path.write_text("method = 3\n" + text)
    lock_design(path, engines=engine_versions(), **block_facts(load_design(path)))
    rows = [(e, lo, lo * r) for e in (0.1, 0.2) for lo in (2, 3, 5, 8) for r in (1, 2, 3)]
    widths = tmp_path / "data" / "reference" / "minilm_bracket_widths.csv"
    widths.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows, columns=["eps", "lower", "upper"]).to_csv(widths, index=False)
    seen = {}

    def fake_decisions(widths, spec, sesoi, *, scenarios, **_):
        seen.update(sesoi=dict(sesoi), scenarios=scenarios, sizes=spec.sizes)
        return {"hypotheses": [], "skipped": {}, "simulations": spec.simulations, "targets": []}

    monkeypatch.setattr(stage_v3, "validate_comparison", lambda *a, **k: example_validation())
    monkeypatch.setattr(stage_v3, "decision_powers", fake_decisions)
    return Study.open(path), seen


def test_method3_power_is_stored_and_locked_before_outcomes(tmp_path, monkeypatch):
    study, seen = _method3_study(tmp_path, monkeypatch)
    record = power_stage(study, EMPTY, EMPTY, simulations=2, **QUIET)
    assert "exploratory" not in record and record["result"]["method"] == 3
    assert power_path(study.paths.design).is_file()
    lock = json.loads(lock_path(study.paths.design).read_text())
    assert lock["power_sha256"] is not None
    # the SESOI, the declared scenarios and the pilot-only covariate counts
    assert seen["sesoi"] == {"M0<M1": 0.002}
    assert set(seen["scenarios"]) == {"normal", "heavy_tails", "covariate_shift"}
    assert record["inputs"]["sesoi"]["M0<M1"]["source"] == "declared in loss units"
    assert "study's" not in seen["sizes"].features_note


def test_method3_power_after_outcomes_is_only_exploratory(tmp_path, monkeypatch):
    study, seen = _method3_study(tmp_path, monkeypatch)
    with Store(study.paths.store, create=True) as store:
        store.record_outcomes(lock_sha256=study.lock.sha256, design=study.paths.design.name)
    lock_before = lock_path(study.paths.design).read_bytes()
    record = power_stage(study, EMPTY, EMPTY, simulations=2, **QUIET)
    assert record["exploratory"] is True
    assert record["summary"].startswith("EXPLORATORY")
    assert "EXPLORATORY" in record["provenance"]["note"]
    assert not power_path(study.paths.design).exists()  # the locked power file: untouched
    assert stage_v3.exploratory_power_path(study.paths.design).is_file()
    assert lock_path(study.paths.design).read_bytes() == lock_before


def test_sesoi_share_is_declared_instead_of_a_sesoi():
    data = {
        "metrics": {"primary": "interval_sq_loss"},
        "hypotheses": [{"pair": ["M0", "M1"], "sesoi_share": 0.1}],
    }
    assert design_sesoi_shares(data) == {"M0<M1": 0.1} and design_sesoi(data) == {}
    loss, rec = stage_v3.resolved_sesoi(data, "interval_sq_loss", 0.02)
    assert loss["M0<M1"] == pytest.approx(0.002)
    assert rec["M0<M1"]["sesoi_share"] == 0.1 and rec["M0<M1"]["pilot_m0_loss"] == 0.02
    unresolved, _ = stage_v3.resolved_sesoi(data, "interval_sq_loss", None)
    assert unresolved == {}
    data["hypotheses"][0]["sesoi"] = 0.001
    with pytest.raises(ParameterError, match="sesoi_share"):
        design_sesoi(data)
    data["hypotheses"][0] = {"pair": ["M0", "M1"], "sesoi_share": 1.5}
    with pytest.raises(ParameterError, match="sesoi_share"):
        design_sesoi_shares(data)
