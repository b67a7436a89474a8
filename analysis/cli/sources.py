"""``attnrank extract CHECKPOINT``: per-head A, Q, K, scale and mask of one input."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from analysis.validation import ParameterError

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from analysis.cli.outputs import check_output_file
    from analysis.sources.extract import extract
    from analysis.sources.files import save_extraction

    check_output_file("out", args.out)  # before the model is loaded
    ex = extract(
        args.checkpoint,
        text=None if args.text is None else Path(args.text),  # --text is always a file
        image=args.image,
        corpus_seed=args.corpus_seed,
        length=args.length,
        text_corpus=args.text_corpus,
    )
    try:
        out = save_extraction(ex, args.out)
    except OSError as exc:  # checked writable at the start: a full disk, a folder gone
        raise ParameterError(
            "out", "a path that can be written", f"{args.out}: {exc.strerror}"
        ) from exc
    n_layers, n_heads, L, _ = ex.A.shape
    print(
        f"wrote {out}: {ex.checkpoint_id}, {n_layers} layers x {n_heads} heads, L={L}, "
        f"d={ex.Q.shape[-1]}, causal={ex.causal}, input {ex.input_id}; "
        f"max |softmax64(Q, K, scale, mask{', bias' if ex.bias is not None else ''}) - A| = "
        f"{ex.meta['parity_max_abs']:.2e}"
    )
    return 0


def _checkpoint_help() -> str:
    """The CHECKPOINT help: every packaged alias (from :data:`PACKAGED`, so a new family
    appears without editing this text), then the other ways to name a checkpoint."""
    from analysis.sources.packaged import PACKAGED

    families = ["minilm (all-minilm-l6-v2)"]
    for spec in PACKAGED:
        first, *rest = spec.aliases
        notes = ", ".join(rest) + ("; optional: make gemma" if spec.optional else "")
        families.append(f"{first} ({notes})" if notes else first)
    return (
        "a packaged checkpoint, by alias: "
        + "; ".join(families)
        + ". Or a local folder, or a Hugging Face id already in the local cache "
        "(bert-base-uncased, gpt2, Qwen/Qwen2.5-0.5B, google/vit-base-patch16-224, "
        "facebook/deit-small-patch16-224, sentence-transformers/all-MiniLM-L6-v2)"
    )


def register(subparsers: Any) -> None:
    """Add ``extract``."""
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
        help=_checkpoint_help(),
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--text", metavar="FILE", help="UTF-8 text file (its first L tokens)")
    src.add_argument("--image", metavar="FILE", help="image file (resized to L = 1 + P patches)")
    src.add_argument(
        "--corpus-seed",
        type=int,
        metavar="S",
        help="pick a bundled text (pydoc_data.topics) or sample image deterministically; "
        "for a speech encoder (whisper-base, whisper-tiny.en) the seed's generated clip",
    )
    p.add_argument(
        "--text-corpus",
        metavar="NAME",
        choices=("pydoc_data.topics", "packaged-text-v1", "packaged-text-multilingual-v1"),
        help="with --corpus-seed on a text checkpoint: the corpus (default pydoc_data.topics, "
        "as before; packaged-text-v1: over 300 documents of seven genres, seed S reads document "
        "S mod n; `attnrank inputs show` prints one)",
    )
    p.add_argument(
        "--length",
        type=int,
        metavar="L",
        help="positions incl. special tokens (text: required; images: 1 + P, P square; "
        "default native; speech: required, encoder positions = 2 L log-mel frames, 20 ms each)",
    )
    p.add_argument("--out", required=True, metavar="OUT.npz", help="output file (atomic write)")
    p.set_defaults(func=_run)
