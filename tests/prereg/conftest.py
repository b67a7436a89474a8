"""A small design (2 checkpoints, 20 heads) written to a temporary folder."""

from __future__ import annotations

from pathlib import Path

import pytest

SMALL_DESIGN = """\
# A toy design for tests.
title = "toy"
effort = "fast"

[[hypotheses]]
id = "H1"
kind = "confirmatory"
pair = ["M0", "M1"]
statement = "native adds information"

[sampling]
checkpoints_preexist = true
temperatures = [1.0, 2.0]
eps = [0.1, 0.2]
lengths = [16]

[sampling.inputs]
source = "corpus"
seed = 0
per_length = 1

[[sampling.sources]]
kind = "checkpoint"
checkpoint = "org/tiny-a"
layers = 2
heads = 6

[[sampling.sources]]
kind = "checkpoint"
checkpoint = "org/tiny-b"
layers = 2
heads = 4

[[sampling.sources]]
kind = "synthetic"
family = "spherical"
exploratory = true

[held_out]
seed = 7
fraction = 0.25

[outcome]
quantity = "r_eps"
transform = "log2"
observed_as = "interval"

[models]
M0 = ["baseline"]
M1 = ["baseline", "native"]
M2 = ["baseline", "intrinsic"]

[descriptors]
plugins = []

[metrics]
primary = "interval_sq_loss"
secondary = ["interval_loglik"]

[inference]
bootstrap_replicates = 199
seed = 1
alpha = 0.05
family = [["M0", "M1"], ["M0", "M2"]]

[exclusions]
rules = ["none"]

[exploratory]
analyses = []
"""


@pytest.fixture
def design_text() -> str:
    return SMALL_DESIGN


@pytest.fixture
def design_file(tmp_path: Path) -> Path:
    """The toy design with its held-out list drawn (not locked)."""
    from analysis.prereg import draw_held_out, load_design, write_held_out

    path = tmp_path / "preregistration" / "toy.toml"
    path.parent.mkdir()
    path.write_text(SMALL_DESIGN, encoding="utf-8")
    design = load_design(path, require_held_out=False)
    write_held_out(path, draw_held_out(design.data))
    return path
