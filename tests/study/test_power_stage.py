"""The power stage: validate-comparison on the study's design, screened covariate counts,
stored under the lock hash and settings (a re-run costs nothing), shown in report.md."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import analysis.study.power as study_power
from analysis.prereg import PowerAssumptions
from analysis.prereg.lock import amend_design
from analysis.study import run_study, study_paths
from analysis.study.power import validation_sizes

pytestmark = pytest.mark.slow

QUIET = {"progress": False, "say": lambda _: None}


def _write_widths(root, eps=(0.1, 0.2)) -> None:
    rows = [(e, lo, lo * r) for e in eps for lo in (2, 3, 5, 8) for r in (1, 2, 3)]
    path = root / "data" / "reference" / "minilm_bracket_widths.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows, columns=["eps", "lower", "upper"]).to_csv(path, index=False)


def test_screened_counts_come_from_the_study_training_cells(study_copy):
    lock = json.loads(study_copy.with_name(study_copy.name + ".lock").read_text())
    sizes = validation_sizes(study_copy)
    assert "collinearity screen" in sizes.features_note and "training cells" in sizes.features_note
    feats = dict(sizes.features)
    for b in ("baseline", "native", "intrinsic"):
        assert 1 <= feats[b] <= len(lock["blocks"][b]["covariates"])
    # MiniLM is not causal: n_keys = n_queries, one of them is collinear and dropped
    assert feats["baseline"] < len(lock["blocks"]["baseline"]["covariates"])
    assert sizes.strata == (("sentence-transformers/all-MiniLM-L6-v2", 12, 3),)


def test_power_is_stored_reused_and_reported(study_copy, monkeypatch):
    root = study_copy.parent.parent
    paths = study_paths(study_copy)
    said: list[str] = []
    # no reference widths: the stage says why and the report shows it
    run_study(study_copy, progress=False, say=said.append, power_simulations=2)
    assert any("power: not simulated: no reference bracket widths" in s for s in said)
    assert not paths.power_file.exists()
    text = (paths.report / "report.md").read_text()
    assert "Not simulated: no reference bracket widths" in text

    _write_widths(root)
    calls = []
    real = study_power.validate_comparison

    def counting(*args, **kwargs):
        calls.append(kwargs["simulations"])
        return real(*args, **kwargs)

    monkeypatch.setattr(study_power, "validate_comparison", counting)
    run_study(study_copy, **QUIET, power_simulations=2)
    assert calls == [2]
    record = json.loads(paths.power_file.read_text())
    lock_file = study_copy.with_name(study_copy.name + ".lock")
    assert record["lock_sha256"] == json.loads(lock_file.read_text())["lock_sha256"]
    assert record["inputs"]["sizes"]["n_held_out"] == 3
    hyps = record["result"]["hypotheses"]
    assert [h["hypothesis"] for h in hyps] == ["H1", "H2", "H3"]
    assert "S1" in record["result"]["skipped"]
    text = (paths.report / "report.md").read_text()
    assert "### Power of each decision (simulated)" in text
    for h in hyps:
        assert f"**{h['hypothesis']}** ({h['pair']}): simulated power" in text
        assert "minimum detectable effect" in text
    assert "simulated_power" in text and "| mde" in text.replace("|  mde", "| mde")
    assert (paths.report / "tables" / "power.csv").is_file()

    # a re-run reuses the stored simulation: no second call
    before = paths.power_file.stat().st_mtime_ns
    run_study(study_copy, **QUIET, power_simulations=2)
    assert calls == [2] and paths.power_file.stat().st_mtime_ns == before
    # an amendment the simulation does not see (a hypothesis's wording) keeps the result
    text_before = study_copy.read_text(encoding="utf-8")
    study_copy.write_text(
        text_before.replace('statement = "', 'statement = "Reworded: ', 1), encoding="utf-8"
    )
    amend_design(study_copy, reason="clarify a hypothesis's wording")
    assert json.loads(lock_file.read_text())["lock_sha256"] != record["lock_sha256"]
    run_study(study_copy, **QUIET, power_simulations=2)
    assert calls == [2]
    kept = json.loads(paths.power_file.read_text())
    assert kept["lock_sha256"] == json.loads(lock_file.read_text())["lock_sha256"]
    assert kept["computed_under_lock"] == record["lock_sha256"]
    assert kept["result"] == record["result"]
    assert "simulated power" in (paths.report / "report.md").read_text()
    # a changed setting is a changed key: recomputed
    run_study(study_copy, **QUIET, power_simulations=3)
    assert calls == [2, 3]
    # so is a changed widths file
    _write_widths(root, eps=(0.1, 0.2, 0.05))
    run_study(study_copy, **QUIET, power_simulations=3)
    assert calls == [2, 3, 3]
    # 0 simulations skips the stage and keeps the stored result for the report
    run_study(study_copy, **QUIET, power_simulations=0)
    assert calls == [2, 3, 3]
    assert "simulated power" in (paths.report / "report.md").read_text()
    # a changed assumption (a head share measured on the design's training heads) is a
    # changed key too, and the record says what was assumed
    measured = PowerAssumptions(native_head_share=0.77)
    run_study(study_copy, **QUIET, power_simulations=2, power_assumptions=measured)
    assert calls == [2, 3, 3, 2]
    stored = json.loads(paths.power_file.read_text())
    assert stored["inputs"]["assumptions"]["native_head_share"] == 0.77
    run_study(study_copy, **QUIET, power_simulations=2, power_assumptions=measured)
    assert calls == [2, 3, 3, 2]


def test_run_names_the_head_share_flag(study_copy, capsys):
    from analysis.cli import main

    assert main(["run", str(study_copy), "--native-head-share", "1.5", "--no-progress"]) == 2
    err = capsys.readouterr().err
    # the library's check, named after the flag (not argparse refusing an unknown flag)
    assert "--native-head-share: expected a share in [0, 1], got 1.5" in err
