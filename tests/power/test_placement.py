"""Where method-3 power places the true effect: more calibration studies than counted
ones (the placement error of the old equal split halves), and every placed point records
the realised mean effect of its counted studies beside the target, which the report
prints."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import analysis.power.decisions as decisions
import analysis.power.rates as rates
import analysis.power.simulate as simulate
from analysis.datasets import example_sizes, example_widths
from analysis.power.decisions import PLACEMENT_FACTOR, decision_powers
from analysis.power.spec import PowerSpec
from analysis.report.power_section import decision_power_lines

SESOI = 0.05

# --- a synthetic study whose expected effect is known exactly --------------------------

LEVEL, SLOPE, SD = -0.3, 1.0, 0.1  # effect of study i at share s: LEVEL + SLOPE s + SD z_i


def _z(seed: np.random.SeedSequence) -> float:
    """The study's own draw: the same at every share (common random numbers)."""
    return float(np.random.default_rng(seed).standard_normal())


def _fake_one_study(sizes, widths, share, assumptions, pair, seed) -> dict:
    effect = LEVEL + SLOPE * share + SD * _z(seed)
    return {"effect": effect, "adds_information": False, "p_value": 0.5, "base_value": 1.0}


def _fake_decided_study(sizes, widths, share, assumptions, pair, seed, sesoi) -> dict:
    row = _fake_one_study(sizes, widths, share, assumptions, pair, seed)
    words = dict.fromkeys(("decision", "decision_half", "decision_twice"), "inconclusive")
    return {**row, **words}


def _placement_errors(monkeypatch, placement: int | None, n: int, replicates: int):
    """Per replicate (seed), the true expected effect at the placed share minus the
    target 0, and the realised mean of the counted studies minus the target."""
    monkeypatch.setattr(simulate, "one_study", _fake_one_study)
    monkeypatch.setattr(decisions, "decided_study", _fake_decided_study)
    # the rates' intervals play no part in the placement (and cost most of the time)
    monkeypatch.setattr(decisions, "clopper_pearson", lambda k, n: (0.0, 1.0))
    monkeypatch.setattr(rates, "clopper_pearson", lambda k, n: (0.0, 1.0))
    sizes = dataclasses.replace(example_sizes(), estimator="ols")
    true_err, realised_err = [], []
    for r in range(replicates):
        spec = PowerSpec(
            simulations=n, sizes=sizes, random_state=r, placement_simulations=placement
        )
        out = decision_powers(example_widths(), spec, {"M0<M1": SESOI}, targets=("zero",))
        (point,) = out["hypotheses"][0]["scenarios"]["normal"]["points"]
        assert point["reached"] and point["held_out_signal"] == 1.0
        true_err.append(LEVEL + SLOPE * point["share"] - point["target_effect"])
        realised_err.append(point["mean_effect"] - point["target_effect"])
    return np.asarray(true_err), np.asarray(realised_err)


def test_placement_error_halves_with_four_times_the_calibration_studies(monkeypatch):
    """The calibration mean of n_a CRN studies misses the expected effect by about
    SD / sqrt(n_a): with n_a = n (the old placement) the placed effect's RMS error is
    SD / sqrt(n), with the default n_a = 4 n half that. Stated tolerance: RMS error at
    most 0.75 SD / sqrt(n), over 100 seeds (the RMS's own relative SE is about 7%)."""
    n, replicates = 4, 100
    tolerance = 0.75 * SD / np.sqrt(n)
    new_true, new_realised = _placement_errors(monkeypatch, None, n, replicates)
    old_true, old_realised = _placement_errors(monkeypatch, n, n, replicates)
    rms = {k: float(np.sqrt(np.mean(v**2))) for k, v in {"new": new_true, "old": old_true}.items()}
    assert rms["new"] <= tolerance < rms["old"]
    assert rms["new"] == pytest.approx(SD / np.sqrt(PLACEMENT_FACTOR * n), rel=0.25)
    assert rms["old"] == pytest.approx(SD / np.sqrt(n), rel=0.25)
    # the realised mean adds the counted studies' own SD / sqrt(n): sqrt(1/n_a + 1/n)
    new_r, old_r = (float(np.sqrt(np.mean(e**2))) for e in (new_realised, old_realised))
    assert new_r == pytest.approx(SD * np.sqrt(1 / (PLACEMENT_FACTOR * n) + 1 / n), rel=0.25)
    assert new_r < old_r


# --- the real simulation: the record and the report -------------------------------------


@pytest.fixture(scope="module")
def placed():
    sizes = dataclasses.replace(example_sizes(), estimator="ols")
    spec = PowerSpec(simulations=4, sizes=sizes, random_state=0, calibration_iterations=6)
    return decision_powers(example_widths(), spec, {"M0<M1": SESOI}, targets=("zero", "plus_sesoi"))


def test_realised_mean_effect_is_near_the_target(placed):
    """Stated tolerance: the realised mean of the counted studies is within 3 combined
    SEs (calibration mean's and its own) of the target; the calibration mean itself is
    within the root-finding tolerance (a quarter of the share-0 SE) of it."""
    assert placed["placement_simulations"] == PLACEMENT_FACTOR * 4
    points = placed["hypotheses"][0]["scenarios"]["normal"]["points"]
    assert [p["point"] for p in points] == ["zero", "plus_sesoi"]
    for p in points:
        assert p["reached"], p["point"]
        se_a, se_b = p["calibration_mean_effect_se"], p["mean_effect_se"]
        assert np.isfinite(se_a) and se_a > 0  # the SE of 16 calibration studies
        assert abs(p["calibration_mean_effect"] - p["target_effect"]) <= se_a
        assert abs(p["mean_effect"] - p["target_effect"]) <= 3 * np.hypot(se_a, se_b)


def test_report_prints_target_beside_realised_mean(placed):
    lines = decision_power_lines({"decisions": placed})
    head = next(i for i, x in enumerate(lines) if x.startswith("| hypothesis | scenario | placed"))
    assert "16 calibration studies" in lines[head - 2]
    rows = lines[head + 2 : lines.index("", head)]
    assert len(rows) == 2 and all(r.startswith("| M0<M1 | normal |") for r in rows)
    points = placed["hypotheses"][0]["scenarios"]["normal"]["points"]
    for row, p in zip(rows, points, strict=True):
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[2] == {"zero": "0", "plus_sesoi": "+SESOI"}[p["point"]]
        assert float(cells[3].replace("−", "-")) == pytest.approx(p["target_effect"])
        realised, se = cells[6].replace("−", "-").split(" ± ")
        assert float(realised) == pytest.approx(p["mean_effect"], rel=1e-2, abs=1e-4)
        assert float(se) == pytest.approx(p["mean_effect_se"], rel=1e-2)
        off = (p["mean_effect"] - p["target_effect"]) / p["mean_effect_se"]
        assert float(cells[7].replace("−", "-").removesuffix(" SE")) == pytest.approx(off, abs=0.01)
