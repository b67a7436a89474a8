"""Shared helpers of the benchmarks: MiniLM heads, the eps grid, outputs.

Run the scripts as modules from the repository root (``python -m benchmarks.bench_brackets``);
they import this module as ``benchmarks.common`` (the experiments have their own,
``experiments.common``). The MiniLM heads come from the package (:mod:`analysis.study.reference`: the packaged
weights on a bundled ``pydoc_data.topics`` text), so a benchmark measures the same matrices
that ``attnrank reference-widths`` brackets.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

import numpy as np

from analysis.study.reference import corpus_heads

#: The repository root (paths are resolved from here, never from the working directory).
ROOT = Path(__file__).resolve().parents[1]
#: Where benchmarks write (gitignored).
OUT = ROOT / "benchmarks" / "out"
#: The eps grid of issue 2's numbers.
EPS = (0.05, 0.1, 0.2)


def command_line(module: str) -> str:
    """The command that is running, as ``python -m <module> <args>`` (printed by scripts)."""
    return " ".join(["python -m", module, *map(shlex.quote, sys.argv[1:])])


def minilm_attention(length: int, *, topic_index: int | None = None) -> np.ndarray:
    """Return MiniLM attention ``[layer * head, length, length]`` (float64, eager).

    The input is the ``topic_index``-th pydoc topic (sorted by name; default the package's
    topic for the length, else 0) that has at least ``length`` tokens, truncated to
    ``length`` tokens including special tokens (:func:`analysis.study.reference.corpus_heads`). The float32 forward pass runs on 2
    torch threads (the package's ``FORWARD_THREADS``); another count changes the last bits
    of the heads, and can move a bracket end at a near miss (docs/sources.md,
    Reproducibility).
    """
    return corpus_heads("minilm", length, topic_index=topic_index)


def minilm_extract_npz(path: Path, length: int, *, corpus_seed: int = 0) -> str:
    """Write ``attnrank extract minilm --corpus-seed S --length L`` to ``path`` (the
    package's own extraction, with Q and K); return the input's id."""
    from analysis.sources.extract import extract
    from analysis.sources.files import save_extraction

    ex = extract("minilm", corpus_seed=corpus_seed, length=length)
    save_extraction(ex, path)
    return ex.input_id


#: The default study's design (``make run``), which some benchmarks re-run in a temp root.
DEFAULT_DESIGN = ROOT / "preregistration" / "offline-minilm.toml"


def extracted_default_study(parent: Path, *, folder: str = "extracted") -> Path:
    """A study root under ``parent`` holding the default design, its lock and the power
    file the lock names (not its outcome record), with its inputs extracted; returns it."""
    from analysis.study import StudyOptions, run_study

    root = parent / folder
    (root / "preregistration").mkdir(parents=True)
    design = DEFAULT_DESIGN
    for name in (design.name, f"{design.name}.lock", f"{design.stem}.power.json"):
        if (design.parent / name).exists():
            shutil.copy2(design.parent / name, root / "preregistration" / name)
    run_study(
        root / "preregistration" / design.name,
        say=lambda _: None,
        options=StudyOptions(stop_after="extract", progress=False),
    )
    return root
