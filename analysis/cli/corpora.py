"""``attnrank inputs list | show``: what a design's input seeds pick, before any matrix.

``list DESIGN`` prints every planned input (checkpoint, length, seed, input id, source,
licence; tokens of a text, pixels of an image, seconds of a clip; tokenizers only, no
weights); ``list --corpus NAME`` every item of a packaged corpus (text, images, speech)
in seed order with its summary; ``show ID`` one text document and its text.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

__all__ = ["register"]

#: Packaged corpora ``list --corpus`` prints (analysis.prereg.corpora).
CORPORA = (
    "packaged-text-v1",
    "packaged-text-multilingual-v1",
    "packaged-images-v1",
    "packaged-images-v2",
    "kokoro-ja-v1",
)

_COLUMNS = ("checkpoint", "length", "seed", "input_id", "genre", "licence", "tokens", "size")


def _cell(value: Any) -> str:
    return "-" if value is None else str(value)


def _print_rows(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> None:
    table = [[_cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(t[i]) for t in table]) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    for t in table:
        print("  ".join(v.ljust(w) for v, w in zip(t, widths, strict=True)).rstrip())


def _run_list(args: argparse.Namespace) -> int:
    from analysis.study.inputs import corpus_listing, corpus_summary, design_inputs

    if args.corpus is not None:
        summary, rows = corpus_summary(args.corpus), corpus_listing(args.corpus)
        if args.json:
            print(json.dumps({"summary": summary, "documents": rows}, indent=1))
            return 0
        print(json.dumps(summary, indent=1))
        size = "seconds" if rows and "seconds" in rows[0] else "characters"
        _print_rows(rows, ("seed", "input_id", "genre", "licence", size))
        return 0
    from analysis.prereg.design import load_design

    rows = design_inputs(
        load_design(args.design, require_held_out=False), tokens=not args.no_tokens
    )
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    _print_rows(rows, _COLUMNS)
    counts = []
    for kind in ("text", "image", "speech"):
        mine = [r for r in rows if r.get("modality") == kind and r.get("input_id")]
        if mine:
            distinct = len({r["input_id"] for r in mine})
            counts.append(f"{kind}: {len(mine)} resolved, {distinct} distinct input ids")
    print(f"{len(rows)} inputs; " + "; ".join(counts))
    problems = [r for r in rows if r.get("problem")]
    for r in problems:
        print(f"problem: {r['label']}: {r['problem']}")
    return 1 if problems else 0


def _run_show(args: argparse.Namespace) -> int:
    from analysis.study.inputs import show_input

    row = show_input(args.id, checkpoint=args.tokenizer)
    if args.json:
        print(json.dumps(row, indent=1))
        return 0
    text = row.pop("text")
    for key, value in row.items():
        print(f"{key}: {_cell(value)}")
    print()
    print(text if args.chars is None else text[: args.chars])
    return 0


def register(subparsers: Any) -> None:
    """Add ``inputs`` (``list``, ``show``) to ``subparsers``."""
    g = subparsers.add_parser(
        "inputs",
        help="what a design's input seeds pick (ids, sources, licences, token counts), "
        "before anything is computed",
        description="`inputs list DESIGN` resolves every planned input of a design without a "
        "forward pass (tokenizers only), so a design can be checked before its lock; "
        "`inputs list --corpus NAME` lists a packaged corpus; `inputs show ID` prints "
        "one document. docs/sources.md, 'Input corpora'.",
    )
    sub = g.add_subparsers(dest="inputs_command", metavar="ACTION")
    sub.required = True
    lst = sub.add_parser(
        "list",
        help="the inputs a design's seeds pick, or a corpus's documents",
        description="One line per planned input: checkpoint, length, seed, input id, genre, "
        "licence, tokens, size (pixels, seconds). Exit 1 when a document is shorter than its length.",
    )
    which = lst.add_mutually_exclusive_group(required=True)
    which.add_argument("design", nargs="?", metavar="DESIGN.toml", help="a design file")
    which.add_argument(
        "--corpus",
        choices=CORPORA,
        help="list a packaged corpus instead (seed i reads row i mod n)",
    )
    lst.add_argument(
        "--no-tokens",
        action="store_true",
        help="skip the tokenizers (no token counts; pydoc_data.topics picks, which depend "
        "on them, are not resolved)",
    )
    lst.add_argument("--json", action="store_true", help="JSON instead of a table")
    lst.set_defaults(func=_run_list)
    show = sub.add_parser(
        "show",
        help="one packaged document: provenance and text",
        description="ID: an input id (corpus:packaged-text-v1/KEY@DIGEST), CORPUS:SEED "
        "(packaged-text-v1:61206) or a document key of packaged-text-v1 (stdlib-doc/json).",
    )
    show.add_argument("id", metavar="ID", help="input id, CORPUS:SEED or document key")
    show.add_argument(
        "--tokenizer", metavar="CHECKPOINT", help="count tokens with this checkpoint's tokenizer"
    )
    show.add_argument("--chars", type=int, metavar="N", help="print only the first N characters")
    show.add_argument("--json", action="store_true", help="JSON instead of text")
    show.set_defaults(func=_run_show)
