"""A method-3 design's power file written before the lock (`attnrank validate-comparison
--write-power-file`), hashed by `attnrank prereg lock`, reused by the run's power stage and
never recomputed as exploratory once outcomes exist; the confirmatory comparison reads a
`sesoi_share` hypothesis's loss-unit SESOI from the locked power file. The simulations are
stand-ins: what is tested is where records go, their keys and the refusals."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import analysis.study.power_decisions as stage_v3
from analysis.cli import main
from analysis.datasets import example_validation, write_example_design
from analysis.hashing import file_sha256
from analysis.power.file import POWER_FILE_FORMAT, write_power_file
from analysis.prereg import PreregistrationError, power_path
from analysis.prereg.lock import lock_path
from analysis.store import Store
from analysis.study import Study
from analysis.study.power import power_stage

QUIET = {"say": lambda _: None}
EMPTY = pd.DataFrame()


def _design(tmp_path, monkeypatch, *, method: int = 3, hypothesis: str = "sesoi = 0.002"):
    """An unlocked example design (the held-out heads its rule draws), the reference
    widths, and stand-ins for the two simulations (counting their calls)."""
    monkeypatch.chdir(tmp_path)
    path = write_example_design("studies/v3.toml", temperatures=(0.5, 1.0), eps=(0.1, 0.2))
    text = path.read_text().replace('statement = "s"}', f'statement = "s", {hypothesis}}}')
    text = text.replace("[held_out]\n", '[held_out]\nstratify = ["checkpoint"]\n')
    path.write_text((f"method = {method}\n" if method == 3 else "") + text)
    rows = [(e, lo, lo * r) for e in (0.1, 0.2) for lo in (2, 3, 5, 8) for r in (1, 2, 3)]
    widths = tmp_path / "data" / "reference" / "minilm_bracket_widths.csv"
    widths.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows, columns=["eps", "lower", "upper"]).to_csv(widths, index=False)
    calls = {"decisions": 0}

    def fake_decisions(widths, spec, sesoi, *, scenarios, **_):
        calls["decisions"] += 1
        calls["sesoi"] = dict(sesoi)
        return {"hypotheses": [], "skipped": {}, "simulations": spec.simulations, "targets": []}

    monkeypatch.setattr(stage_v3, "validate_comparison", lambda *a, **k: example_validation())
    monkeypatch.setattr(stage_v3, "decision_powers", fake_decisions)
    return path, calls


def _cli(*argv: str) -> int:
    return main(["validate-comparison", *argv])


def test_power_file_written_before_the_lock_is_hashed_and_reused(tmp_path, monkeypatch, capsys):
    path, calls = _design(tmp_path, monkeypatch)
    assert _cli("--design", str(path), "--simulations", "2", "--write-power-file") == 0
    assert power_path(path).is_file() and not lock_path(path).exists()
    record = json.loads(power_path(path).read_text())
    assert record["result"]["method"] == 3 and "exploratory" not in record
    assert record["provenance"]["computed_under_lock"] is None
    assert "--write-power-file" in record["provenance"]["command"]
    assert calls == {"decisions": 1, "sesoi": {"M0<M1": 0.002}}
    # attnrank prereg lock hashes it
    assert main(["prereg", "lock", str(path)]) == 0
    lock = json.loads(lock_path(path).read_text())
    assert lock["power_sha256"] == file_sha256(power_path(path))
    # the run's power stage, after the lock, computes the same key: the file is reused,
    # nothing is simulated again and the lock is not amended
    before = (power_path(path).read_bytes(), lock_path(path).read_bytes())
    said = []
    again = power_stage(Study.open(path), EMPTY, EMPTY, simulations=2, say=said.append)
    assert again["key"] == record["key"] and calls["decisions"] == 1
    assert any("reused" in s for s in said)
    assert (power_path(path).read_bytes(), lock_path(path).read_bytes()) == before


def test_power_file_from_before_outcomes_is_not_recomputed_as_exploratory(tmp_path, monkeypatch):
    path, calls = _design(tmp_path, monkeypatch)
    assert _cli("--design", str(path), "--simulations", "2", "--write-power-file") == 0
    assert main(["prereg", "lock", str(path)]) == 0
    study = Study.open(path)
    with Store(study.paths.store, create=True) as store:
        store.record_outcomes(lock_sha256=study.lock.sha256, design=path.name)
    stored = power_path(path).read_bytes()
    # other inputs than the stored file's (3 simulations): still the pre-registered file
    record = power_stage(study, EMPTY, EMPTY, simulations=3, **QUIET)
    assert "exploratory" not in record and record["inputs"]["simulations"] == 2
    assert calls["decisions"] == 1
    assert not stage_v3.exploratory_power_path(path).exists()
    assert power_path(path).read_bytes() == stored


def test_write_power_file_after_outcomes_is_only_exploratory(tmp_path, monkeypatch):
    path, _ = _design(tmp_path, monkeypatch)
    assert main(["prereg", "lock", str(path)]) == 0
    study = Study.open(path)
    with Store(study.paths.store, create=True) as store:
        store.record_outcomes(lock_sha256=study.lock.sha256, design=path.name)
    lock_before = lock_path(path).read_bytes()
    assert _cli("--design", str(path), "--simulations", "2", "--write-power-file") == 0
    assert not power_path(path).exists()
    exploratory = json.loads(stage_v3.exploratory_power_path(path).read_text())
    assert exploratory["exploratory"] is True and exploratory["summary"].startswith("EXPLORATORY")
    assert lock_path(path).read_bytes() == lock_before


def test_method3_cli_without_the_flag_writes_nothing(tmp_path, monkeypatch, capsys):
    path, calls = _design(tmp_path, monkeypatch)
    assert _cli("--design", str(path), "--simulations", "2", "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["result"]["method"] == 3 and "decisions" in out["result"]
    assert calls["decisions"] == 1 and not power_path(path).exists()


def test_cli_refusals(tmp_path, monkeypatch, capsys):
    path, _ = _design(tmp_path, monkeypatch)
    # a method-3 power file copies the design: a flag that departs from it is refused
    assert _cli("--design", str(path), "--simulations", "2", "--fit", "training") == 2
    assert "--fit" in capsys.readouterr().err
    m2, _ = _design(tmp_path, monkeypatch, method=2)
    assert _cli("--design", str(m2), "--simulations", "2", "--write-power-file") == 2
    err = capsys.readouterr().err
    assert "--write-power-file" in err and "method-3" in err
    assert not power_path(m2).exists()


def _share_study(tmp_path, monkeypatch, *, sesoi: float | None = 0.004):
    """A locked method-3 design with H1 declared as ``sesoi_share = 0.1`` and (unless
    ``sesoi`` is None) a power file recording its loss-unit SESOI, written before the lock."""
    path, _ = _design(tmp_path, monkeypatch, hypothesis="sesoi_share = 0.1")
    if sesoi is not None:
        rec = {"sesoi": sesoi, "sesoi_share": 0.1, "pilot_m0_loss": sesoi / 0.1}
        record = {
            "format": POWER_FILE_FORMAT,
            "design": path.name,
            "key": "k",
            "inputs": {"sesoi": {"M0<M1": {**rec, "source": "share x the pilot M0 loss"}}},
            "result": {},
            "provenance": {},
        }
        write_power_file(path, record)
    assert main(["prereg", "lock", str(path)]) == 0
    return path


def test_sesoi_share_is_read_from_the_locked_power_file(tmp_path, monkeypatch):
    from analysis.study.power_sesoi import confirmatory_kwargs, locked_sesoi

    path = _share_study(tmp_path, monkeypatch)
    study = Study.open(path)
    assert study.design.comparison_kwargs()["sesoi"] == {}  # the design alone has none
    assert locked_sesoi(study) == {"M0<M1": {"interval_sq_loss": 0.004}}
    assert confirmatory_kwargs(study)["sesoi"] == {"M0<M1": {"interval_sq_loss": 0.004}}


def test_sesoi_share_without_a_power_file_is_refused(tmp_path, monkeypatch):
    from analysis.study.power_sesoi import confirmatory_kwargs

    path = _share_study(tmp_path, monkeypatch, sesoi=None)
    with pytest.raises(PreregistrationError, match=r"H1 \(hypotheses\[0\]\.sesoi_share\)"):
        confirmatory_kwargs(Study.open(path))


def test_sesoi_share_with_a_power_file_other_than_the_locked_one_is_refused(tmp_path, monkeypatch):
    from analysis.study.power_sesoi import locked_sesoi

    path = _share_study(tmp_path, monkeypatch)
    study = Study.open(path)
    text = power_path(path).read_text().replace("0.004", "0.008")
    power_path(path).write_text(text)
    with pytest.raises(PreregistrationError, match="not the power file the lock hashes") as exc:
        locked_sesoi(study)
    assert exc.value.name == "hypotheses[0].sesoi_share"


def test_compare_stage_fits_with_the_locked_sesoi(tmp_path, monkeypatch):
    """The study's comparison stage passes the power file's SESOI to the fits."""
    import analysis.study.comparison as comparison

    path = _share_study(tmp_path, monkeypatch)
    study = Study.open(path)
    heads = [f"org/tiny:{la}:{h}" for la in range(2) for h in range(4)]
    table = pd.DataFrame({"cell_key": [f"c{i}" for i in range(8)], "cluster": heads})
    monkeypatch.setattr(comparison, "comparison_table", lambda *a: (table, [], {}))
    seen = {}

    class Stop(Exception):
        pass

    def fake_fit(*args, kwargs, **_):
        seen.update(kwargs)
        raise Stop

    monkeypatch.setattr(comparison, "fit_comparisons", fake_fit)
    with pytest.raises(Stop):
        comparison.compare_stage(study, EMPTY, EMPTY, say=lambda _: None)
    assert seen["sesoi"] == {"M0<M1": {"interval_sq_loss": 0.004}}
