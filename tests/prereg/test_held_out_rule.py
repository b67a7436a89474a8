"""The held-out draw's rule: stratified by (checkpoint, layer), or whole layers held out.

The per-checkpoint draw of the shipped designs leaves some (checkpoint, layer) groups
without a training head (15 of the 80 of the paper-lengths study), so that the held-out
loss there is an extrapolation to unseen layers while elsewhere it is not. The stratified
draw (``[held_out] stratify = ["checkpoint", "layer"]``, the method-3 default) keeps a
training head in every layer; ``unit = "layer"`` holds out whole layers and names that
estimand.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from analysis.prereg import draw_held_out, load_design, lock_design, validate_design
from analysis.prereg.design import tomllib
from analysis.prereg.held_out import HeldOutRule, held_out_rule
from analysis.validation import ParameterError
from tests.study.conftest import locked_designs

ROOT = Path(__file__).resolve().parents[2]
#: The locked designs (an unlocked draft beside them, e.g. replication.toml, is not shipped yet).
LOCKED = locked_designs(ROOT)
#: The locked designs written before method 3 (per-checkpoint draw), and those under it.
SHIPPED = [p for p in LOCKED if "method" not in tomllib.loads(p.read_text(encoding="utf-8"))]
SHIPPED_V3 = [p for p in LOCKED if p not in SHIPPED]
SEEDS = range(50)
FRACTIONS = (0.25, 0.5, 0.75)
STRATIFIED = ["checkpoint", "layer"]

#: checkpoint -> heads per layer (layer i has the i-th count): layers of 1, 2, 3, 12 heads.
POPULATIONS = (
    {"org/a": [1, 2, 3, 12]},
    {"org/a": [2, 2, 2], "org/b": [3, 1, 12, 12], "org/c": [1]},
    {"org/a": [12, 12, 1, 1, 3], "org/b": [2, 3]},
)


def _data(layers: dict[str, list[int]], seed: int, fraction: float, **held_out) -> dict:
    sources = [
        {"kind": "checkpoint", "checkpoint": ck, "layers": [la], "heads": n}
        for ck, sizes in layers.items()
        for la, n in enumerate(sizes)
    ]
    return {
        "sampling": {"sources": sources},
        "held_out": {"seed": seed, "fraction": fraction, **held_out},
    }


def _layer(head_id: str) -> tuple[str, int]:
    ck, layer, _ = head_id.rsplit(":", 2)
    return ck, int(layer)


def _cases():
    for pop in POPULATIONS:
        for fraction in FRACTIONS:
            for seed in SEEDS:
                yield pop, seed, fraction


@pytest.mark.parametrize("how", ["method 3", "explicit key"])
def test_stratified_draw_keeps_a_training_head_in_every_layer(how):
    """Over 50 seeds x 3 populations x 3 fractions: per (checkpoint, layer) with n >= 2
    heads, exactly min(round(fraction * n), n - 1) held out (so at least one training
    head, and at least one held-out head when round(fraction * n) >= 1); a layer of one
    head is a training head; the list is sorted, distinct and of the population."""
    extra = {"stratify": STRATIFIED} if how == "explicit key" else {}
    for pop, seed, fraction in _cases():
        data = _data(pop, seed, fraction, **extra)
        if how == "method 3":
            data["method"] = 3
        heads = draw_held_out(data)
        assert len(set(heads)) == len(heads)
        assert heads == sorted(heads, key=lambda h: (*_layer(h), int(h.rsplit(":", 1)[1])))
        held = Counter(_layer(h) for h in heads)
        for ck, sizes in pop.items():
            for la, n in enumerate(sizes):
                want = 0 if n == 1 else min(round(fraction * n), n - 1)
                assert held[(ck, la)] == want, (pop, seed, fraction, ck, la)
                assert n == 1 or held[(ck, la)] <= n - 1
        assert all(int(h.rsplit(":", 1)[1]) < pop[_layer(h)[0]][_layer(h)[1]] for h in heads)
        HeldOutRule(tuple(STRATIFIED), "head").check(
            [f"{ck}:{la}:{h}" for ck, s in pop.items() for la, n in enumerate(s) for h in range(n)],
            heads,
        )


def test_per_checkpoint_draw_leaves_layers_without_training_heads():
    """The method-2 draw on the same populations does empty some layers (why the rule)."""
    emptied = 0
    for pop, seed, fraction in _cases():
        heads = draw_held_out(_data(pop, seed, fraction))
        held = Counter(_layer(h) for h in heads)
        emptied += sum(
            held[(ck, la)] == n for ck, s in pop.items() for la, n in enumerate(s) if n >= 2
        )
    assert emptied > 0


def test_layer_unit_holds_out_whole_layers_and_keeps_a_training_layer():
    for pop, seed, fraction in _cases():
        data = _data(pop, seed, fraction, unit="layer", estimand="new layers")
        heads = draw_held_out(data)
        held = Counter(_layer(h) for h in heads)
        for ck, sizes in pop.items():
            whole = [la for la, n in enumerate(sizes) if held[(ck, la)] == n]
            assert all(held[(ck, la)] in (0, n) for la, n in enumerate(sizes))
            big = len(sizes)
            assert len(whole) == (0 if big == 1 else min(round(fraction * big), big - 1))


def test_same_rng_calls_as_documented():
    """The stratified draw is the documented sequence of generator calls, literally."""
    import numpy as np

    pop = {"org/a": [2, 1, 3], "org/b": [4]}
    rng = np.random.default_rng(11)
    expected = []
    for ck in sorted(pop):
        for la, n in enumerate(pop[ck]):
            if n >= 2:
                idx = rng.choice(n, size=min(round(0.5 * n), n - 1), replace=False)
                expected += [f"{ck}:{la}:{int(i)}" for i in idx]
    got = draw_held_out({**_data(pop, 11, 0.5), "method": 3})
    assert got == sorted(expected, key=lambda h: (*_layer(h), int(h.rsplit(":", 1)[1])))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_designs_draw_unchanged(path):
    """Each shipped design's method-2 draw is its stored list, with or without the explicit
    per-checkpoint key, and its ``rule`` text is the legacy rule's."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    assert "method" not in data and "stratify" not in data["held_out"]
    assert draw_held_out(data) == data["held_out"]["heads"]
    explicit = {**data, "method": 3, "held_out": {**data["held_out"], "stratify": ["checkpoint"]}}
    assert draw_held_out(explicit) == data["held_out"]["heads"]
    rule = held_out_rule(data)
    assert rule.legacy and data["held_out"]["rule"] == rule.text
    assert load_design(path).held_out_rule == HeldOutRule(("checkpoint",), "head")


@pytest.mark.parametrize("path", SHIPPED_V3, ids=lambda p: p.stem)
def test_locked_method3_designs_draw_their_stored_list(path):
    """A locked method-3 design (the replication and its pilot) stores the stratified
    draw its rule gives, and no layer of its population lacks a training head."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    assert data["method"] == 3 and data["held_out"]["stratify"] == STRATIFIED
    assert draw_held_out(data) == data["held_out"]["heads"]
    rule = held_out_rule(data)
    assert not rule.legacy
    design = load_design(path)
    assert design.held_out_rule == HeldOutRule(tuple(STRATIFIED), "head")
    groups = Counter(_layer(h) for h in design.population())
    held = Counter(_layer(h) for h in design.held_out)
    assert all(held[g] < n for g, n in groups.items())


def test_shipped_designs_split_by_method():
    assert {p.stem for p in SHIPPED_V3} >= {"replication", "replication-pilot"}
    assert "paper-lengths" in {p.stem for p in SHIPPED}


def test_paper_lengths_groups_without_training_heads():
    design = load_design(ROOT / "preregistration" / "paper-lengths.toml")
    pop = design.population()
    groups = Counter(_layer(h) for h in pop)

    def empty(heads):
        held = Counter(_layer(h) for h in heads)
        return sum(held[g] == n for g, n in groups.items())

    old = empty(design.held_out)
    stratified = {**design.data, "held_out": {**design.data["held_out"], "stratify": STRATIFIED}}
    stratified["held_out"].pop("rule")
    new_heads = draw_held_out(stratified)
    new = empty(new_heads)
    print(
        f"paper-lengths: {len(groups)} (checkpoint, layer) groups; without a training head: "
        f"{old} (per checkpoint, {len(design.held_out)} held out), "
        f"{new} (per (checkpoint, layer), {len(new_heads)} held out)"
    )
    assert (len(groups), old, new) == (80, 15, 0)


@pytest.mark.parametrize(
    ("held_out", "method", "name"),
    [
        ({"stratify": ["layer"]}, 2, "held_out.stratify"),
        ({"stratify": "checkpoint"}, 2, "held_out.stratify"),
        ({"stratify": ["checkpoint", "layer", "head"]}, 2, "held_out.stratify"),
        ({"stratify": ["layer", "checkpoint"]}, 3, "held_out.stratify"),
        ({"unit": "kv_group"}, 2, "held_out.unit"),
        (
            {"unit": "layer", "stratify": STRATIFIED, "estimand": "new layers"},
            2,
            "held_out.stratify",
        ),
        ({"unit": "layer"}, 2, "held_out.estimand"),
        ({"unit": "layer", "estimand": "new heads"}, 2, "held_out.estimand"),
        ({"estimand": "new layers"}, 3, "held_out.estimand"),
        ({"rule": HeldOutRule().text}, 3, "held_out.rule"),
        ({"stratify": STRATIFIED, "rule": HeldOutRule().text}, 2, "held_out.rule"),
    ],
)
def test_rule_keys_validated(design_text, held_out, method, name):
    data = tomllib.loads(design_text)
    data["held_out"].update(held_out)
    if method == 3:
        data["method"] = 3
    with pytest.raises(ParameterError) as info:
        validate_design(data, require_held_out=False)
    assert info.value.name == name


def test_rule_text_accepted_when_it_matches(design_text):
    data = tomllib.loads(design_text)
    data["held_out"].update(stratify=STRATIFIED, rule=HeldOutRule(tuple(STRATIFIED)).text)
    validate_design(data, require_held_out=False)
    data["held_out"].update(unit="layer", stratify=["checkpoint"], estimand="new layers")
    data["held_out"]["rule"] = HeldOutRule(("checkpoint",), "layer").text
    validate_design(data, require_held_out=False)


def test_list_that_empties_a_layer_is_refused(design_text):
    data = tomllib.loads(design_text)
    data["held_out"]["stratify"] = STRATIFIED
    data["held_out"]["heads"] = [f"org/tiny-b:0:{h}" for h in range(4)]
    with pytest.raises(ParameterError, match="held_out.heads: expected a training head"):
        validate_design(data)
    data["held_out"]["heads"] = [f"org/tiny-b:0:{h}" for h in range(3)]
    validate_design(data)  # the shape is fine; the lock compares it with the draw


def test_layer_unit_refuses_part_layers_and_all_layers(design_text):
    data = tomllib.loads(design_text)
    data["held_out"].update(unit="layer", estimand="new layers")
    data["held_out"]["heads"] = [f"org/tiny-b:0:{h}" for h in range(3)]
    with pytest.raises(ParameterError, match="whole .checkpoint, layer. groups"):
        validate_design(data)
    data["held_out"]["heads"] = [f"org/tiny-b:{la}:{h}" for la in range(2) for h in range(4)]
    with pytest.raises(ParameterError, match="a training layer in every checkpoint"):
        validate_design(data)
    data["held_out"]["heads"] = [f"org/tiny-b:1:{h}" for h in range(4)]
    validate_design(data)


def test_draw_that_holds_out_nothing_is_refused():
    data = {**_data({"org/a": [1, 1]}, 0, 0.5), "method": 3}
    with pytest.raises(ParameterError, match="held_out.fraction"):
        draw_held_out(data)


def _stratified_example(path: Path) -> Path:
    from analysis.datasets import write_example_design

    write_example_design(path)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    i = next(i for i, ln in enumerate(lines) if ln.startswith("heads = ["))
    lines.insert(i + 1, 'stratify = ["checkpoint", "layer"]\n')
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_lock_refuses_a_list_that_is_not_the_stratified_draw(tmp_path):
    from analysis.prereg.design import write_held_out

    path = _stratified_example(tmp_path / "preregistration" / "toy.toml")
    design = load_design(path)
    assert list(design.held_out) != draw_held_out(design.data)  # the per-checkpoint list
    with pytest.raises(
        ParameterError, match='held_out.heads: .*stratify \\["checkpoint", "layer"\\]'
    ):
        lock_design(path)
    write_held_out(path, draw_held_out(design.data))
    record = lock_design(path)
    assert record["held_out"]["heads"] == draw_held_out(design.data)


def test_cli_draw_lock_check_say_the_rule(tmp_path, capsys):
    from analysis.cli import main

    path = _stratified_example(tmp_path / "study" / "preregistration" / "toy.toml")
    assert main(["prereg", "draw", str(path)]) == 0
    line = 'held-out draw: stratify ["checkpoint", "layer"], unit "head" (estimand: new heads)'
    assert line in capsys.readouterr().out
    assert main(["prereg", "lock", str(path)]) == 0
    assert line.replace(": ", ":   ", 1) in capsys.readouterr().out
    assert main(["prereg", "check", str(path)]) == 0
    assert line in capsys.readouterr().out
    record = json.loads(path.with_name(path.name + ".lock").read_text(encoding="utf-8"))
    assert record["held_out"]["n"] == len(load_design(path).held_out)


def test_report_states_the_estimand(tmp_path):
    from analysis.report import ReportDesign
    from analysis.report.markdown import _prespecified_section
    from analysis.study.results import report_design

    path = _stratified_example(tmp_path / "toy.toml")
    assert report_design(load_design(path)).held_out_estimand.startswith("new heads: ")
    for held_out, sentence in (
        (
            {"unit": "layer", "estimand": "new layers"},
            HeldOutRule(("checkpoint",), "layer").sentence,
        ),
        ({}, None),
    ):
        rule = held_out_rule({"held_out": held_out})
        assert rule.sentence == sentence
        view = ReportDesign(held_out=("a:0:0",), held_out_estimand=rule.sentence)
        text = "\n".join(
            _prespecified_section(SimpleNamespace(design=view, provenance={}, comparison=None))
        )
        assert ("Held-out estimand: new layers: whole" in text) == (sentence is not None)
        assert ("Held-out estimand" in text) == (sentence is not None)
