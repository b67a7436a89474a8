"""``attnrank evidence``: every locked study's H1 and H2 side by side, read from stored tables."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from analysis.cli import main
from analysis.report.evidence import (
    COLUMNS,
    V3_VARIANT,
    evidence_table,
    find_studies,
    locked_without_tables,
    read_stored_table,
)
from analysis.report.evidence_page import summaries, write_evidence

ROOT = Path(__file__).resolve().parents[2]
HEADER = "hypothesis,kind,pair,metric,base_value,effect,ci_low,ci_high,p_holm,adds_information,n_cells,n_heads"


def _study(root: Path, name: str, rows: list[str], *, lock=True, extra_cols="", method=None):
    """A design (locked or not) and its stored comparisons.csv under docs/results/NAME/."""
    pre = root / "preregistration"
    pre.mkdir(exist_ok=True)
    top = f"method = {method}\n" if method else ""
    (pre / f"{name}.toml").write_text(top + "[inference]\nalpha = 0.05\n")
    if lock:
        (pre / f"{name}.toml.lock").write_text("{}")
    tables = root / "docs" / "results" / name / "tables"
    tables.mkdir(parents=True)
    body = "\n".join(rows)
    (tables / "comparisons.csv").write_text(
        f"# study: {name}\n# design: preregistration/{name}.toml\n# first_locked_at: {name}\n"
        f"{HEADER}{extra_cols}\n{body}\n"
    )
    return tables


@pytest.fixture
def repo(tmp_path):
    """Three studies: a (method 2, no SESOI), b (method 2 with a SESOI and a stored v3
    re-analysis), c (method 3); d has tables but no lock, e a lock and outcomes only."""
    _study(
        tmp_path,
        "a",
        [
            "H1,confirmatory,M0<M1,loss,0.02,0.004,0.001,0.007,0.01,True,100,10",
            "H2,secondary,M0<M2,loss,0.02,-0.004,-0.006,-0.001,1.0,False,100,10",
            "H3,secondary,M0<M3,loss,0.02,0.001,0.0,0.002,0.2,False,100,10",
            "H1,confirmatory,M0<M1,other_metric,9.0,1.0,0.5,1.5,0.01,True,100,10",
        ],
    )
    tb = _study(
        tmp_path,
        "b",
        [
            "H1,confirmatory,M0<M1,loss,0.01,-0.002,-0.005,0.0005,1.0,False,50,5,0.001,equivalent within SESOI",
            "H2,secondary,M0<M2,loss,0.01,0.0001,-0.0002,0.0003,1.0,False,50,5,0.001,equivalent within SESOI",
        ],
        extra_cols=",sesoi,decision",
    )
    (tb / "reanalysis_v3.csv").write_text(
        "# exploratory\nvariant,hypothesis,pair,decision\n"
        "v2 as reported,H1,M0<M1,equivalent within SESOI\n"
        f"{V3_VARIANT},H1,M0<M1,non-superior only\n"
    )
    _study(
        tmp_path,
        "c",
        [
            "H1,confirmatory,M0<M1,loss,0.04,0.001,-0.001,0.003,0.5,False,80,8,inconclusive,0.2",
            "H2,secondary,M0<M2,loss,0.04,0.0,-0.001,0.001,0.9,False,80,8,harms,0.3",
        ],
        extra_cols=",decision,non_superiority_p",
        method=3,
    )
    _study(tmp_path, "d", ["H1,confirmatory,M0<M1,loss,0.01,0.0,-1,1,1,False,1,1"], lock=False)
    pre = tmp_path / "preregistration"
    (pre / "e.toml").write_text("[inference]\nalpha = 0.05\n")
    (pre / "e.toml.lock").write_text("{}")
    (pre / "e.toml.outcomes.json").write_text("{}")
    (pre / "f.toml").write_text("[inference]\nalpha = 0.05\n")
    (pre / "f.toml.lock").write_text("{}")
    return tmp_path


def test_only_locked_designs_with_tables_are_studies(repo):
    assert [d for d, _, _ in find_studies(repo)] == [
        "preregistration/a.toml",
        "preregistration/b.toml",
        "preregistration/c.toml",
    ]
    assert locked_without_tables(repo) == [
        (
            "preregistration/e.toml",
            "locked, outcomes recorded, but no comparison table ships in docs/results/",
        ),
        ("preregistration/f.toml", "locked, no outcomes recorded: not run"),
    ]


def test_rows_shares_and_decisions(repo):
    t = evidence_table(repo)
    assert list(t.columns) == list(COLUMNS)
    assert t[["study", "hypothesis"]].values.tolist() == [
        ["a", "H1"],
        ["a", "H2"],
        ["b", "H1"],
        ["b", "H2"],
        ["c", "H1"],
        ["c", "H2"],
    ]
    assert set(t["metric"]) == {"loss"}  # the primary (first) metric only, H3 left out
    a1 = t.iloc[0]
    assert a1.base_loss == 0.02 and a1.n_heads_held_out == 10 and a1.n_cells_held_out == 100
    assert (a1.effect_share, a1.ci_low_share, a1.ci_high_share) == pytest.approx((0.2, 0.05, 0.35))
    assert t["sesoi_share"].isna().tolist() == [True, True, False, False, True, True]
    assert t.loc[2, "sesoi_share"] == pytest.approx(0.1)
    assert t["method_own"].tolist() == [2, 2, 2, 2, 3, 3]
    assert t["decision_own"].tolist() == [
        "adds information",
        "no incremental information detected",
        "equivalent within SESOI",
        "equivalent within SESOI",
        "inconclusive",
        "harms",
    ]
    # a: method 3's rule on the stored CI and Holm p (H2's CI is below 0: harms);
    # b: H1 from the stored re-analysis, H2 has a SESOI but no stored v3 row: none;
    # c: ran under method 3, its own decision
    assert t["decision_v3"].tolist() == [
        "adds information",
        "harms",
        "non-superior only",
        "",
        "inconclusive",
        "harms",
    ]
    assert t.loc[3, "v3_source"].startswith("none:")
    assert t.loc[2, "v3_source"] == f"stored: tables/reanalysis_v3.csv, {V3_VARIANT}"
    assert t.loc[0, "table"] == "docs/results/a/tables/comparisons.csv"


def test_a_new_locked_study_is_picked_up(repo):
    before = set(evidence_table(repo)["study"])
    tables = _study(
        repo, "replication", ["H1,confirmatory,M0<M1,loss,0.05,0.01,0.0,0.02,0.04,False,9,3"]
    )
    # a run given the design by an absolute path records that path: matched by its name
    csv = tables / "comparisons.csv"
    absolute = (repo / "preregistration" / "replication.toml").as_posix()
    csv.write_text(csv.read_text().replace("preregistration/replication.toml", absolute))
    after = evidence_table(repo)
    assert set(after["study"]) - before == {"replication"}
    row = after[after.study == "replication"].iloc[0]
    assert row.effect_share == pytest.approx(0.2) and row.decision_v3 == "inconclusive"


def test_write_evidence_writes_under_out_only(repo, tmp_path_factory, monkeypatch):
    cwd = tmp_path_factory.mktemp("cwd")
    monkeypatch.chdir(cwd)
    out = tmp_path_factory.mktemp("out")
    paths = write_evidence(repo, out)
    assert list(cwd.iterdir()) == []
    assert {p.relative_to(out).as_posix() for p in paths.values()} == {
        "evidence.md",
        "evidence/evidence.csv",
        "evidence/random_effects.csv",
        "evidence/forest.png",
    }
    assert paths["forest"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = pd.read_csv(paths["table"])
    assert table["effect_share"].tolist() == pytest.approx(evidence_table(repo)["effect_share"])
    page = paths["page"].read_text()
    first = page.split("![forest plot]")[0]  # the answer comes before the figure and tables
    assert "H1 native geometry" in first and "exploratory" in first
    assert "`preregistration/e.toml`" in first  # outcomes exist, no table: said up front
    assert "not independent" in page.lower()
    summary = pd.read_csv(paths["summary"])
    assert summary["k"].tolist() == [3, 3]


def test_summaries_need_two_studies():
    t = pd.DataFrame(
        {"hypothesis": ["H1"], "effect_share": [0.1], "ci_low_share": [0.0], "ci_high_share": [0.2]}
    )
    s = summaries(t).iloc[0]
    assert s.k == 1 and pd.isna(s.estimate_share) and pd.isna(s.tau2)


def test_cli_writes_to_out_and_refuses_a_folder_without_designs(repo, tmp_path_factory, capsys):
    out = tmp_path_factory.mktemp("cli")
    assert main(["evidence", "--root", str(repo), "--out", str(out)]) == 0
    assert (out / "evidence.md").is_file() and (out / "evidence" / "forest.png").is_file()
    assert main(["evidence", "--root", str(out), "--out", str(out)]) == 2
    assert "--root" in capsys.readouterr().err


def test_the_shipped_locked_studies():
    t = evidence_table(ROOT)
    designs = set(t["design"])
    assert {
        "preregistration/offline-families.toml",
        "preregistration/paper-lengths.toml",
    } <= designs
    for _, r in t.iterrows():
        frame, prov = read_stored_table(ROOT / r.table)
        assert prov["design"] == r.design
        row = frame[(frame.hypothesis == r.hypothesis) & (frame.metric == "interval_sq_loss")].iloc[
            0
        ]
        assert r.base_loss == row.base_value and r.effect == row.effect
        assert r.effect_share == r.effect / r.base_loss
        assert r.ci_low_share == row.ci_low / row.base_value
    pl = t[t.study == "paper-lengths"].set_index("hypothesis")
    # the stored method-v3 re-analysis: H1 non-superior only, H2 equivalent (paper-lengths.md)
    assert pl.loc["H1", "decision_own"] == "equivalent within SESOI"
    assert pl.loc["H1", "decision_v3"] == "non-superior only"
    assert pl.loc["H2", "decision_v3"] == "equivalent within SESOI"
    assert pl.loc["H1", "sesoi_share"] == pytest.approx(0.001 / pl.loc["H1", "base_loss"])
    fam = t[t.study == "offline-families"].set_index("hypothesis")
    assert fam.loc["H1", "decision_own"] == "adds information"
    assert fam.loc["H1", "decision_v3"] == "adds information"
    # MiniLM's hypotheses were amended after its outcomes existed: shown, marked exploratory
    mini = t[t.study == "offline-minilm"].set_index("hypothesis")
    assert mini.loc["H1", "kind"].startswith("exploratory")
    missing = dict(locked_without_tables(ROOT))
    assert "preregistration/offline-minilm.toml" not in missing
    assert (
        missing["preregistration/paper-checkpoints.toml"] == "locked, no outcomes recorded: not run"
    )


def test_the_shipped_page_is_current(tmp_path):
    """docs/results/evidence.md and its CSVs are what `attnrank evidence` writes now."""
    paths = write_evidence(ROOT, tmp_path)
    shipped = ROOT / "docs" / "results"
    for key in ("page", "table", "summary"):
        rel = paths[key].relative_to(tmp_path)
        assert paths[key].read_text() == (shipped / rel).read_text(), rel
