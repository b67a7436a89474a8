"""``attnrank extract``: per-head A, Q, K, scale and mask of one input through a checkpoint."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from analysis.validation import ParameterError

__all__ = ["extract", "register"]


def extract(
    checkpoint: Any,
    *,
    text: str | Path | None = None,
    image: str | Path | None = None,
    corpus_seed: int | None = None,
    length: int | None = None,
) -> Any:
    """Load ``checkpoint`` offline and extract one input (exactly one of the three sources).

    Parameters
    ----------
    checkpoint : str, path or model
        Name, alias, local folder or in-memory model (see ``load_checkpoint``).
    text, image : path, optional
        A UTF-8 text file (text models) or an image file (ViT / DeiT).
    corpus_seed : int, optional
        Pick a bundled corpus text (``pydoc_data.topics``) or sample image deterministically.
    length : int, optional
        L, positions including special tokens; required for text, native size for images
        when omitted.

    Returns
    -------
    analysis.sources.checkpoints.Extraction
    """
    from analysis.sources import inputs
    from analysis.sources.checkpoints import extract_from_model, load_checkpoint

    given = [
        name
        for name, v in (("--text", text), ("--image", image), ("--corpus-seed", corpus_seed))
        if v is not None
    ]
    if len(given) != 1:
        raise ParameterError("input", "exactly one of --text, --image, --corpus-seed", given)
    ckpt = load_checkpoint(checkpoint)
    if ckpt.is_vision:
        if text is not None:
            raise ParameterError(
                "--text", "--image or --corpus-seed for an image checkpoint", str(text)
            )
        if image is not None:
            model_input = inputs.image_input(
                ckpt, inputs.read_image(image), length, meta={"file": Path(image).name}
            )
        else:
            model_input = inputs.corpus_image(ckpt, corpus_seed, length)
    else:
        if image is not None:
            raise ParameterError(
                "--image", "--text or --corpus-seed for a text checkpoint", str(image)
            )
        if length is None:
            raise ParameterError("--length", "the number of tokens L for a text checkpoint", None)
        if text is not None:
            model_input = inputs.text_input(
                ckpt, inputs.read_text(text), length, meta={"file": Path(text).name}
            )
        else:
            model_input = inputs.corpus_text(ckpt, corpus_seed, length)
    return extract_from_model(ckpt, model_input)


def _run(args: argparse.Namespace) -> int:
    from analysis.sources.checkpoints import save_extraction

    ex = extract(
        args.checkpoint,
        text=args.text,
        image=args.image,
        corpus_seed=args.corpus_seed,
        length=args.length,
    )
    out = save_extraction(ex, args.out)
    n_layers, n_heads, L, _ = ex.A.shape
    print(
        f"wrote {out}: {ex.checkpoint_id}, {n_layers} layers x {n_heads} heads, L={L}, "
        f"d={ex.Q.shape[-1]}, causal={ex.causal}, input {ex.input_id}; "
        f"max |softmax64(Q, K, scale, mask) - A| = {ex.meta['parity_max_abs']:.2e}"
    )
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "extract",
        help="per-head attention, queries and keys of one input (offline)",
        description=(
            "Run one input through a checkpoint with eager attention and write A [layer, head, "
            "L, L], Q and K [layer, head, L, d], scale [layer, head], mask [L, L], causal, "
            "tokens and meta to an .npz (loads with allow_pickle=False). Nothing is downloaded."
        ),
    )
    p.add_argument(
        "checkpoint",
        metavar="CHECKPOINT",
        help="local folder, 'minilm', or a Hugging Face id already in the local cache "
        "(bert-base-uncased, gpt2, Qwen/Qwen2.5-0.5B, google/vit-base-patch16-224, "
        "facebook/deit-small-patch16-224, sentence-transformers/all-MiniLM-L6-v2)",
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--text", metavar="FILE", help="UTF-8 text file (its first L tokens)")
    src.add_argument("--image", metavar="FILE", help="image file (resized to L = 1 + P patches)")
    src.add_argument(
        "--corpus-seed",
        type=int,
        metavar="S",
        help="pick a bundled text (pydoc_data.topics) or sample image deterministically",
    )
    p.add_argument(
        "--length",
        type=int,
        metavar="L",
        help="positions incl. special tokens (text: required; images: 1 + P, P square; "
        "default native)",
    )
    p.add_argument("--out", required=True, metavar="OUT.npz", help="output file (atomic write)")
    p.set_defaults(func=_run)
