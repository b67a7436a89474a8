"""The simulator fitted to a study's training heads and calibrated to its M0 loss: by
``attnrank validate-comparison --fit training`` and by the power stage of ``attnrank run``
when the design declares ``[power] fit``."""

from __future__ import annotations

import json

import pytest

import analysis.study.power as study_power
from analysis.cli import main
from analysis.prereg import power_path
from analysis.study import StudyOptions, run_study

pytestmark = pytest.mark.slow


def test_cli_fit_reports_a_calibrated_simulator(study_copy, capsys):
    root = study_copy.parent.parent
    args = ["validate-comparison", "--design", str(study_copy), "--root", str(root)]
    args += ["--simulations", "2", "--mde-steps", "0", "--fit", "training", "--json"]
    assert main([*args, "--calibration-studies", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    fit = out["fit"]
    cal = fit["calibration"]
    ref = out["reference_m0_loss"]
    assert ref is not None and ref > 0 and cal["reference"]["all"] == pytest.approx(ref)
    assert cal["studies"] == 3 and set(cal["simulated_final"]) >= {"all"}
    if cal["converged"]:
        assert abs(cal["simulated_final"]["all"] - ref) / ref <= cal["tolerance"] + 0.05
    # the calibrated residual SD is what the simulation used
    assert out["assumptions"]["residual_sd"] == pytest.approx(cal["residual_sd"])
    # without calibration the structural fit's scale is kept
    assert main([*args, "--calibration-studies", "0"]) == 0
    raw = json.loads(capsys.readouterr().out)
    assert "calibration" not in raw["fit"]
    assert raw["assumptions"]["residual_sd"] == pytest.approx(raw["fit"]["residual_sd"])


def test_power_stage_fits_when_the_design_declares_it(study_copy, monkeypatch):
    # the reference widths file is not needed: the fitted widths are the study's own
    monkeypatch.setattr(study_power, "design_power", lambda data: {"fit": "training"})
    said: list[str] = []
    run_study(
        study_copy, say=said.append, options=StudyOptions(progress=False, power_simulations=2)
    )
    record = json.loads(power_path(study_copy).read_text())
    fit = record["inputs"]["fit"]
    assert "calibration" in fit and fit["source"].startswith("the training heads of")
    assert record["result"]["reference_m0_loss"] == pytest.approx(fit["reference_m0_loss"])
    assert record["inputs"]["assumptions"]["fitted"] == fit["source"]
    assert "--native-head-share" not in record["provenance"]["command"]
    assert any("scales calibrated by simulated moments" in s for s in said)
