"""How far did a study's intrinsic covariates move between two descriptor runs?

A descriptor block that changes version (``attnrank prereg amend``) is recomputed on every
stored matrix. This experiment compares two copies of a study's feature folder
(``data/<stem>/features``, one CSV per matrix, rows per temperature and eps) cell by cell:
the relative change of ``Pi``, and in how many cells ``r_star`` and ``interaction_dim``
changed, with the median and largest kappa gap at ``r*`` of each. Copy the folder before
the change, rerun the study's descriptor stage, then::

    python -m experiments.feature_drift OLD_FEATURES data/offline-families/features

(The four-family study's Amendment 1: docs/results/families-study.md.)
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.common import command_line

PI, R_STAR, DIM, GAP = (
    "intrinsic__Pi",
    "intrinsic__r_star",
    "intrinsic__interaction_dim",
    "intrinsic__kappa_gap_star",
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old", type=Path, help="feature folder before the change")
    ap.add_argument("new", type=Path, help="feature folder after the change")
    args = ap.parse_args()
    print(command_line("experiments.feature_drift"), flush=True)
    rel: list[np.ndarray] = []
    cells = files = r_changed = dim_changed = 0
    gaps_old, gaps_new = [], []
    for f in sorted(args.old.glob("*.csv")):
        g = args.new / f.name
        if not g.exists():
            continue
        a, b = pd.read_csv(f), pd.read_csv(g)
        if PI not in a or PI not in b:
            continue
        key = ["temperature", "eps"] + [c for c in ("layer", "head") if c in a]
        a, b = a.sort_values(key).reset_index(drop=True), b.sort_values(key).reset_index(drop=True)
        if not a[key].equals(b[key]):
            raise SystemExit(f"{f.name}: the two runs describe different cells")
        files += 1
        cells += len(a)
        pa, pb = a[PI].to_numpy(), b[PI].to_numpy()
        ok = np.isfinite(pa) & np.isfinite(pb)
        rel.append(np.abs(pb[ok] - pa[ok]) / np.maximum(np.abs(pa[ok]), 1e-9))
        r_changed += int((a[R_STAR].fillna(-1) != b[R_STAR].fillna(-1)).sum())
        dim_changed += int((a[DIM].fillna(-1) != b[DIM].fillna(-1)).sum())
        gaps_old.append(a[GAP].dropna().to_numpy())
        gaps_new.append(b[GAP].dropna().to_numpy())
    if not cells:
        raise SystemExit("no feature file with intrinsic columns in both folders")
    r = np.concatenate(rel)
    go, gn = np.concatenate(gaps_old), np.concatenate(gaps_new)
    print(
        f"{files} matrices, {cells} cells: Pi relative change median {np.median(r):.2e}, "
        f"99th percentile {np.quantile(r, 0.99):.2e}, largest {r.max():.2e}; r_star changed "
        f"in {r_changed} cells, interaction_dim in {dim_changed}"
    )
    print(
        f"kappa gap at r*: median {np.median(go):.2e} -> {np.median(gn):.2e}, "
        f"largest {go.max():.2e} -> {gn.max():.2e}"
    )


if __name__ == "__main__":
    main()
