"""benchmarks/bench_bracket_cli.py: the arithmetic of its breakdown."""

import pytest

from benchmarks.bench_bracket_cli import balanced_makespan, brackets_of, median_hi_lo


def test_makespan_hands_blocks_in_order_to_the_first_free_worker():
    # 70 | 138; 84 -> worker 1 (free at 70); 68 -> worker 2 (138 < 154); 88 -> worker 1
    # (154); 40 -> worker 2 (206): they end at 242 and 246
    assert balanced_makespan([70, 138, 84, 68, 88, 40], 2) == 246
    assert balanced_makespan([5, 5, 5], 1) == 15
    assert balanced_makespan([3, 1, 1, 1], 3) == 3


def test_median_hi_lo_counts_lo_zero_as_one():
    res = {
        "matrices": [
            {"index": 0, "brackets": [{"eps": 0.1, "lower": 0, "upper": 3}]},
            {"index": 1, "brackets": [{"eps": 0.1, "lower": 1, "upper": 2}]},
            {"index": 2, "brackets": [{"eps": 0.1, "lower": 0, "upper": 4}]},
        ]
    }
    med, by_eps = median_hi_lo(res)
    assert med == pytest.approx(3.0) and by_eps == {"0.1": pytest.approx(3.0)}  # of 3, 2, 4
    assert brackets_of(res) == [(0, 0.1, 0, 3), (1, 0.1, 1, 2), (2, 0.1, 0, 4)]
