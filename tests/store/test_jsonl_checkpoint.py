"""The shared JSON-lines checkpoint of long runs (analysis.atomic.JsonlCheckpoint)."""

from __future__ import annotations

from analysis.atomic import JsonlCheckpoint


def test_round_trip_and_missing_file(tmp_path):
    ck = JsonlCheckpoint(tmp_path / "sub" / "ck.jsonl")
    assert ck.read() == {}
    with ck.appender() as append:
        append({"key": "a", "v": 1})
        append({"key": "b", "v": 2})
    assert ck.read() == {"a": {"key": "a", "v": 1}, "b": {"key": "b", "v": 2}}
    assert ck.read(lambda rec: rec["v"]) == {"a": 1, "b": 2}


def test_torn_line_is_skipped_and_does_not_swallow_the_next_record(tmp_path):
    path = tmp_path / "ck.jsonl"
    path.write_text('{"key": "a", "v": 1}\n{"key": "b", "v"')  # a crash mid-write
    ck = JsonlCheckpoint(path)
    assert ck.read() == {"a": {"key": "a", "v": 1}}
    with ck.appender() as append:
        append({"key": "c", "v": 3})
    assert ck.read() == {"a": {"key": "a", "v": 1}, "c": {"key": "c", "v": 3}}


def test_records_that_do_not_decode_are_skipped(tmp_path):
    ck = JsonlCheckpoint(tmp_path / "ck.jsonl")
    with ck.appender() as append:
        append({"key": "good", "v": 1})
        append({"key": "bad"})  # no "v": decode raises KeyError
        append({"nokey": 1})
    assert ck.read(lambda rec: rec["v"]) == {"good": 1}
