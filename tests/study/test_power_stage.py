"""The power stage: validate-comparison on the study's design, screened covariate counts,
computed only when asked, stored beside the design and locked with it (a re-run reads it),
shown in report.md."""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import json

import pandas as pd
import pytest

import analysis.study.power as study_power
from analysis.power import PowerAssumptions
from analysis.prereg import PreregistrationError, check_design, load_design, power_path
from analysis.prereg.amend import amend_design
from analysis.prereg.lock import lock_path
from analysis.study import StudyOptions, block_facts, run_study, study_paths
from analysis.study.power import validation_sizes

pytestmark = pytest.mark.slow

QUIET = {"say": lambda _: None}


def _options(*, report: bool = True, **options) -> StudyOptions:
    """Quiet run options; runs whose report is not read stop after the power stage (the
    report is rendered by the runs that check it)."""
    if not report:
        options["stop_after"] = "power"
    return StudyOptions(progress=False, **options)


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


def _lock(design):
    return json.loads(lock_path(design).read_text())


def test_power_is_stored_beside_the_design_locked_reused_and_reported(study_copy, monkeypatch):
    root = study_copy.parent.parent
    paths = study_paths(study_copy)
    stored = power_path(study_copy)
    calls = []
    real = study_power.validate_comparison

    def counting(widths, spec, **kwargs):
        calls.append(spec.simulations)
        assert (spec.mde_target, spec.mde_steps, spec.hypotheses) == (
            0.8,
            5,
            ("H1", "H2", "H3", "S1"),
        )
        # what is tested here is the stage (computed when asked, stored, locked, reused,
        # reported), not the searches (tests/prereg/test_error_rates.py): the simulation
        # runs without MDE bisection or boundary calibration steps
        return real(
            widths, dataclasses.replace(spec, mde_steps=0, calibration_iterations=0), **kwargs
        )

    monkeypatch.setattr(study_power, "validate_comparison", counting)
    # statsmodels' Holm runs gc.collect() on every call (one per simulated study): seconds
    # in a process holding the study's model; collecting changes no number
    monkeypatch.setattr(gc, "collect", lambda generation=2: 0)
    said: list[str] = []
    # not asked: nothing is simulated, and the report says how to compute it
    run_study(study_copy, say=said.append, options=_options())
    assert calls == [] and not stored.exists()
    assert any("power: not simulated: the power of this design was not computed" in s for s in said)
    text = (paths.report / "report.md").read_text()
    assert f"Not simulated: the power of this design was not computed ({stored.name}" in text
    assert "--power-simulations 400` computes it once" in text
    # asked, without reference widths: the stage says why
    said.clear()
    run_study(study_copy, say=said.append, options=_options(report=False, power_simulations=2))
    assert any("power: not simulated: no reference bracket widths" in s for s in said)
    assert calls == [] and not stored.exists()

    _write_widths(root)
    lock_before = _lock(study_copy)
    run_study(study_copy, **QUIET, options=_options(power_simulations=2))
    assert calls == [2]
    record = json.loads(stored.read_text())
    assert record["design"] == study_copy.name and record["inputs"]["simulations"] == 2
    assert record["inputs"]["sizes"]["n_held_out"] == 3
    prov = record["provenance"]
    assert prov["computed_under_lock"] == lock_before["lock_sha256"]
    assert (
        prov["command"] == f"attnrank run preregistration/{study_copy.name} --power-simulations 2"
    )
    # recorded in the lock through an amendment: lock hash and first lock time unchanged
    lock = _lock(study_copy)
    assert lock["power_sha256"] == hashlib.sha256(stored.read_bytes()).hexdigest()
    assert lock["lock_sha256"] == lock_before["lock_sha256"]
    assert lock["locked_at"] == lock_before["locked_at"]
    assert len(lock["amendments"]) == len(lock_before["amendments"]) + 1
    assert "Power of the design's decisions stored beside it" in lock["amendments"][-1]["reason"]
    assert check_design(study_copy, **block_facts(load_design(study_copy), root=root)) == []
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
    assert f"file={stored.name}" in text  # the provenance names the file
    assert "before later amendments of the design" not in text

    # a run without the flag reads the stored file: no simulation, file untouched (the
    # report of a run that reads it: below, after a reuse and after --power-simulations 0)
    before = stored.stat().st_mtime_ns
    said.clear()
    run_study(study_copy, say=said.append, options=_options(report=False))
    assert calls == [2] and stored.stat().st_mtime_ns == before
    assert f"power: stored result read from {stored.name} (not simulated)" in said
    # asked again with the same inputs: reused, no new amendment
    run_study(study_copy, **QUIET, options=_options(report=False, power_simulations=2))
    assert calls == [2] and stored.stat().st_mtime_ns == before
    assert len(_lock(study_copy)["amendments"]) == len(lock["amendments"])
    # an amendment the simulation does not see (a hypothesis's wording) keeps the result
    text_before = study_copy.read_text(encoding="utf-8")
    study_copy.write_text(
        text_before.replace('statement = "', 'statement = "Reworded: ', 1), encoding="utf-8"
    )
    amend_design(study_copy, reason="clarify a hypothesis's wording")
    run_study(study_copy, **QUIET, options=_options(power_simulations=2))
    assert calls == [2] and json.loads(stored.read_text()) == record
    # ... and the report says it was computed under the lock before that amendment
    text = (paths.report / "report.md").read_text()
    assert f"Computed under lock `{lock_before['lock_sha256'][:12]}`, before later" in text
    # a stored number edited by hand is drift: the run refuses before any work
    edited = json.loads(stored.read_text())
    edited["result"]["hypotheses"][0]["power"]["rate"] = 0.999
    stored.write_text(json.dumps(edited))
    with pytest.raises(PreregistrationError, match=f"power file {stored.name} changed"):
        run_study(study_copy, **QUIET, options=_options())
    stored.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    run_study(study_copy, **QUIET, options=_options(report=False))
    # a changed setting is a changed key: recomputed, rewritten and amended
    run_study(study_copy, **QUIET, options=_options(report=False, power_simulations=3))
    assert calls == [2, 3]
    assert json.loads(stored.read_text())["inputs"]["simulations"] == 3
    assert len(_lock(study_copy)["amendments"]) == len(lock["amendments"]) + 2
    # so is a changed widths file
    _write_widths(root, eps=(0.1, 0.2, 0.05))
    run_study(study_copy, **QUIET, options=_options(report=False, power_simulations=3))
    assert calls == [2, 3, 3]
    # 0 simulations skips the stage and keeps the stored result for the report
    run_study(study_copy, **QUIET, options=_options(power_simulations=0))
    assert calls == [2, 3, 3]
    assert "simulated power" in (paths.report / "report.md").read_text()
    # a changed assumption (a head share measured on the design's training heads) is a
    # changed key too, and the record says what was assumed
    measured = PowerAssumptions(native_head_share=0.77)
    run_study(
        study_copy,
        **QUIET,
        options=_options(report=False, power_simulations=2, power_assumptions=measured),
    )
    assert calls == [2, 3, 3, 2]
    kept = json.loads(stored.read_text())
    assert kept["inputs"]["assumptions"]["native_head_share"] == 0.77
    assert kept["provenance"]["command"].endswith("--native-head-share 0.77")
    run_study(
        study_copy,
        **QUIET,
        options=_options(report=False, power_simulations=2, power_assumptions=measured),
    )
    assert calls == [2, 3, 3, 2]


def test_run_names_the_head_share_flag(study_copy, capsys):
    from analysis.cli import main

    assert main(["run", str(study_copy), "--native-head-share", "1.5", "--no-progress"]) == 2
    err = capsys.readouterr().err
    # the library's check, named after the flag (not argparse refusing an unknown flag)
    assert "--native-head-share: expected a share in [0, 1], got 1.5" in err
