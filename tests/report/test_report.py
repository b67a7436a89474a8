"""The report renders a StudyResults into tables, figures, report.md and provenance.json."""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from analysis.compare import ComparisonSpec, NestedComparison
from analysis.report import BRACKET_COLUMNS, ReportDesign, ReportFiles, build_report
from analysis.report.figures import FIGURES
from analysis.report.markdown import calibration_sentence, hypothesis_sentences, render_report
from analysis.report.study_tables import (
    build_tables,
    comparison_table,
    data_table,
    descriptor_table,
)
from analysis.report.tables import format_value, write_csv
from analysis.validation import ParameterError
from tests.fixtures.compare_tables import (
    COVARIATES,
    FAMILY,
    MODELS,
    make_table,
    with_separating_column,
)
from tests.fixtures.study_results import HELD_OUT

TABLES = {
    "data",
    "brackets",
    "brackets_temperature",
    "comparisons",
    "comparisons_ols",
    "lr_tests",
    "head_level",
    "descriptors",
    "synthetic",
}


def read_back(path) -> pd.DataFrame:
    return pd.read_csv(path, comment="#")


# -- files -------------------------------------------------------------------------


def test_every_table_in_md_csv_tex_with_provenance(study, built):
    files, _ = built
    assert isinstance(files, ReportFiles)
    assert set(files.tables) == TABLES
    design_hash = study.provenance["design_sha256"]
    commit = study.provenance["git_commit"]
    for name, paths in files.tables.items():
        assert set(paths) == {"md", "csv", "tex"}
        md = paths["md"].read_text()
        assert "**Provenance**" in md and f"- table: `{name}`" in md
        assert f"- design_sha256: `{design_hash}`" in md and commit in md
        tex = paths["tex"].read_text()
        assert tex.startswith("% provenance\n")
        assert f"% design_sha256: {design_hash}" in tex and f"% git_commit: {commit}" in tex
        assert "\\begin{tabular}" in tex and "\\caption{" in tex and "\\toprule" in tex
        assert "<" not in tex.split("\\begin{tabular}")[1]  # escaped (\textless{})
        csv = paths["csv"].read_text().splitlines()
        assert csv[0] == f"# study: {study.study}" and csv[1] == f"# table: {name}"
        assert f"# design_sha256: {design_hash}" in csv


def test_csv_reads_back_to_the_frame(study, built):
    files, _ = built
    for table in build_tables(study):
        back = read_back(files.tables[table.name]["csv"])
        assert list(back.columns) == list(table.frame.columns)
        pd.testing.assert_frame_equal(
            back, table.frame.reset_index(drop=True), check_dtype=False, check_exact=True
        )


def test_figures_are_png_and_pdf_and_not_empty(built):
    import matplotlib.pyplot as plt

    files, _ = built
    assert plt.get_fignums() == []  # figures never go through pyplot (nothing left open)
    assert set(files.figures) == set(FIGURES)
    assert files.skipped_figures == {}
    for name, paths in files.figures.items():
        png, pdf = paths["png"], paths["pdf"]
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert pdf.read_bytes()[:5] == b"%PDF-", name
        assert pdf.stat().st_size > 5_000, name
        with Image.open(png) as im:
            w, h = im.size
            assert w >= 500 and h >= 300, (name, im.size)
            # not a blank canvas: many distinct colours are drawn
            assert len(im.convert("RGB").getcolors(maxcolors=1 << 20)) > 50, name


def test_report_md_mentions_hypotheses_figures_tables_and_provenance(study, built):
    files, _ = built
    text = files.report.read_text()
    assert text.startswith(f"# {study.title}\n")
    for h in study.design.hypotheses:
        assert f"**{h.id}**" in text and h.statement in text
    for name in FIGURES:
        assert f"](figures/{name}.png)" in text and f"](figures/{name}.pdf)" in text
    for name in TABLES:
        assert f"](tables/{name}.csv)" in text
    assert study.design.decision in text
    assert study.provenance["lock_sha256"] in text and "Confirmatory run" in text
    assert study.provenance["held_out_sha256"] in text
    assert f"Held-out heads: {len(HELD_OUT)} whole heads" in text
    assert "## Provenance" in text and "](provenance.json)" in text
    residual = format_value(study.head_level_meta["residual_icc"], digits=3)
    assert residual.replace("-", "−") in text


def test_hypothesis_sentences_restate_the_primary_rows(study):
    sentences = hypothesis_sentences(study)
    assert len(sentences) == len(study.design.hypotheses)
    frame = study.comparison
    for h, s in zip(study.design.hypotheses, sentences, strict=True):
        row = frame[(frame.pair == h.pair) & (frame.metric == "interval_sq_loss")].iloc[0]
        for key in ("effect", "ci_low", "ci_high"):
            assert format_value(row[key], digits=3).replace("-", "−") in s
        if row.adds_information:
            assert s.endswith("→ **adds information**.")
        else:
            # absence of evidence is not stated as evidence of absence
            assert "→ no incremental information detected" in s
            assert "does not add" not in s
        assert ("outside the Holm family" in s) == (h.kind == "sensitivity")


def test_provenance_json(study, built):
    files, _ = built
    data = json.loads(files.provenance.read_text())
    for key in ("design_sha256", "lock_sha256", "held_out_sha256", "git_commit", "libraries"):
        assert data[key] == study.provenance[key]
    assert data["seeds"] == study.provenance["seeds"]
    assert set(data["stage_seconds"]) == set(study.provenance["stage_seconds"]) | {"report"}
    assert data["stage_seconds"]["report"] > 0
    written = {p.relative_to(files.out_dir).as_posix() for p in files.paths()}
    assert set(data["report"]["files"]) == written - {"provenance.json"}
    assert all((files.out_dir / f).is_file() for f in data["report"]["files"])


def test_summary_names_everything(built):
    files, _ = built
    text = files.summary()
    assert all(name in text for name in (*files.tables, *files.figures))
    assert "report.md" in text and "provenance.json" in text


def test_build_does_not_mutate_the_input(study, built):
    _, before = built
    for name, value in before.items():
        now = getattr(study, name)
        if isinstance(value, pd.DataFrame):
            pd.testing.assert_frame_equal(now, value, check_exact=True)
        else:
            assert now == value, name


# -- table contents ----------------------------------------------------------------


def test_tables_keep_synthetic_cells_apart(study):
    real_names = set(study.brackets.loc[study.brackets.source == "checkpoint", "checkpoint"])
    tables = {t.name: t.frame for t in build_tables(study)}
    for name in ("brackets", "brackets_temperature"):
        assert set(tables[name]["checkpoint"]) == real_names
    assert set(tables["synthetic"]["synthetic_family"]) == {"spherical", "ball"}
    n_real = int((study.brackets.source == "checkpoint").sum())
    n_syn = int((study.brackets.source == "synthetic").sum())
    assert tables["brackets"]["cells"].sum() == n_real
    assert tables["synthetic"]["cells"].sum() == n_syn


def test_bracket_table_counts_held_out_cells(study):
    t = data_table(study).set_index("item")["count"]
    real = study.brackets[study.brackets.source == "checkpoint"]
    assert t["held_out_heads"] == t["held_out_heads_designed"] == len(HELD_OUT)
    assert t["heads"] == t["training_heads"] + t["held_out_heads"]
    assert t["real_cells"] == len(real)
    brackets = build_tables(study)[1].frame
    assert brackets["held_out_cells"].sum() == t["held_out_cells"] == real["held_out"].sum()
    assert (brackets["median_lo"] <= brackets["median_hi"]).all()
    assert brackets["closed_share"].between(0, 1).all()
    assert (brackets["median_hi_over_lo"] >= 1).all()


def test_comparison_table_labels_pairs_from_the_design(study):
    t = comparison_table(study)
    assert len(t) == len(study.comparison)
    primary = t[t.metric == "interval_sq_loss"]
    assert list(primary["hypothesis"]) == ["H1", "H2", "H3", "S1"]
    assert list(primary["holm_family"]) == [True, True, True, False]
    merged = t.merge(study.comparison, on=["pair", "metric"], suffixes=("", "_src"))
    for c in ("effect", "ci_low", "ci_high", "p_value", "adds_information"):
        assert (merged[c] == merged[c + "_src"]).all(), c
    assert (
        comparison_table(dataclasses.replace(study, comparison_ols=None), estimator="ols") is None
    )
    with pytest.raises(ParameterError, match="estimator"):
        comparison_table(study, estimator="ridge")


def test_comparison_tables_carry_the_fit_diagnostics(study, built):
    files, _ = built
    cols = [
        "base_converged",
        "rich_converged",
        "base_iterations",
        "rich_iterations",
        "base_grad_norm",
        "rich_grad_norm",
        "status",
    ]
    from analysis.compare.equivalence import EQUIVALENCE_COLUMNS

    # the fit diagnostics, then (added after them) the equivalence columns
    cols = cols + list(EQUIVALENCE_COLUMNS)
    for name, est in (("comparisons", "interval"), ("comparisons_ols", "ols")):
        t = comparison_table(study, estimator=est)
        assert list(t.columns[-len(cols) :]) == cols, name
        assert (t["status"] == "ok").all() and t["rich_converged"].all(), name
        back = read_back(files.tables[name]["csv"])
        assert list(back.columns[-len(cols) :]) == cols, name
        assert "status" in files.tables[name]["md"].read_text()
        assert "grad\\_norm" in files.tables[name]["tex"].read_text()
    # the OLS refit is closed-form: no iterations
    assert (comparison_table(study, estimator="ols")["rich_iterations"] == 0).all()
    assert (comparison_table(study)["rich_iterations"] >= 1).all()


def test_a_failed_fit_is_reported_as_fit_failed(study, tmp_path):
    """A pre-specified pair whose rich fit did not converge: "fit failed", never a result."""
    rng = np.random.default_rng(5)
    table = with_separating_column(make_table(rng, native_effect=0.5), rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels' ConvergenceWarning
        res = NestedComparison(
            ComparisonSpec(
                models=MODELS,
                family=FAMILY,
                log_columns=["baseline__scale"],
                n_boot=199,
                random_state=0,
                maxiter=1,
                lock_sha256=study.provenance["lock_sha256"],
                **COVARIATES,
            )
        ).fit(table)
    frame = res.to_frame()
    assert not res.fits["M1"].converged and res.fits["M2"].converged
    failed = dataclasses.replace(
        study,
        comparison=frame,
        comparison_ols=None,
        lr_tests=res.lr_tests,
        skipped={"comparison_ols": "midpoint estimators need finite interval ends"},
    )
    sentences = dict(zip(["H1", "H2", "H3", "S1"], hypothesis_sentences(failed), strict=True))
    for h in ("H1", "H3"):  # M0<M1, M0<M3: the rich model holds native__sep
        s = sentences[h]
        assert "fit failed" in s and "did not converge" in s, s
        assert "effect" not in s and "adds information" not in s and "one-sided p" not in s, s
    assert "fit failed" not in sentences["H2"] and "effect" in sentences["H2"]
    files = build_report(failed, tmp_path, figure_formats=("png",))
    text = files.report.read_text()
    h1 = next(line for line in text.splitlines() if line.startswith("- **H1**"))
    assert "fit failed" in h1 and "M1 did not converge" in h1
    t = read_back(files.tables["comparisons"]["csv"])
    assert set(t.loc[t.pair.isin(["M0<M1", "M0<M3"]), "status"]) == {"fit failed"}
    assert set(t.loc[t.pair == "M0<M2", "status"]) == {"ok"}
    assert not t.loc[t.status == "fit failed", "adds_information"].any()
    assert not t.loc[t.status == "fit failed", "rich_converged"].any()
    assert "fit failed" in files.tables["comparisons"]["md"].read_text()
    assert "fit failed" in files.tables["comparisons"]["tex"].read_text()
    # the embedded table in report.md shows the status too
    assert "| status |" in text or "| status" in text


def test_head_level_shows_both_questions_and_why_one_was_skipped(study, built):
    """The fixture study has one input per length: within-head skipped, across-head shown."""
    files, _ = built
    text = files.report.read_text()
    section = text.split("## Head-level analysis (exploratory)")[1].split("\n## ")[0]
    assert "- Within-head: within a head, does the block predict" in section
    assert "**Skipped**: every length has a single input" in section
    assert "per_length >= 2" in section
    assert "- Across-head: across heads, does the block predict" in section
    assert "Folds: 5 folds of whole training heads" in section
    t = read_back(files.tables["head_level"]["csv"])
    assert list(t["model"]) == ["M0", "M1", "M2", "M3"]
    assert t["within_head_loss"].isna().all() and t["within_head_fe_loss"].isna().all()
    assert t["across_head_loss"].notna().all()
    across = study.head_level[study.head_level.question == "across_head"]
    np.testing.assert_array_equal(t["across_head_loss"], across["cv_loss"])
    np.testing.assert_array_equal(t["across_head_gain"], across["gain_vs_base"])


def test_head_level_both_questions_answered_side_by_side(study, tmp_path):
    from analysis.compare import HeadLevelAnalysis, HeadLevelSpec

    rng = np.random.default_rng(8)
    table = make_table(rng, n_heads=16)
    train = table[~table["held_out"]].drop(columns="held_out")
    hl = HeadLevelAnalysis(
        HeadLevelSpec(models=MODELS, log_columns=["baseline__scale"], random_state=0, **COVARIATES)
    ).fit(train)
    both = dataclasses.replace(study, head_level=hl.to_frame(), head_level_meta=hl.meta())
    files = build_report(both, tmp_path, figure_formats=("png",))
    text = files.report.read_text()
    assert "Skipped" not in text.split("## Head-level analysis")[1].split("\n## ")[0]
    assert "Folds: leave one input_id out within each length (2 folds" in text
    t = read_back(files.tables["head_level"]["csv"])
    f = hl.to_frame().set_index(["question", "fixed_effects", "model"])["cv_loss"].sort_index()
    for side, key in (
        ("within_head", ("within_head", False)),
        ("within_head_fe", ("within_head", True)),
        ("across_head", ("across_head", False)),
    ):
        np.testing.assert_array_equal(t[f"{side}_loss"], f.loc[key].loc[t["model"]].to_numpy())
    md = files.tables["head_level"]["md"].read_text()
    assert "within_head_fe_loss" in md


def test_descriptor_table_leaves_out_per_r_and_counts_nan(edge_study):
    t = descriptor_table(edge_study)
    assert "q_r1" not in set(t["feature"])
    kappa = t[(t.block == "native") & (t.feature == "kappa")].iloc[0]
    assert (kappa["nan"], kappa["infinite"]) == (2, 1)
    assert kappa["finite"] == len(edge_study.features) - 3
    assert np.isfinite(kappa["median"])


def test_format_value():
    assert format_value(np.float64(0.012345)) == "0.01235"
    assert format_value(3.0) == "3"
    assert format_value(np.int64(7)) == "7"
    assert format_value(np.nan) == "–"
    assert format_value(True) == "yes"
    assert format_value(1.5e-7) == "1.500e-07"


# -- edge cases and bad input --------------------------------------------------------


def test_missing_comparison_is_reported_with_its_reason(edge_study, edge_built):
    text = edge_built.report.read_text()
    assert "The comparison has not run: the design is not locked." in text
    assert "The head-level analysis has not run: the design is not locked." in text
    assert "The OLS-on-midpoints refit has not run: no reason was recorded." in text
    for h in edge_study.design.hypotheses:
        assert f"**{h.id}** ({h.kind}; " in text
    assert text.count("not tested; the comparison has not run (the design is not locked)") == 4
    assert "**This run is not locked: every result below is exploratory.**" in text
    assert set(edge_built.tables) == {
        "data",
        "brackets",
        "brackets_temperature",
        "descriptors",
    }
    assert "forest" not in edge_built.figures and "forest" in edge_built.skipped_figures
    assert "synthetic_rank_vs_beta" in edge_built.skipped_figures
    assert "## Synthetic families" not in text


def test_single_checkpoint_single_temperature_still_draws(edge_built):
    expected = {"rank_vs_eps", "bracket_width", "rank_vs_temperature", "descriptors_vs_midpoint"}
    assert set(edge_built.figures) == expected
    for paths in edge_built.figures.values():
        assert set(paths) == {"png"}  # figure_formats=("png",)
        assert paths["png"].stat().st_size > 5_000
    text = edge_built.report.read_text()
    for name in expected:
        assert f"](figures/{name}.png)" in text
    assert "[PDF]" not in text


def test_bad_input(study, tmp_path):
    with pytest.raises(ParameterError, match="results"):
        build_report("not results", tmp_path)
    broken = dataclasses.replace(study, brackets=study.brackets.drop(columns=["closed"]))
    with pytest.raises(ParameterError, match="BRACKET_COLUMNS"):
        build_report(broken, tmp_path)
    with pytest.raises(ParameterError, match="figure_formats"):
        build_report(study, tmp_path, figure_formats=("pdf",))
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(ParameterError, match="out_dir"):
        build_report(study, a_file)
    assert "closed" in BRACKET_COLUMNS


def test_write_csv_refuses_the_comment_marker(tmp_path):
    with pytest.raises(ParameterError, match="#"):
        write_csv(pd.DataFrame({"a": ["x#y"]}), tmp_path / "t.csv", provenance=[])
    path = write_csv(
        pd.DataFrame({"a": [1.0, np.nan]}), tmp_path / "ok.csv", provenance=[("k", "v")]
    )
    assert path.read_text().startswith("# k: v\na\n")
    assert read_back(path)["a"].isna().tolist() == [False, True]


def test_report_text_survives_a_sparse_design(study, tmp_path):
    """No hypotheses, models, inference or provenance: the text still renders and says so."""
    sparse = dataclasses.replace(study, design=ReportDesign(), provenance={}, head_level_meta={})
    tables = build_tables(sparse)
    files = {t.name: {"csv": tmp_path / "tables" / f"{t.name}.csv"} for t in tables}
    text = render_report(sparse, out_dir=tmp_path, tables=tables, table_files=files, figures={})
    assert "**This run is not locked: every result below is exploratory.**" in text
    assert "Decision rule: not stated in the design." in text
    assert "Held-out heads: the design lists none." in text
    assert "(tables/comparisons.csv)" in text
    # without a design family, Holm membership is read off p_holm
    t = comparison_table(sparse)
    assert (t["holm_family"] == t["p_holm"].notna()).all()


def test_only_synthetic_cells(study, tmp_path):
    syn = study.brackets[study.brackets.source == "synthetic"].reset_index(drop=True)
    only = dataclasses.replace(
        study,
        brackets=syn,
        features=pd.DataFrame(columns=["cell_key"]),
        comparison=None,
        comparison_ols=None,
        head_level=None,
        lr_tests=None,
        skipped={"comparison": "no real cells"},
    )
    files = build_report(only, tmp_path, figure_formats=("png",))
    assert set(files.figures) == {"synthetic_rank_vs_beta"}
    assert "figures (1, png)" in files.summary()
    text = files.report.read_text()
    assert "The study holds no real-checkpoint cell." in text
    assert "The comparison has not run: no real cells." in text
    assert "## Synthetic families (exploratory)" in text
    counts = read_back(files.tables["data"]["csv"]).set_index("item")["count"]
    assert counts["real_cells"] == 0 and counts["synthetic_cells"] == len(syn)


# -- calibration ---------------------------------------------------------------------

CROSS_FITTED = {
    "mode": "cross-fitted",
    "folds": 5,
    "seed": 20261202,
    "description": "cross-fitted by head, 5 folds (seed 20261202)",
}


def test_report_states_a_cross_fitted_calibration(study, tmp_path):
    prov = {**study.provenance, "calibration": dict(CROSS_FITTED)}
    files = build_report(dataclasses.replace(study, provenance=prov), tmp_path / "r")
    text = files.report.read_text()
    methods = text.split("## Amendments", 1)[0]  # in "What was pre-specified"
    assert (
        "Calibration: cross-fitted by head, 5 folds (seed 20261202): each training cell's "
        "calibrated covariates come from isotonic maps fitted on the training heads of the "
        "other folds" in methods
    )
    assert "held-out cells use the maps fitted on all training heads" in methods
    assert json.loads(files.provenance.read_text())["calibration"] == CROSS_FITTED
    assert "- calibration: `description=cross-fitted by head, 5 folds" in text
    # one value per run: in provenance, not a column of the comparison tables
    assert "calibration" not in read_back(files.tables["comparisons"]["csv"]).columns


def test_report_states_an_in_sample_calibration(study, built):
    # the fixture's comparison ran in-sample; no provenance entry: read from the frame
    assert "calibration" not in study.provenance
    text = built[0].report.read_text()
    assert "Calibration: in-sample: the isotonic maps are fitted on all training cells" in text
    assert calibration_sentence(study).startswith("Calibration: in-sample")


def test_calibration_sentence_reads_the_comparison_frame_after_a_csv_round_trip(study, tmp_path):
    frame = study.comparison.assign(
        calibration="cross-fitted", calibration_folds=4, calibration_seed=9
    )
    frame.to_csv(tmp_path / "c.csv", index=False)
    back = pd.read_csv(tmp_path / "c.csv")
    s = calibration_sentence(dataclasses.replace(study, comparison=back))
    assert s.startswith("Calibration: cross-fitted by head, 4 folds (seed 9): ")


def test_calibration_sentence_before_the_comparison_quotes_the_design(edge_study):
    design = dataclasses.replace(edge_study.design, calibration="cross-fitted by head, 3 folds")
    s = calibration_sentence(dataclasses.replace(edge_study, design=design))
    assert s == (
        'Calibration as the design states it: "cross-fitted by head, 3 folds" '
        "(the comparison has not run)."
    )


# -- simulated power beside each hypothesis ------------------------------------------


def test_report_shows_power_and_mde_per_hypothesis(study, tmp_path):
    from analysis.power import PowerSpec, StudySizes, load_widths, validate_comparison

    widths = tmp_path / "w.csv"
    rows = [(e, lo, lo * r) for e in (0.05, 0.1, 0.2) for lo in (2, 3, 5) for r in (1, 2, 3)]
    pd.DataFrame(rows, columns=["eps", "lower", "upper"]).to_csv(widths, index=False)
    sizes = StudySizes(
        n_heads=24,
        n_held_out=6,
        n_boot=199,
        lengths=(64,),
        temperatures=(1.0,),
        hypotheses=(("H1", "confirmatory", "M0", "M1"), ("H2", "secondary", "M0", "M2")),
    )
    spec = PowerSpec(simulations=2, sizes=sizes, hypotheses=["H1", "H2"], mde_steps=1)
    res = validate_comparison(load_widths(widths), spec)
    power = json.loads(json.dumps(res.to_dict()))  # as stored in the study's power.json
    with_power = dataclasses.replace(study, power=power)
    files = build_report(with_power, tmp_path / "r", figure_formats=("png",))
    text = files.report.read_text()
    assert "### Power of each decision (simulated)" in text
    for h in res.hypotheses:
        line = next(
            x
            for x in text.splitlines()
            if x.startswith(f"- **{h.hypothesis}**") and "simulated power" in x
        )
        assert f"simulated power {format_value(h.power.rate, digits=3)}" in line
        assert "minimum detectable effect" in line and "boundary null" in line
    # H3 and S1 were not simulated: the report says so beside them
    assert "not simulated" in text
    # the pre-specified hypotheses table carries the power and the MDE
    assert "simulated_power" in text and "mde" in text
    t = read_back(files.tables["power"]["csv"])
    assert list(t["hypothesis"]) == ["H1", "H2"]
    assert np.allclose(t["power"], [h.power.rate for h in res.hypotheses])
    assert np.allclose(t["mde"].astype(float), [h.mde for h in res.hypotheses], equal_nan=True)
    # no simulation: every hypothesis says why
    none = dataclasses.replace(study, power={"skipped": "no reference bracket widths at X"})
    text = render_report(
        none,
        out_dir=tmp_path,
        tables=build_tables(none),
        table_files={t.name: {} for t in build_tables(none)},
        figures={},
    )
    assert "Not simulated: no reference bracket widths at X" in text
    assert text.count("not simulated: no reference bracket widths at X") == 4


# -- amendments ----------------------------------------------------------------------


def test_amendments_name_what_changed_when_no_section_did():
    from analysis.report.provenance import amendments_section

    # as amend_design records them: a block re-lock keeps the design's hash too
    same = {"previous_design_sha256": "a" * 64, "new_design_sha256": "a" * 64}
    power = {"time": "t1", "reason": "Power stored.", "sections": [], "blocks": {}, **same}
    native = {"covariates": ["native__kappa"], "version": "v2"}
    blocks = {
        "time": "t2",
        "reason": "Block re-locked",
        "sections": [],
        "blocks": {"native": native},
        **same,
    }
    hyps = {"time": "t3", "reason": "r", "sections": ["hypotheses"], "outcomes_existed": True}
    text = "\n".join(amendments_section({"amendments": [power, blocks, hyps]}))
    assert "1. t1: Power stored. Sections changed: none (the design file is unchanged)." in text
    assert "2. t2: Block re-locked. Sections changed: none (descriptor blocks only)." in text
    assert "3. t3 (after outcomes existed): r. Sections changed: hypotheses." in text
