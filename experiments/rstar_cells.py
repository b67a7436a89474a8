"""Re-describe one head of the paper-lengths design under several intrinsic block versions.

Where a benchmark reports only the largest relative difference of a covariate between two
block versions (``benchmarks.bench_cost``), this prints the values themselves: for one
(checkpoint, layer, head), every planned input of the design at the given length, the
intrinsic block's ``r_star``, ``kappa_star`` and the solve's gap at ``r_star`` per eps,
under each version asked for, one thread; ``--ranks`` adds the per-rank kappa, its gap and
the profile bound at those ranks (NaN where a version pruned the rank unsolved).

Run from the repository root::

    python -m experiments.rstar_cells --checkpoint whisper-base --layer 0 --head 0 --length 128 \\
        --versions 1 2 3 --ranks 26 28
    python -m experiments.rstar_cells --checkpoint dinov2 --layer 11 --head 0 --length 145 \\
        --versions 1 2 3
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
from pathlib import Path

import pandas as pd

from experiments.common import command_line

DESIGN = Path(__file__).resolve().parents[1] / "preregistration" / "paper-lengths.toml"
COLUMNS = ["intrinsic__r_star", "intrinsic__kappa_star", "intrinsic__kappa_gap_star"]


def describe_head(
    checkpoint: str,
    layer: int,
    head: int,
    length: int,
    versions: list[int],
    design: Path,
    ranks: tuple[int, ...] | list[int] = (),
) -> pd.DataFrame:
    """One row per (input, version, eps) with the intrinsic block's r*, kappa* and gap (and
    the per-rank diagnostics of ``ranks``)."""
    import torch

    from analysis.prereg import load_design
    from analysis.sources.checkpoints import load_checkpoint
    from analysis.store import Store
    from analysis.study.describe import describe_frame
    from analysis.study.plan import plan_study
    from analysis.study.stages import extract_input

    torch.set_num_threads(1)
    plan = plan_study(load_design(design))
    names = sorted({t.checkpoint for t in plan.extractions if checkpoint in t.checkpoint})
    if len(names) != 1:
        raise SystemExit(f"--checkpoint: expected one of the design's checkpoints, got {names}")
    tasks = [
        dataclasses.replace(t, heads=((layer, head),))
        for t in plan.extractions
        if t.checkpoint == names[0]
    ]
    frames = []
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "s", create=True) as store:
        model = load_checkpoint(names[0])
        keys = [
            k for t in tasks for k in store.add_extraction(extract_input(model, t), heads=t.heads)
        ]
        for key in keys:
            arrays = store.arrays(key)
            if arrays.A.shape[1] != length:
                continue
            for v in versions:
                chosen = tuple(sorted({**dict(plan.versions), "intrinsic": v}.items()))
                df = describe_frame(arrays, plan.eps, plan.temperatures, plan.blocks, (), chosen)
                per_rank = [
                    f"intrinsic__{name}_r{r}"
                    for r in ranks
                    for name in ("kappa", "kappa_gap", "profile")
                ]
                df = df.reindex(columns=["eps", *COLUMNS, *per_rank])
                frames.append(df.assign(matrix=key[:8], version=v))
    if not frames:
        raise SystemExit(f"--length: no planned input of {names[0]} has N = {length}")
    return pd.concat(frames, ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", required=True, help="part of the checkpoint's id")
    parser.add_argument("--layer", type=int, required=True)
    parser.add_argument("--head", type=int, required=True)
    parser.add_argument("--length", type=int, required=True, help="N of the inputs to describe")
    parser.add_argument("--versions", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--design", type=Path, default=DESIGN)
    parser.add_argument("--ranks", type=int, nargs="*", default=[], help="per-rank columns")
    args = parser.parse_args()
    table = describe_head(
        args.checkpoint, args.layer, args.head, args.length, args.versions, args.design, args.ranks
    )
    print(command_line("experiments.rstar_cells"))
    values = [c for c in table.columns if c.startswith("intrinsic__")]
    wide = table.pivot_table(
        index=["matrix", "eps"], columns="version", values=values, dropna=False
    )
    with pd.option_context("display.width", 250, "display.max_columns", None):
        print(wide.rename(columns=lambda c: str(c).replace("intrinsic__", "")).to_string())


if __name__ == "__main__":
    main()
