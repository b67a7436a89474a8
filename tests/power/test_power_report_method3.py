"""The report's power section: method-3 decision powers per hypothesis and scenario with
their SESOI sensitivity; method-2 records print byte for byte as before (golden files
rendered by the code before method-3 tables existed). And the resampling unit of a design
that holds out whole layers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.compare.decisions import DECISIONS
from analysis.datasets import example_report_design, example_study_results
from analysis.power.decisions import DECISION_TARGETS, _point, _summaries
from analysis.power.file import read_power_file
from analysis.prereg.options import check_design_options, design_options
from analysis.report.power_section import power_section
from analysis.validation import ParameterError

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
ADDS, EQUIV = DECISIONS[0], DECISIONS[2]


def _results(power: dict):
    return example_study_results(design=example_report_design(), power=power)


@pytest.mark.parametrize("name", ["offline-minilm", "paper-lengths"])
def test_method2_power_section_is_byte_identical(name):
    record = read_power_file(ROOT / "preregistration" / f"{name}.toml")
    text = "\n".join(power_section(_results(record["result"]))) + "\n"
    assert text == (FIXTURES / f"power_section_method2_{name}.md").read_text()


def _decisions() -> dict:
    """A decision-power record as decision_powers writes it: 20 studies per placed
    effect; at +SESOI 14 are decided "adds information", at 0 nine "equivalent", ..."""
    rng = np.random.default_rng(0)
    words = {  # placed effect -> (decision, decision_half, decision_twice): word -> count
        "zero": ({ADDS: 1, EQUIV: 3}, {EQUIV: 0}, {EQUIV: 15}),
        "plus_sesoi": ({ADDS: 14, EQUIV: 0}, {EQUIV: 0}, {EQUIV: 6}),
        "minus_sesoi": ({EQUIV: 2}, {EQUIV: 0}, {EQUIV: 4}),
        "half_sesoi": ({ADDS: 5}, {EQUIV: 1}, {EQUIV: 9}),
        "twice_sesoi": ({ADDS: 19}, {EQUIV: 0}, {EQUIV: 1}),
    }
    points = {}
    for name, factor in DECISION_TARGETS:
        cols = {}
        for column, counts in zip(
            ("decision", "decision_half", "decision_twice"), words[name], strict=True
        ):
            made = [w for w, k in counts.items() for _ in range(k)]
            cols[column] = made + ["inconclusive"] * (20 - len(made))
        rows = pd.DataFrame({"effect": rng.normal(factor * 0.002, 0.001, 20), "base_value": 0.02})
        points[name] = _point(name, factor * 0.002, 0.1, 1.0, factor * 0.002, rows.assign(**cols))
    scenario = {"assumptions": {}, "points": list(points.values()), **_summaries(points)}
    unreached = {**scenario, "power": {**scenario["power"], "superiority_at_sesoi": None}}
    return {
        "simulations": 20,
        "targets": [t for t, _ in DECISION_TARGETS],
        "hypotheses": [
            {
                "hypothesis": "H1",
                "kind": "confirmatory",
                "pair": "M0<M1",
                "sesoi": 0.002,
                "scenarios": {"normal": scenario, "heavy_tails": unreached},
            }
        ],
        "skipped": {"H2": "no SESOI: only the superiority power is simulated"},
    }


def test_method3_power_section_tables():
    base = read_power_file(ROOT / "preregistration" / "offline-minilm.toml")["result"]
    method2 = power_section(_results(base))
    lines = power_section(_results({**base, "method": 3, "decisions": _decisions()}))
    assert lines[: len(method2)] == method2  # the method-2 text first, unchanged
    extra = lines[len(method2) :]
    assert extra[0] == "#### Power of the method-3 decisions (simulated)"
    rows = [x for x in extra if x.startswith("| H1 |")]
    # two scenarios x (decisions table, sensitivity table), then the placement table:
    # two scenarios x five placed effects
    assert len(rows) == 4 + 2 * len(DECISION_TARGETS)
    normal = [c.strip() for c in rows[0].strip("|").split("|")]
    assert normal[:4] == ["H1", "M0<M1", "0.002", "normal"]
    # power at +SESOI 14/20, TOST at 0 3/20... each with its Clopper-Pearson interval
    assert normal[4].startswith("0.7 [0.457, 0.881]")
    assert normal[5].startswith("0.15 [")  # "equivalent" at 0: 3 of 20
    assert normal[6].startswith("0.05 [")  # "adds information" at 0: 1 of 20
    assert normal[7].startswith("0 [0, ") and normal[8].startswith("0.1 [")
    heavy = [c.strip() for c in rows[1].strip("|").split("|")]
    assert heavy[3] == "heavy_tails" and heavy[4] == "not reached"
    sens = [c.strip() for c in rows[2].strip("|").split("|")]
    # half / twice: superiority at +SESOI/2 5/20, at +2 SESOI 19/20; TOST at 0 with
    # SESOI/2 0/20... the decisions the study would make with a halved / doubled SESOI
    assert sens[:2] == ["H1", "normal"]
    assert [s.split(" ")[0] for s in sens[2:]] == ["0.25", "0.95", "0", "0.75", "0.05", "0.05"]
    assert any("H2: decisions not simulated" in x for x in extra)
    header = next(x for x in extra if x.startswith("| hypothesis | pair"))
    assert '"adds information" at +SESOI' in header and '"equivalent within SESOI" at 0' in header


def _layer_design(**inference) -> dict:
    return {
        "metrics": {"primary": "interval_sq_loss"},
        "hypotheses": [],
        "held_out": {"unit": "layer", "stratify": ["checkpoint"]},
        "inference": inference,
    }


def test_layer_unit_design_resamples_layers():
    # absent: defaulted to checkpoint_layer
    check_design_options(_layer_design())
    assert design_options(_layer_design())["resampling_unit"] == "checkpoint_layer"
    check_design_options(_layer_design(cluster="checkpoint_layer"))
    for other in ("head", "kv_group"):
        with pytest.raises(ParameterError, match="inference.cluster") as exc:
            check_design_options(_layer_design(cluster=other))
        assert exc.value.name == "inference.cluster"
    # a head-unit design keeps the head default
    plain = {**_layer_design(), "held_out": {}}
    assert design_options(plain)["resampling_unit"] == "head"
