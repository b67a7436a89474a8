"""benchmarks/bench_cost.py: shards partition the seeded sample, and merge back into one run."""

import argparse

import pytest

from benchmarks.bench_cost import DESIGN, _shard, chosen_tasks, merge_shards


def _heads(tasks) -> list[tuple[str, int, int]]:
    return sorted({(t.checkpoint, *h) for t in tasks for h in t.heads})


def test_shards_partition_the_sample_and_each_runs_every_input():
    whole, _, design_heads = chosen_tasks(DESIGN, 0.25, 0)
    parts = [chosen_tasks(DESIGN, 0.25, 0, shard=(k, 3))[0] for k in range(3)]
    heads = [_heads(p) for p in parts]
    assert sorted(h for part in heads for h in part) == _heads(whole)
    assert all(len(h) > 0 for h in heads)
    assert not set(heads[0]) & set(heads[1])
    # every shard keeps every planned input of its checkpoints (the forward passes)
    assert all(len(p) == len(whole) for p in parts)
    assert len(_heads(whole)) == sum(max(1, round(0.25 * n)) for n in design_heads.values())


def test_merge_sums_heads_keeps_rows_and_averages_extraction():
    a = {"rows": [{"i": 0}], "extract_cpu": {"m": 2.0}, "design_heads": {"m": 4}, "heads": 1}
    b = {"rows": [{"i": 1}], "extract_cpu": {"m": 4.0}, "design_heads": {"m": 4}, "heads": 2}
    got = merge_shards([a | {"eps": [0.1]}, b | {"eps": [0.1]}])
    assert got["rows"] == [{"i": 0}, {"i": 1}]
    assert got["heads"] == 3 and got["extract_cpu"] == {"m": 3.0}


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/"])
def test_shard_argument_names_what_is_allowed(text):
    with pytest.raises(argparse.ArgumentTypeError, match="1 <= K <= N"):
        _shard(text)
    assert _shard("2/2") == (1, 2)
