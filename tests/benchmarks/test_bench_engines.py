"""benchmarks/bench_engines.py: the end-by-end comparison of engines."""

import pandas as pd

from benchmarks.bench_engines import versus_first


def test_versus_first_counts_ends_above_equal_below():
    rows = []
    for head, (lo5, lo6, hi6) in enumerate([(3, 4, 5), (3, 3, 4), (4, 3, 5)]):
        rows.append(
            {"engine": 5, "head": head, "temperature": 1.0, "eps": 0.1} | {"lower": lo5, "upper": 5}
        )
        rows.append(
            {"engine": 6, "head": head, "temperature": 1.0, "eps": 0.1}
            | {"lower": lo6, "upper": hi6}
        )
    got = versus_first(pd.DataFrame(rows), [5, 6])
    assert got == {
        "6 vs 5": {
            "lower": {"above": 1, "equal": 1, "below": 1},
            "upper": {"above": 0, "equal": 2, "below": 1},
        }
    }
