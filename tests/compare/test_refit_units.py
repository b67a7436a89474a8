"""The refit bootstrap's resample when a unit holds training and held-out heads: under
``[held_out] stratify = ["checkpoint", "layer"]`` every (checkpoint, layer) has both, and
``[inference] cluster = "checkpoint_layer"`` resamples those units."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.compare.refit import resample_units


def _table() -> pd.DataFrame:
    """2 checkpoints x 3 layers x 4 heads (heads 0, 1 training, 2, 3 held out), 2 cells each."""
    rows = []
    for ck in ("org/a", "org/b"):
        for layer in range(3):
            for head in range(4):
                for cell in range(2):
                    rows.append(
                        {
                            "cell_key": f"{ck}:{layer}:{head}:{cell}",
                            "cluster": f"{ck}:{layer}:{head}",
                            "checkpoint_layer": f"{ck}:{layer}",
                            "stratum": ck,
                            "held_out": head >= 2,
                        }
                    )
    return pd.DataFrame(rows)


def _drawn(sub: pd.DataFrame) -> dict[tuple[bool, str], list[str]]:
    """Per (side, checkpoint): the units drawn (suffix removed), sorted."""
    base = sub["checkpoint_layer"].str.replace(r"#\d+$", "", regex=True)
    copies = sub.assign(unit=base).drop_duplicates("checkpoint_layer")
    return {
        (bool(side), str(s)): sorted(g["unit"])
        for (side, s), g in copies.groupby(["held_out", "stratum"])
    }


def test_each_side_of_a_unit_is_resampled_on_its_own():
    table = _table()
    rng = np.random.default_rng(0)
    seen: dict[tuple[bool, str], set] = {}
    for _ in range(40):
        sub = resample_units(table, "checkpoint_layer", rng)
        assert len(sub) == len(table)  # every side keeps its number of units and rows
        # a drawn copy brings one side's rows only
        assert sub.groupby("checkpoint_layer")["held_out"].nunique().max() == 1
        drawn = _drawn(sub)
        assert set(drawn) == {(h, s) for h in (False, True) for s in ("org/a", "org/b")}
        for key, units in drawn.items():
            assert len(units) == 3 and {u.rsplit(":", 1)[0] for u in units} == {key[1]}
            seen.setdefault(key, set()).add(tuple(units))
    # every (side, checkpoint) is a pool of 3 units drawn with replacement: 10 multisets
    # are possible; 40 draws show several on each side (before the fix each unit was
    # pooled on the side of its first row only, and each side kept its units as they were)
    assert all(len(s) >= 4 for s in seen.values())


def test_units_on_one_side_resample_as_before():
    """Head units (each a training or a held-out head): the draws are the pools' own."""
    table = _table()
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    sub = resample_units(table, "cluster", rng_a)
    # the same draws by hand: per (side, checkpoint) in sorted order, heads in table order
    heads = table.drop_duplicates("cluster")
    expected = []
    for _, grp in heads.groupby(["held_out", "stratum"], sort=True):
        expected += list(rng_b.choice(grp["cluster"].to_numpy(), size=len(grp), replace=True))
    got = list(sub.drop_duplicates("cluster")["cluster"].str.replace(r"#\d+$", "", regex=True))
    assert got == expected
