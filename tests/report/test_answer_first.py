"""report.md answers first: the decisions table and one plain sentence per hypothesis
come right after the title; the lock's status and its amendments come last, with a
one-line pointer at the top; the times it states are this run's store's (issue 53)."""

from __future__ import annotations

import dataclasses
import json
import time

from analysis.report import build_report
from analysis.report.tables import number_text, p_text
from analysis.store import Store
from analysis.study.core import Study
from analysis.study.outcomes import FORMAT, outcomes_path
from analysis.study.results import provenance
from tests.study.conftest import make_study

TABLE_HEAD = "| hypothesis | kind | pair | effect | ci | p | p_holm | decision |"


def _sections(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("## ")]


def test_the_answer_comes_first_and_the_amendments_last(study, built):
    files, _ = built
    text = files.report.read_text()
    sections = _sections(text)
    assert sections[0] == "## Answer" and sections[1] == "## What was pre-specified"
    assert sections[-1] == "## Amendments" and sections[-2] == "## Provenance"
    answer = text.split("## Answer\n", 1)[1].split("\n## ", 1)[0]
    assert TABLE_HEAD in answer
    assert text.index(TABLE_HEAD) < text.index("## Amendments")
    for h in study.design.hypotheses:  # each decision in words, in the answer
        assert f"- **{h.id}** ({h.kind}; {h.pair})" in answer
    comparisons = text.split("## Nested comparisons (confirmatory)", 1)[1].split("\n#", 1)[0]
    assert "- **H1** (" not in comparisons  # said once, in the answer
    assert "In plain words: 0 of the 3 hypotheses in the Holm family add information" in answer


def test_the_decisions_table_restates_the_primary_rows(study, built):
    files, _ = built
    answer = files.report.read_text().split("## Answer\n", 1)[1].split("\n## ", 1)[0]
    ids = tuple(f"| {h.id} |" for h in study.design.hypotheses)
    rows = [line for line in answer.splitlines() if line.startswith(ids)]
    frame = study.comparison
    assert len(rows) == len(study.design.hypotheses)
    for h, line in zip(study.design.hypotheses, rows, strict=True):
        r = frame[(frame.pair == h.pair) & (frame.metric == "interval_sq_loss")].iloc[0]
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[:3] == [h.id, h.kind, h.pair]
        assert cells[3] == number_text(r["effect"])
        assert cells[4] == f"[{number_text(r['ci_low'])}, {number_text(r['ci_high'])}]"
        word = "adds information" if r["adds_information"] else "no incremental information"
        assert cells[-1].startswith(word)
        holm = "outside the Holm family" if h.kind == "sensitivity" else p_text(r["p_holm"])
        assert cells[6] == holm


def test_amendments_are_pointed_to_at_the_top_and_framed_at_the_end(study, tmp_path):
    amendment = {"time": "2026-12-05T10:00:00+00:00", "reason": "wording", "sections": ["x"]}
    prov = {
        **study.provenance,
        "first_locked_at": "2026-12-01T00:00:00+00:00",
        "amendments": [amendment, dict(amendment, reason="more wording")],
        "exploratory_hypotheses": {"H2": "amended after outcomes existed: x (amendment 2, t)"},
    }
    files = build_report(dataclasses.replace(study, provenance=prov), tmp_path / "r")
    text = files.report.read_text()
    top = text.split("## What was pre-specified", 1)[0]
    assert "2 amendments of the lock, listed at the end (*Amendments*)" in top
    assert "H2 reported as exploratory there" in top
    assert "**Reported as exploratory" not in top and "more wording" not in top
    end = text.split("\n## Amendments\n", 1)[1]
    assert "**Reported as exploratory, not confirmatory: H2**" in end
    assert "more wording" in end and text.count("First locked at") == 1
    answer = text.split("## Answer\n", 1)[1].split("\n## ", 1)[0]
    assert "| H2 | secondary (reported as exploratory) |" in answer


def test_the_times_are_this_runs_store_not_the_shipped_record(study, tmp_path):
    """A shipped design carries the original study's outcome record beside it; a user's
    run records its own in its store. report.md states the user's time."""
    design = make_study(tmp_path)
    opened = Study.open(design)
    locked = opened.lock.record["first_locked_at"]
    shipped = {"time": locked, "lock_sha256": opened.lock.sha256, "design": design.name}
    side = {"format": FORMAT, "design": design.name, "first": {**shipped, "store": "../x"}}
    outcomes_path(design).write_text(json.dumps({**side, "stores": [side["first"]]}))
    time.sleep(1.1)  # times are recorded to the second
    with Store(opened.paths.store, create=True) as store:
        mine = store.record_outcomes(lock_sha256=opened.lock.sha256, design=design.name)
    assert mine["time"] > locked
    prov = provenance(opened, {})
    assert prov["first_outcome"]["time"] == locked  # the design's earliest, as before
    merged = {**study.provenance, **prov}
    files = build_report(dataclasses.replace(study, provenance=merged), tmp_path / "r")
    text = files.report.read_text()
    end = text.split("\n## Amendments\n", 1)[1]
    assert f"This run's outcomes were first recorded at {mine['time']}" in end
    assert f"The design's earliest outcome record is older, {locked}" in end
    assert f"first outcome recorded at {locked}" not in text
    # the table files' provenance block is as before: no new line
    csv = files.tables["comparisons"]["csv"].read_text()
    assert "store_outcome" not in csv and "# first_outcome: " in csv
