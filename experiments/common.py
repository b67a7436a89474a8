"""Shared helpers of the experiments: MiniLM heads, the eps grid, the per-head pool, outputs.

Run the scripts as modules from the repository root (``python -m experiments.closure_limits``);
they import this module as ``experiments.common`` and nothing of ``benchmarks/``. The MiniLM
heads come from the package (:mod:`analysis.study.reference`: the packaged weights on a
bundled ``pydoc_data.topics`` text), the same matrices that ``attnrank reference-widths``
brackets and the benchmarks measure.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.attention import softmax64
from analysis.study.reference import corpus_extraction, corpus_heads

#: The repository root (paths are resolved from here, never from the working directory).
ROOT = Path(__file__).resolve().parents[1]
#: Where experiments write (gitignored).
OUT = ROOT / "experiments" / "out"
#: The eps grid of issue 2's numbers.
EPS = (0.05, 0.1, 0.2)


def command_line(module: str) -> str:
    """The command that is running, as ``python -m <module> <args>`` (printed by scripts)."""
    return " ".join(["python -m", module, *map(shlex.quote, sys.argv[1:])])


def diagnostic_profile(A: np.ndarray):
    """The engine's profile of one head as the per-head diagnostics read it: ``default``
    effort over :data:`EPS`, unpruned (failed sizes kept), one torch thread (the
    diagnostics run one head per worker process)."""
    import torch

    from analysis.brackets import profile_matrix

    torch.set_num_threads(1)
    return profile_matrix(A, eps=EPS, effort="default", prune=False)


def near_misses(prof) -> list[tuple[float, int, int]]:
    """``(eps, lo, hi)`` for each eps of :data:`EPS` whose bracket has width 1 or 2."""
    brackets = [(e, *prof.bracket(e)) for e in EPS]
    return [(e, lo, hi) for e, lo, hi in brackets if 1 <= hi - lo <= 2]


def minilm_attention(length: int, *, topic_index: int | None = None) -> np.ndarray:
    """MiniLM attention ``[layer * head, length, length]`` (float64) on the bundled text of
    the length (:func:`analysis.study.reference.corpus_heads`), as the benchmarks use it."""
    return corpus_heads("minilm", length, topic_index=topic_index)


def heads_at(length: int, temps: list[float]) -> np.ndarray:
    """``[layer * head, T, L, L]``: the bundled text's MiniLM heads at each temperature."""
    ex = corpus_extraction("minilm", length)
    mats = [softmax64(ex.Q, ex.K, ex.scale, ex.mask, t, ex.bias) for t in temps]
    return np.stack(mats, axis=2).reshape(-1, len(temps), length, length)


def minilm_extract_npz(path: Path, length: int, *, corpus_seed: int = 0) -> str:
    """Write ``attnrank extract minilm --corpus-seed S --length L`` to ``path`` (the
    package's own extraction, with Q and K); return the input's id."""
    from analysis.sources.extract import extract
    from analysis.sources.files import save_extraction

    ex = extract("minilm", corpus_seed=corpus_seed, length=length)
    save_extraction(ex, path)
    return ex.input_id


def map_heads(one_head: Callable[..., list[dict]], jobs: Iterable, workers: int) -> list[dict]:
    """Run ``one_head`` on every job in ``workers`` processes; its row lists, concatenated
    in job order (the per-head diagnostics' common driver)."""
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return [r for part in pool.map(one_head, jobs) for r in part]


def head_table(
    one_head: Callable[[tuple], list[dict]],
    options: Sequence,
    *,
    length: int,
    heads: int,
    workers: int,
    csv_name: str,
) -> pd.DataFrame:
    """Run ``one_head((index, A, *options))`` on the first ``heads`` MiniLM heads at
    ``length`` in ``workers`` processes; the rows as one table, also written to
    ``experiments/out/<csv_name>``."""
    A_all = minilm_attention(length)[:heads]
    jobs = [(i, A.astype(np.float64), *options) for i, A in enumerate(A_all)]
    df = pd.DataFrame(map_heads(one_head, jobs, workers))
    OUT.mkdir(parents=True, exist_ok=True)
    df.to_csv(OUT / csv_name, index=False)
    return df
