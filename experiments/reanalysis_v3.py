"""An exploratory re-analysis of the locked paper-lengths study under method v3.

The locked study (``preregistration/paper-lengths.toml``, method 2) stays as run. This
script rebuilds its comparison table from the shipped atlas
(``docs/results/paper-lengths/atlas.parquet``: every cell's bracket, covariates and
held-out flag), checks that the locked method-2 comparison comes back (M0 and M1
held-out losses and H1's effect), then refits it under the method-v3 rules one at a time
(docs/method.md), each a labelled, cumulative variant:

* ``v2 (locked rules)``: the design's own options, refitted from the atlas;
* ``(a) v3 decisions``: two-sided TOST, *harms* and *non-superior only*
  (``ComparisonSpec(method=3)``); same split, same single cross-fit assignment, the
  held-out bootstrap with the fits fixed;
* ``(b0) + cross-fit R = 20``: the calibration averaged over 20 fold assignments;
* ``(b) + refit bootstrap``: the refit bootstrap's CI and p as the confirmatory ones
  (``refit_confirmatory``), with ``--refits`` replicates (the ``refits`` stage);
* ``(c) + native v2``: the native block at version 2, from Q and K re-extracted from the
  checkpoints (the ``extract`` stage);
* ``(d) + stratified split``: the held-out heads redrawn with the design's seed and
  fraction under the method-3 rule, stratified by (checkpoint, layer): another split and
  another estimand (new heads of sampled layers).

Every row is exploratory: the rules were chosen after the outcomes existed. The
sensitivity rows of the locked run (leave one family out, width-stratified) are not
refitted (``sensitivities=False``): they decide nothing and cost 20 refits per variant.

Stages, run from the repository root (``--out`` default ``experiments/out/reanalysis_v3``)::

    python -m experiments.reanalysis_v3 extract      # Q, K -> native v1 + v2 per matrix
    python -m experiments.reanalysis_v3 refits --refits N [--variant d]  # refits (resumable)
    python -m experiments.reanalysis_v3 report       # every variant; tables and markdown
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from experiments.common import OUT, ROOT, command_line

DESIGN = ROOT / "preregistration" / "paper-lengths.toml"
ATLAS = ROOT / "docs" / "results" / "paper-lengths" / "atlas.parquet"
DEFAULT_OUT = OUT / "reanalysis_v3"
#: Calibration fold assignments under method 3 (``[descriptors] calibration_repeats``).
REPEATS_V3 = 20
#: The design variables that travel with a cell (as ``analysis.study.comparison``).
DESIGN_VARS = ("input_id", "length", "temperature", "eps")
SUMMARY_COLUMNS = (
    "variant", "hypothesis", "pair", "base_value", "rich_value", "effect", "ci_low",
    "ci_high", "p_value", "p_holm", "equivalence_p", "equivalence_p_holm",
    "non_superiority_p", "non_superiority_p_holm", "decision", "ci_source", "n_heads",
    "n_cells", "extrapolated_share", "effect_in_range", "effect_extrapolated",
)  # fmt: skip


def load_study(design_path: Path = DESIGN) -> tuple[Any, Any]:
    """The locked design and its descriptor registry (native version 1, as locked)."""
    from analysis.prereg import load_design
    from analysis.study.core import design_registry

    design = load_design(design_path)
    return design, design_registry(design, root=None)


def atlas_table(
    atlas: pd.DataFrame, design: Any, registry: Any, held_out: set[str] | None = None
) -> tuple[pd.DataFrame, list[str]]:
    """The comparison table of the study's cells, built from its atlas as the study did.

    Parameters
    ----------
    atlas : DataFrame
        The shipped atlas (one row per cell: ``lower``, ``upper``, ``head_id``,
        ``checkpoint``, ``held_out``, ``in_comparison`` and the covariate columns).
    design : analysis.prereg.Design
        The locked design (its ``[models]``).
    registry : analysis.descriptors.Registry
        Which columns are covariates and which enter as logs (the native block's version
        decides its columns).
    held_out : set of str, optional
        Held-out head ids (default: the atlas's ``held_out``, the lock's list).

    Returns
    -------
    (DataFrame, list of str)
        ``cell_key``, ``cluster`` (head id), ``stratum`` (checkpoint), ``y_lower``,
        ``y_upper`` (log2 bracket ends), the design variables, the models' covariates,
        ``held_out`` and ``checkpoint_layer``, sorted by ``cell_key``; and the log-scale
        model columns (:func:`analysis.study.comparison.comparison_table`).
    """
    from analysis.study.comparison import covariate_columns
    from analysis.study.units import unit_column

    real = atlas.loc[(atlas["source"] == "checkpoint") & atlas["in_comparison"].astype(bool)]
    covs, logs = covariate_columns(real, registry)
    model_cols = sorted(
        {
            c
            for blocks in design.models.values()
            for b in blocks
            for c in covs
            if c.startswith(b + "__")
        }
    )
    finite = np.isfinite(real[model_cols].to_numpy(float)).all(axis=1)
    real = real.loc[finite]
    held = real["held_out"].astype(bool) if held_out is None else real["head_id"].isin(held_out)
    table = real.assign(
        cluster=real["head_id"].astype(str),
        stratum=real["checkpoint"].astype(str),
        y_lower=np.log2(real["lower"].astype(float)),
        y_upper=np.log2(real["upper"].astype(float)),
        held_out=held.to_numpy(bool),
    )
    keep = ["cell_key", "cluster", "stratum", "y_lower", "y_upper", *DESIGN_VARS, *model_cols]
    table = table.loc[:, [*keep, "held_out"]].sort_values("cell_key").reset_index(drop=True)
    table = unit_column(table, "checkpoint_layer")
    return table, [c for c in logs if c in model_cols]


def stratified_held_out(design: Any) -> list[str]:
    """The held-out heads of the design's seed and fraction under the method-3 draw
    (``[held_out] stratify = ["checkpoint", "layer"]``)."""
    from analysis.prereg.design import draw_held_out

    data = json.loads(json.dumps(design.data))
    data["held_out"]["stratify"] = ["checkpoint", "layer"]
    data["held_out"].pop("rule", None)  # the locked rule's text states the old draw
    return draw_held_out(data)


def spec_for(design: Any, registry: Any, table: pd.DataFrame, log_cols: list[str], **over: Any):
    """The design's ComparisonSpec with ``over`` replacing its fields (no sensitivity
    rows: they decide nothing)."""
    from analysis.compare import ComparisonSpec

    kw = {**design.comparison_kwargs(), **over}
    spec = ComparisonSpec(
        models=design.models,
        log_columns=log_cols,
        lock_sha256=None,
        **kw,
        **registry.covariate_kwargs(table.columns),
    )
    return replace(spec, sensitivities=False)


def v3_overrides(design: Any, repeats: int) -> dict[str, Any]:
    """Method 3 with ``repeats`` calibration fold assignments (no refits)."""
    cal = design.comparison_kwargs()["calibration"]
    return {"method": 3, "calibration": replace(cal, repeats=repeats)}


# -- native v2 from re-extracted Q and K ----------------------------------------------------


def extract_native(atlas: pd.DataFrame, checkpoints: list[str], out: Path) -> pd.DataFrame:
    """Re-extract each matrix of ``checkpoints`` and describe it with native v1 and v2.

    One row per (matrix_key, eps): ``matrix_match`` (the re-extracted matrix's
    ``matrix_sha256`` equals the atlas's), ``v1__*`` (native version 1, to compare with the
    atlas's values) and ``native__*`` (version 2). Each checkpoint's rows are written to
    ``out/native/<checkpoint>.parquet`` as it finishes (a rerun skips finished ones).
    """
    from analysis.atlas.build import matrix_sha256
    from analysis.atlas.verify import _extract  # the atlas's own re-extraction path
    from analysis.attention import fixed_torch_threads
    from analysis.descriptors import build_registry, builtin_registry
    from analysis.descriptors.describe import describe_matrix

    v1 = builtin_registry().get("native")
    v2 = build_registry(versions={"native": 2}).get("native")
    folder = out / "native"
    folder.mkdir(parents=True, exist_ok=True)
    frames = []
    for ck in checkpoints:
        path = folder / (ck.replace("/", "__") + ".parquet")
        if path.is_file():
            frames.append(pd.read_parquet(path))
            continue
        rows = atlas.loc[atlas["checkpoint"] == ck]
        t0 = time.perf_counter()
        arrays = _extract(rows, {}, {})
        t_extract = time.perf_counter() - t0
        parts = []
        with fixed_torch_threads(1):
            for key, group in rows.groupby("matrix_key", sort=True):
                m = arrays[key]
                eps = sorted(float(e) for e in group["eps"].unique())
                kwargs = {"Q": m.Q, "K": m.K, "scale": m.scale, "mask": m.mask, "bias": m.bias}
                kwargs |= {"eps": eps, "diagnostics": True}
                d1 = describe_matrix(blocks=[v1], **kwargs)
                d2 = describe_matrix(blocks=[v2], **kwargs)
                d1 = d1.rename(columns=lambda c: c.replace("native__", "v1__"))
                part = pd.concat([d2, d1.drop(columns=["temperature", "eps"])], axis=1)
                part.insert(0, "matrix_key", key)
                part["matrix_match"] = matrix_sha256(m.at(1.0)) == group["matrix_sha256"].iloc[0]
                parts.append(part)
        frame = pd.concat(parts, ignore_index=True).assign(checkpoint=ck)
        frame.attrs = {}
        tmp = path.with_suffix(".tmp")
        frame.to_parquet(tmp)
        tmp.replace(path)
        print(
            f"{ck}: {frame['matrix_key'].nunique()} matrices, extract {t_extract:.0f} s, "
            f"describe {time.perf_counter() - t0 - t_extract:.0f} s, matrix hash equal "
            f"{frame.drop_duplicates('matrix_key')['matrix_match'].mean():.0%}",
            flush=True,
        )
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def with_native_v2(atlas: pd.DataFrame, native: pd.DataFrame) -> pd.DataFrame:
    """The atlas with its ``native__*`` (version 1) columns replaced by version 2's."""
    v2 = [c for c in native.columns if c.startswith("native__")]
    cells = atlas.drop(columns=[c for c in atlas.columns if c.startswith("native__")])
    keyed = native[["matrix_key", "eps", *v2]]
    out = cells.merge(keyed, on=["matrix_key", "eps"], how="left", validate="many_to_one")
    if out[v2].isna().all(axis=1).any():
        missing = int(out[v2].isna().all(axis=1).sum())
        raise ValueError(f"{missing} atlas cells have no re-extracted native v2 row")
    return out


def native_agreement(atlas: pd.DataFrame, native: pd.DataFrame) -> pd.DataFrame:
    """Per native v1 covariate: the largest and median relative difference between the
    re-extraction's value and the atlas's (the atlas's inputs reproduced?)."""
    v1 = [c for c in native.columns if c.startswith("v1__")]
    merged = atlas.merge(native[["matrix_key", "eps", *v1]], on=["matrix_key", "eps"])
    rows = []
    for c in v1:
        name = c.replace("v1__", "native__")
        if name not in merged:
            continue
        a, b = merged[name].to_numpy(float), merged[c].to_numpy(float)
        rel = np.abs(a - b) / np.maximum(np.abs(a), 1e-300)
        rows.append(
            {
                "covariate": name,
                "median_rel_diff": float(np.median(rel)),
                "max_rel_diff": float(rel.max()),
            }
        )
    return pd.DataFrame(rows)


# -- the refit bootstrap, in resumable pieces -----------------------------------------------


def refit_replicates(table: pd.DataFrame, spec: Any, n: int, path: Path) -> dict:
    """``n`` refit-bootstrap replicates of ``spec``, as ``NestedComparison.fit`` draws them.

    The generator is the comparison's own: seeded by ``spec.random_state``, advanced by
    the held-out bootstrap's draws, then one :func:`analysis.compare.refit.refit_effects`
    replicate after another (the same stream as one call with R = n). Each replicate's
    effects are appended to ``path`` (JSON) as it finishes; a rerun resumes.
    """
    from analysis.compare.bootstrap import _held_out_draws
    from analysis.compare.nested import _refit
    from analysis.compare.nested_checks import _check_table
    from analysis.compare.refit import refit_effects
    from analysis.validation import check_random_state

    done = json.loads(path.read_text()) if path.is_file() else {"seconds": [], "effects": []}
    rng = check_random_state(spec.random_state)
    held, clusters, _, _ = _check_table(table)
    _held_out_draws(table, clusters, held, spec.n_boot, rng, spec.resampling_unit)
    one = replace(spec, refit_replicates=1)
    for i in range(n):
        t0 = time.perf_counter()
        if i < len(done["effects"]):  # replay the stream without refitting
            from analysis.compare.refit import resample_units

            unit = "cluster" if spec.resampling_unit == "head" else spec.resampling_unit
            resample_units(table, unit, rng)
            rng.integers(2**32)
            continue
        eff, _ = refit_effects(table, one, rng=rng, refit=_refit)
        done["effects"].append({"|".join(k): float(v[0]) for k, v in eff.items()})
        done["seconds"].append(time.perf_counter() - t0)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(done))
        tmp.replace(path)
        print(f"refit {i + 1}/{n}: {done['seconds'][-1]:.0f} s", flush=True)
    return done


def refit_decisions(result: Any, spec: Any, done: Mapping[str, Any]) -> pd.DataFrame:
    """The comparison's rows with the refit bootstrap's CI and p as the confirmatory
    ones, decided again (``refit_confirmatory``, then Holm and the method-3 rule)."""
    from analysis.compare.nested import _decide
    from analysis.compare.refit import refit_confirmatory

    keys = done["effects"][0].keys()
    effects = {tuple(k.split("|")): np.array([e[k] for e in done["effects"]]) for k in keys}
    family = {f"{b}<{r}" for b, r in spec.family}
    frame = result.to_frame().assign(_in_family=lambda f: f["pair"].isin(family))
    frame = refit_confirmatory(frame, effects, replace(spec, refit_replicates=len(done["effects"])))
    return _decide(frame, spec)


# -- the report -----------------------------------------------------------------------------


def reported(design: Any) -> pd.DataFrame:
    """The locked run's primary rows as reported (``tables/comparisons.csv``), its
    one-sided SESOI p (named ``equivalence_p`` under method 2) under ``non_superiority_p``."""
    frame = pd.read_csv(ATLAS.parent / "tables" / "comparisons.csv", comment="#")
    primary = design.comparison_kwargs()["primary_metric"]
    rows = frame.loc[frame["metric"] == primary].copy()
    rows.insert(0, "variant", "v2 as reported")
    rows["non_superiority_p"] = rows.pop("equivalence_p")
    rows["non_superiority_p_holm"] = rows.pop("equivalence_p_holm")
    rows["ci_source"] = "held-out bootstrap, fits fixed"
    return rows.reindex(columns=list(SUMMARY_COLUMNS))


def summarize(
    label: str, frame: pd.DataFrame, result: Any, design: Any, ci_source: str
) -> pd.DataFrame:
    """The primary metric's rows of one variant, with the extrapolation split."""
    primary = design.comparison_kwargs()["primary_metric"]
    hyp = {"<".join(h["pair"]): h["id"] for h in design.data["hypotheses"]}
    rows = frame.loc[frame["metric"] == primary].copy()
    rows.insert(0, "variant", label)
    rows.insert(1, "hypothesis", rows["pair"].map(hyp))
    rows["ci_source"] = ci_source
    if "non_superiority_p" not in rows:  # method 2: its one-sided p is non-superiority
        rows["non_superiority_p"] = rows.pop("equivalence_p")
        rows["non_superiority_p_holm"] = rows.pop("equivalence_p_holm")
    ex = result.extrapolation().to_frame()
    ex = ex.loc[ex["metric"] == primary].set_index(["pair", "estimate"])
    rows["extrapolated_share"] = [ex.loc[(p, "extrapolated"), "share_cells"] for p in rows["pair"]]
    rows["effect_in_range"] = [ex.loc[(p, "in range"), "effect"] for p in rows["pair"]]
    rows["effect_extrapolated"] = [ex.loc[(p, "extrapolated"), "effect"] for p in rows["pair"]]
    return rows.reindex(columns=list(SUMMARY_COLUMNS))


def main(argv: list[str] | None = None) -> int:
    from analysis.compare import NestedComparison
    from analysis.report.tables import markdown_table

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("stage", choices=["extract", "refits", "report"])
    ap.add_argument("--refits", type=int, default=60, help="refit-bootstrap replicates of (b)")
    ap.add_argument("--variant", choices=["b", "d"], default="b", help="refits: of which")
    ap.add_argument("--checkpoint", nargs="*", default=None, help="extract: these only")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    atlas = pd.read_parquet(ATLAS)
    design, registry = load_study()
    t_start = time.perf_counter()

    if args.stage == "extract":
        cks = args.checkpoint or sorted(atlas["checkpoint"].unique())
        native = extract_native(atlas, cks, out)
        native_agreement(atlas, native).to_csv(out / "native_v1_agreement.csv", index=False)
        print(native_agreement(atlas, native).to_string(index=False))
        return 0

    table, log_cols = atlas_table(atlas, design, registry)
    spec_b = spec_for(design, registry, table, log_cols, **v3_overrides(design, REPEATS_V3))
    native_dir = out / "native"
    cks = sorted(atlas["checkpoint"].unique())
    have = native_dir.is_dir() and all(
        (native_dir / (c.replace("/", "__") + ".parquet")).is_file() for c in cks
    )
    atlas_d, reg_d = atlas, registry
    if have:
        from analysis.descriptors import build_registry

        native = pd.concat([pd.read_parquet(p) for p in sorted(native_dir.glob("*.parquet"))])
        atlas_d = with_native_v2(atlas, native)
        reg_d = build_registry(versions={"native": 2})
    strat = set(stratified_held_out(design))
    t_d, logs_d = atlas_table(atlas_d, design, reg_d, held_out=strat)
    spec_d = spec_for(design, reg_d, t_d, logs_d, **v3_overrides(design, REPEATS_V3))
    if args.stage == "refits":
        tab, spec = (table, spec_b) if args.variant == "b" else (t_d, spec_d)
        done = refit_replicates(tab, spec, args.refits, out / f"refits_{args.variant}.json")
        print(f"{len(done['effects'])} refits, median {np.median(done['seconds']):.0f} s each")
        return 0

    rows = []

    def fit(label: str, tab: pd.DataFrame, spec: Any, ci: str = "held-out bootstrap, fits fixed"):
        t0 = time.perf_counter()
        res = NestedComparison(spec).fit(tab)
        rows.append(summarize(label, res.to_frame(), res, design, ci))
        print(f"{label}: {time.perf_counter() - t0:.0f} s", flush=True)
        return res

    def with_refits(label: str, res: Any, spec: Any, variant: str) -> None:
        path = out / f"refits_{variant}.json"
        if path.is_file():
            done = json.loads(path.read_text())
            n = len(done["effects"])
            frame = refit_decisions(res, spec, done)
            ci = f"refit bootstrap, {n} refits"
            rows.append(summarize(f"{label} + refit bootstrap ({n})", frame, res, design, ci))

    rows.append(reported(design))
    fit("v2 (locked rules)", table, spec_for(design, registry, table, log_cols))
    fit("(a) v3 decisions", table, spec_for(design, registry, table, log_cols, method=3))
    res_b = fit("(b0) + cross-fit R = 20", table, spec_b)
    with_refits("(b)", res_b, spec_b, "b")
    if have:
        t_c, logs_c = atlas_table(atlas_d, design, reg_d)
        spec_c = spec_for(design, reg_d, t_c, logs_c, **v3_overrides(design, REPEATS_V3))
        fit("(c) + native v2", t_c, spec_c)
    label_d = "(d) + stratified split" + ("" if have else " (native v1)")
    res_d = fit(label_d, t_d, spec_d)
    with_refits("(d)", res_d, spec_d, "d")

    result = pd.concat(rows, ignore_index=True)
    check = result.query("variant == 'v2 (locked rules)' and hypothesis == 'H1'").iloc[0]
    header = (
        f"# command: {command_line('experiments.reanalysis_v3')}\n"
        f"# date: {pd.Timestamp.now('UTC'):%Y-%m-%d %H:%M} UTC\n"
        "# exploratory: method-v3 rules applied after the outcomes existed; the locked "
        "report stays as run\n"
        "# equivalence_p: the two-sided TOST p (method 3 only); non_superiority_p: the "
        "one-sided p that method 2 reported as equivalence_p\n"
        f"# check: v2 refit from the atlas, M0 {check.base_value:.6f}, M1 "
        f"{check.rich_value:.6f}, H1 effect {check.effect:.6f}\n"
        f"# stratified split: {len(strat)} held-out heads, "
        f"{len(strat & set(design.held_out))} shared with the locked list\n"
    )
    (out / "reanalysis_v3.csv").write_text(header + result.to_csv(index=False))
    (out / "reanalysis_v3.md").write_text(header + markdown_table(result.round(6)) + "\n")
    print(result.drop(columns=["base_value", "rich_value"]).round(5).to_string(index=False))
    print(f"wrote {out} in {time.perf_counter() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
