"""Issue 52, item 11: a design's unknown keys are refused with the nearest known key,
and duplicate hypothesis ids are refused."""

from __future__ import annotations

import glob

import pytest

from analysis.cli import main
from analysis.datasets import write_example_design
from analysis.prereg.design import load_design
from analysis.prereg.lock import lock_path
from analysis.validation import ParameterError


def _edit(path, old, new):
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.mark.parametrize(
    ("old", "new", "name", "near"),
    [
        (
            "alpha = 0.05",
            "alpha = 0.05, bootstrp = 'studentized'",
            "inference.bootstrp",
            "bootstrap",
        ),
        (
            'statement = "s"',
            'statement = "s", sesoi_shar = 0.1',
            "hypotheses[0].sesoi_shar",
            "sesoi_share",
        ),
        (
            "checkpoints_preexist = true",
            "checkpoints_preexist = true\ntemperature = [1.0]",
            "sampling.temperature",
            "temperatures",
        ),
        ('effort = "fast"', 'effort = "fast"\nmethd = 3', "methd", "method"),
        (
            "layers = 2, heads = 4",
            "layers = 2, heads = 4, exploratry = false",
            "sampling.sources[0].exploratry",
            "exploratory",
        ),
        (
            'primary = "interval_sq_loss"',
            'primary = "interval_sq_loss", secondry = []',
            "metrics.secondry",
            "secondary",
        ),
    ],
)
def test_an_unknown_key_is_refused_with_the_nearest_known_one(
    tmp_path, capsys, old, new, name, near
):
    design = write_example_design(tmp_path / "typo.toml")
    _edit(design, old, new)
    with pytest.raises(ParameterError) as err:
        load_design(design)
    assert err.value.name == name
    assert f"did you mean {near}?" in str(err.value)
    capsys.readouterr()
    assert main(["prereg", "lock", str(design)]) == 2  # nothing locked with a typo
    assert f"{name}: expected a key of" in capsys.readouterr().err
    assert not lock_path(design).exists()


def test_a_misspelled_required_key_is_named_as_missing_with_the_typo(tmp_path):
    design = write_example_design(tmp_path / "typo.toml")
    _edit(design, "bootstrap_replicates = 199", "bootstrp_replicates = 199")
    with pytest.raises(ParameterError, match="is bootstrp_replicates a misspelling") as err:
        load_design(design)
    assert err.value.name == "inference.bootstrap_replicates"


def test_duplicate_hypothesis_ids_are_refused(tmp_path):
    design = write_example_design(tmp_path / "dup.toml")
    hyp = '{id = "H1", kind = "confirmatory", pair = ["M0", "M1"], statement = "s"}'
    other = hyp.replace('statement = "s"', 'statement = "t"')
    _edit(design, f"hypotheses = [{hyp}]", f"hypotheses = [{hyp}, {other}]")
    with pytest.raises(ParameterError, match=r"hypotheses\[1\]\.id: expected an id no other") as e:
        load_design(design)
    assert "hypotheses[0] has it" in str(e.value)


@pytest.mark.parametrize("path", sorted(glob.glob("preregistration/*.toml")))
def test_the_shipped_designs_have_only_known_keys(path):
    load_design(path)
