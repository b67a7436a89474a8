"""Which corpus texts would a design's input seeds pick, and do they collide?

A study's inputs are picked by seed (``[sampling.inputs] seed = s, per_length = k``: seeds
s .. s+k-1, each the first corpus topic long enough under ``default_rng(seed)``'s order,
:func:`analysis.sources.corpus_text`), so two seeds can pick the same text, and a new
study's seeds can pick a text an earlier study used. This reads only the tokenizers (token
counts of the 79 ``pydoc_data.topics`` texts, no forward pass, no outcome) and lists, for
candidate seeds, the texts each picks per (checkpoint, length) and every collision: within
a design's seeds, with a pilot's, and with seeds used before. It is how the paper-lengths
design's input seeds were chosen before its lock.

Usage::

    python -m experiments.fresh_inputs --checkpoint minilm mpnet smollm2 e5-small \\
        flan-t5-small-span kokoro-albert --lengths 64 128 256 --seeds 61206 61207 61208 \\
        --pilot 61300 --used 0 1 [--search 61200 61400]
"""

from __future__ import annotations

import argparse
import json

import numpy as np


def token_counts(alias: str, cap: int) -> dict[str, int]:
    """Tokens of every corpus topic under ``alias``'s tokenizer, truncated at ``cap``."""
    from pydoc_data.topics import topics

    from analysis.sources.checkpoints import load_checkpoint

    tok = load_checkpoint(alias).tokenizer
    return {
        name: len(tok(topics[name], truncation=True, max_length=cap)["input_ids"])
        for name in sorted(topics)
    }


def pick(counts: dict[str, int], seed: int, length: int) -> str | None:
    """The topic :func:`analysis.sources.corpus_text` picks for ``seed`` at ``length``."""
    names = sorted(counts)
    for i in np.random.default_rng(seed).permutation(len(names)):
        if counts[names[int(i)]] >= length:
            return names[int(i)]
    return None


def collisions(
    counts: dict[str, dict[str, int]],
    lengths: list[int],
    seeds: list[int],
    pilot: list[int],
    used: list[int],
) -> list[str]:
    out = []
    for alias, c in counts.items():
        for L in lengths:
            mine = [pick(c, s, L) for s in seeds]
            theirs = {pick(c, s, L) for s in pilot}
            old = {pick(c, s, L) for s in used}
            if None in mine:
                out.append(f"{alias} L={L}: no topic long enough")
            if len(set(mine)) < len(mine):
                out.append(f"{alias} L={L}: seeds {seeds} repeat a topic {mine}")
            for t in set(mine) & (theirs | old):
                out.append(f"{alias} L={L}: {t} also picked by the pilot or an earlier seed")
            if pilot and (theirs & old):
                out.append(f"{alias} L={L}: the pilot repeats an earlier seed's topic")
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", nargs="+", required=True)
    p.add_argument("--lengths", nargs="+", type=int, required=True)
    p.add_argument("--seeds", nargs="+", type=int, required=True)
    p.add_argument("--pilot", nargs="*", type=int, default=[])
    p.add_argument("--used", nargs="*", type=int, default=[0, 1])
    p.add_argument(
        "--search",
        nargs=2,
        type=int,
        metavar=("FROM", "TO"),
        help="find the first start seed s in [FROM, TO) whose k consecutive seeds "
        "(k = len(--seeds)) and pilot s + 100 collide nowhere",
    )
    args = p.parse_args()
    cap = max(args.lengths)
    counts = {a: token_counts(a, cap) for a in args.checkpoint}
    if args.search:
        k = len(args.seeds)
        for s in range(*args.search):
            seeds, pilot = list(range(s, s + k)), [s + 100]
            if not collisions(counts, args.lengths, seeds, pilot, args.used):
                print(json.dumps({"seeds": seeds, "pilot": pilot, "used": args.used}))
                break
        else:
            print("no collision-free seeds in the range")
        return
    bad = collisions(counts, args.lengths, args.seeds, args.pilot, args.used)
    for alias, c in counts.items():
        for L in args.lengths:
            print(
                alias,
                L,
                [pick(c, s, L) for s in args.seeds],
                "pilot",
                [pick(c, s, L) for s in args.pilot],
            )
    print("\n".join(bad) if bad else "no collision")


if __name__ == "__main__":
    main()
