"""Design fields of the comparison options: SESOI per hypothesis, checkpoint effects."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.compare import ComparisonSpec
from analysis.prereg import load_design, validate_design
from analysis.prereg.design import tomllib
from analysis.validation import ParameterError

SHIPPED = Path(__file__).resolve().parents[2] / "preregistration"


def test_a_design_without_the_fields_keeps_its_meaning(design_text):
    data = tomllib.loads(design_text)
    validate_design(data, require_held_out=False)
    from analysis.prereg.design import Design

    kw = Design(Path("x.toml"), data, "0" * 64).comparison_kwargs()
    spec = ComparisonSpec(models={"M0": ["b"], "M1": ["b", "n"]}, **kw)
    defaults = ComparisonSpec(models=spec.models, family=spec.family)
    for name in ("sesoi", "checkpoint_effects", "resampling_unit", "refit_replicates"):
        assert getattr(spec, name) == getattr(defaults, name), name
    assert dict(spec.sesoi) == {} and spec.checkpoint_effects is False


@pytest.mark.parametrize("name", ["offline-minilm.toml", "offline-families.toml"])
def test_shipped_designs_predate_sesoi(name):
    kw = load_design(SHIPPED / name).comparison_kwargs()
    assert dict(kw["sesoi"]) == {} and kw["checkpoint_effects"] is False


@pytest.mark.parametrize(
    ("sesoi", "primary", "secondary"),
    [(0.0007, 0.0007, None), ({"interval_sq_loss": 0.001, "interval_loglik": 0.01}, 0.001, 0.01)],
)
def test_sesoi_number_and_table_reach_the_options(design_text, sesoi, primary, secondary):
    data = tomllib.loads(design_text)
    data["hypotheses"][0]["sesoi"] = sesoi
    data["inference"]["checkpoint_effects"] = True
    validate_design(data, require_held_out=False)
    from analysis.prereg.design import Design

    opts = Design(Path("x.toml"), data, "0" * 64).comparison_options()
    base, rich = data["hypotheses"][0]["pair"]
    assert opts["sesoi"][f"{base}<{rich}"].get("interval_sq_loss") == primary
    assert opts["sesoi"][f"{base}<{rich}"].get("interval_loglik") == secondary
    assert opts["checkpoint_effects"] is True


@pytest.mark.parametrize(
    ("sesoi", "name"),
    [
        (0.0, "hypotheses[0].sesoi"),
        (-0.001, "hypotheses[0].sesoi"),
        (float("inf"), "hypotheses[0].sesoi"),
        (float("nan"), "hypotheses[0].sesoi"),
        (True, "hypotheses[0].sesoi"),
        ("0.001", "hypotheses[0].sesoi"),
        ({"interval_loglik": 0.1}, "hypotheses[0].sesoi"),  # no primary metric
        ({"interval_sq_loss": 0.1, "spearman_mid": 0.1}, "hypotheses[0].sesoi"),  # not computed
        ({"interval_sq_loss": 0.0}, "hypotheses[0].sesoi.interval_sq_loss"),
    ],
)
def test_invalid_sesoi_names_the_key(design_text, sesoi, name):
    data = tomllib.loads(design_text)
    data["hypotheses"][0]["sesoi"] = sesoi
    with pytest.raises(ParameterError) as info:
        validate_design(data, require_held_out=False)
    assert info.value.name == name


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_checkpoint_effects_must_be_a_boolean(design_text, value):
    data = tomllib.loads(design_text)
    data["inference"]["checkpoint_effects"] = value
    with pytest.raises(ParameterError) as info:
        validate_design(data, require_held_out=False)
    assert info.value.name == "inference.checkpoint_effects"


@pytest.mark.parametrize("unit", ["head", "kv_group", "checkpoint_layer"])
def test_resampling_unit_and_refits_reach_the_options(design_text, unit):
    data = tomllib.loads(design_text)
    data["inference"]["cluster"] = unit
    data["inference"]["refit_replicates"] = 50
    validate_design(data, require_held_out=False)
    from analysis.prereg.design import Design

    opts = Design(Path("x.toml"), data, "0" * 64).comparison_options()
    assert opts["resampling_unit"] == unit and opts["refit_replicates"] == 50


@pytest.mark.parametrize(
    ("key", "value"),
    [("cluster", "layer"), ("cluster", 1), ("refit_replicates", -1), ("refit_replicates", 2.5)],
)
def test_invalid_resampling_fields_name_the_key(design_text, key, value):
    data = tomllib.loads(design_text)
    data["inference"][key] = value
    with pytest.raises(ParameterError) as info:
        validate_design(data, require_held_out=False)
    assert info.value.name == f"inference.{key}"
