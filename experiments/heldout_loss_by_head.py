"""Which held-out heads carry a study's pooled effect, and what is it without them?

Reads a finished study's held-out predictions (``data/<stem>/results/held_out_predictions.csv``,
written by the compare stage: one row per held-out cell and model with the prediction and
the interval ends of log2 r_eps) and, for one nested pair, prints the interval squared loss
of each model per held-out head, the heads where the rich model loses most, the share of the
pooled effect they carry, and the pooled cell-weighted effect with them left out. A
description of the released held-out cells, with no refit and no new decision::

    python -m experiments.heldout_loss_by_head data/paper-lengths/results --pair M0 M1 --top 5

(The paper-lengths study: docs/results/paper-lengths.md, "Where the native block's loss comes from".)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from analysis.compare.metrics import interval_sq_loss
from experiments.common import command_line


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", type=Path, help="a study's results folder (data/<stem>/results)")
    ap.add_argument("--pair", nargs=2, default=["M0", "M1"], metavar=("BASE", "RICH"))
    ap.add_argument("--top", type=int, default=5, help="heads to list and leave out")
    args = ap.parse_args()
    print(command_line("experiments.heldout_loss_by_head"), flush=True)
    base, rich = args.pair
    pred = pd.read_csv(args.results / "held_out_predictions.csv", comment="#")
    pred = pred[pred["model"].isin([base, rich])].copy()
    pred["loss"] = interval_sq_loss(
        pred["y_hat"].to_numpy(), pred["y_lower"].to_numpy(), pred["y_upper"].to_numpy()
    )
    cells = pred.pivot_table(index=["cell_key", "cluster"], columns="model", values="loss")
    cells = cells.reset_index()
    cells["effect"] = cells[base] - cells[rich]  # > 0: the rich model helps
    heads = cells.groupby("cluster").agg(
        cells=("effect", "size"),
        base=(base, "mean"),
        rich=(rich, "mean"),
        effect=("effect", "mean"),
    )
    worst = heads.sort_values("effect").head(args.top)
    total = cells["effect"].sum()
    print(
        f"{len(heads)} held-out heads, {len(cells)} cells; pooled effect {total / len(cells):+.6f}"
    )
    print(f"heads where {rich} loses most to {base} (mean interval squared loss per cell):")
    print(worst.to_string(float_format=lambda v: f"{v:.6f}"))
    share = cells.loc[cells["cluster"].isin(worst.index), "effect"].sum() / total
    rest = cells[~cells["cluster"].isin(worst.index)]
    print(f"these {len(worst)} heads carry {share:.1%} of the pooled effect's sum")
    print(
        f"pooled effect without them: {rest['effect'].mean():+.6f} "
        f"({base} {rest[base].mean():.6f}, {rich} {rest[rich].mean():.6f}; {len(rest)} cells)"
    )


if __name__ == "__main__":
    main()
