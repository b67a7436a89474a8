"""Ground the assumptions of ``attnrank validate-comparison`` in MiniLM training heads.

Two measurements, both on the shipped MiniLM study's TRAINING heads only (its 18 held-out
heads are read from the locked design and dropped before anything is computed: outside a
locked confirmatory run, descriptors are looked at against outcomes on training heads only):

1. Native head share (predictors only, no outcome is read): the study's own inputs
   (``attnrank extract minilm --corpus-seed <design seed> --length L`` for the design's
   lengths) and ``attnrank describe`` with the design's temperatures and eps. For each
   native covariate (natural log where the registry marks it positive-scale): its
   between-head share, its R^2 on the (logged, uncalibrated) baseline covariates, and the
   intraclass correlation ICC(1) of what the baseline leaves. That last number is what
   ``--native-head-share`` stands for (the part of a native feature not shared with the
   baseline). Also counts the non-constant covariates of each block.
2. Residual SD and ICC of M0, and the bracket widths: the reference brackets
   (``data/reference/minilm_bracket_widths.csv``, training heads, t = 1) against the
   baseline block of the same matrices (``attnrank reference-widths`` inputs); M0 is
   prepared and fitted as in ``NestedComparison`` (isotonic calibration, interval
   regression). Reported: in-sample sigma, and the SD / ICC of midpoint residuals of a
   head-grouped 6-fold CV (new heads, as the held-out comparison sees them).

Writes ``experiments/out/simulation_assumptions.json`` and
``experiments/out/native_head_share.csv``. Run from the repository root::

    python -m experiments.simulation_assumptions [--intrinsic]
    python -m experiments.simulation_assumptions --design preregistration/offline-families.toml

``--design`` measures the native head share (part 1 only) on another design's training
heads: every real source of the design at its own lengths, heads grouped by
``checkpoint:layer:head``; the design must hold its drawn held-out list. Part 2 reads the
MiniLM reference widths and runs for the default design only. Outputs then carry the
design's stem (``native_head_share_<stem>.csv``, ``simulation_assumptions_<stem>.json``).

``--intrinsic`` also describes the intrinsic block (slow: kappa solves) to count its
covariates.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.cli import main as cli_main
from analysis.compare.covariates import prepare_covariates
from analysis.compare.estimators import fit_interval
from analysis.compare.headlevel import residual_icc
from analysis.descriptors import builtin_registry
from analysis.prereg.design import load_design
from experiments.common import OUT, ROOT, command_line

DESIGN = ROOT / "preregistration" / "offline-minilm.toml"
WIDTHS = ROOT / "data" / "reference" / "minilm_bracket_widths.csv"
CHECKPOINT = "sentence-transformers/all-MiniLM-L6-v2"


def held_out_ids(design) -> set[str]:
    """Held-out head ids ``checkpoint:layer:head`` of a drawn design."""
    if not design.held_out:
        raise ValueError("the design has no held-out list: run `attnrank prereg draw` first")
    return set(design.held_out)


def describe_design(path: Path, out: Path, *, intrinsic: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Baseline and native blocks of every training head of a (drawn) design's real sources."""
    design = load_design(path)
    s = design.data["sampling"]
    seed = int(s["inputs"]["seed"])
    blocks = ["baseline", "native"] + (["intrinsic"] if intrinsic else [])
    held = held_out_ids(design)
    frames, feats = [], None
    for src in s["sources"]:
        if src["kind"] != "checkpoint":
            continue
        ckpt = src["checkpoint"]
        tag = ckpt.replace("/", "--")
        for L in src.get("lengths", s.get("lengths")):
            npz = out / f"{tag}_L{L}_seed{seed}.npz"
            if not npz.is_file():
                rc = cli_main(
                    ["extract", ckpt, "--corpus-seed", str(seed), "--length", str(L)]
                    + ["--out", str(npz)]
                )
                if rc:
                    raise SystemExit(rc)
            csv = out / f"describe_{tag}_L{L}_{'_'.join(blocks)}.csv"
            fcsv = out / f"features_{'_'.join(blocks)}.csv"
            if not csv.is_file():
                t0 = time.perf_counter()
                rc = cli_main(
                    ["describe", str(npz), "--eps", *map(str, s["eps"]), "--temperatures"]
                    + [*map(str, s["temperatures"]), "--blocks", *blocks, "--out", str(csv)]
                    + ["--features-out", str(fcsv), "--quiet"]
                )
                if rc:
                    raise SystemExit(rc)
                print(f"describe {ckpt} L={L}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            d = pd.read_csv(csv).assign(length=L, checkpoint=ckpt)
            ids = ckpt + ":" + d["layer"].astype(str) + ":" + d["head"].astype(str)
            frames.append(d.loc[~ids.isin(held).to_numpy()])
            feats = pd.read_csv(fcsv)
    return pd.concat(frames, ignore_index=True), feats


def held_out_pairs(design) -> set[tuple[int, int]]:
    out = set()
    for head_id in design.held_out:
        ckpt, layer, head = head_id.rsplit(":", 2)
        if ckpt != CHECKPOINT:
            raise ValueError(f"unexpected checkpoint in the held-out list: {ckpt}")
        out.add((int(layer), int(head)))
    return out


def between_share(v: np.ndarray, groups: np.ndarray) -> float:
    """Variance of head means over total variance (balanced cells)."""
    m = pd.Series(v).groupby(groups).transform("mean").to_numpy()
    return float(np.var(m) / np.var(v))


def native_head_share(df: pd.DataFrame, feats: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    info = feats.set_index("column")
    covs = info.index[info["kind"] == "covariate"]
    x = {}
    for c in covs:
        v = df[c].to_numpy(float)
        x[c] = np.log(v) if bool(info.loc[c, "log_scale"]) else v
    groups = (df["layer"].astype(str) + ":" + df["head"].astype(str)).to_numpy()
    if "checkpoint" in df:
        groups = (df["checkpoint"].astype(str) + ":").to_numpy() + groups
    nonconst = {c for c in covs if np.nanstd(x[c]) > 1e-9 * max(1.0, abs(np.nanmean(x[c])))}
    base = [c for c in covs if c.startswith("baseline__") and c in nonconst]
    X = np.column_stack([np.ones(len(df))] + [x[c] for c in base])
    rows = []
    for c in covs:
        if not c.startswith("native__") or c not in nonconst:
            continue
        v = x[c]
        beta, *_ = np.linalg.lstsq(X, v, rcond=None)
        r = v - X @ beta
        rows.append(
            {
                "feature": c,
                "between_share": between_share(v, groups),
                "icc": residual_icc(v, groups),
                "r2_on_baseline": 1.0 - np.var(r) / np.var(v),
                "residual_between_share": between_share(r, groups),
                "residual_icc": residual_icc(r, groups),
            }
        )
    table = pd.DataFrame(rows)
    counts = {
        b: int(sum(1 for c in covs if c.startswith(b + "__") and c in nonconst))
        for b in ("baseline", "native", "intrinsic")
    }
    summary = {
        "cells": len(df),
        "training_heads": int(pd.Series(groups).nunique()),
        "non_constant_covariates": counts,
        "constant_covariates": sorted(c for c in covs if c not in nonconst),
        "native_residual_icc_median": float(table["residual_icc"].median()),
        "native_residual_icc_range": [
            float(table["residual_icc"].min()),
            float(table["residual_icc"].max()),
        ],
        "native_raw_icc_median": float(table["icc"].median()),
        "native_r2_on_baseline_median": float(table["r2_on_baseline"].median()),
    }
    return table, summary


def residual_check() -> dict:
    from analysis.descriptors.baseline import baseline_matrix
    from experiments.common import minilm_attention

    w = pd.read_csv(WIDTHS)
    held = held_out_pairs(load_design(DESIGN))
    if any((int(a), int(b)) in held for a, b in zip(w["layer"], w["head"], strict=True)):
        raise ValueError("the widths reference holds a held-out head")
    rows = []
    for L in sorted(w["length"].unique()):
        A = minilm_attention(int(L))
        for (layer, head), g in w[w["length"] == L].groupby(["layer", "head"]):
            b = baseline_matrix(A[layer * 12 + head], None)
            b.pop("sv")
            for r in g.itertuples():
                rows.append(
                    {
                        "cluster": f"{layer}:{head}",
                        "y_lower": np.log2(r.lower),
                        "y_upper": np.log2(r.upper),
                        **{f"baseline__{k}": v for k, v in b.items()},
                        "baseline__eps": r.eps,
                    }
                )
    t = pd.DataFrame(rows)
    logc = [
        "baseline__n_queries",
        "baseline__n_keys",
        "baseline__eps",
        "baseline__max_col_mass",
        "baseline__stable_rank",
    ]
    lo, up = t["y_lower"].to_numpy(), t["y_upper"].to_numpy()
    mid = 0.5 * (lo + up)
    groups = t["cluster"].to_numpy()
    everything = np.ones(len(t), dtype=bool)
    prep = prepare_covariates(
        t,
        {"M0": ["baseline"]},
        everything,
        log_columns=logc,
        **builtin_registry().covariate_kwargs(t.columns),
    )
    fit = fit_interval(prep.matrices["M0"], lo, up)
    res_in = mid - fit.predict(prep.matrices["M0"])
    from sklearn.model_selection import GroupKFold

    cv = np.empty(len(t))
    for trn, tst in GroupKFold(6).split(t, groups=groups):
        m = np.zeros(len(t), dtype=bool)
        m[trn] = True
        p = prepare_covariates(
            t,
            {"M0": ["baseline"]},
            m,
            log_columns=logc,
            **builtin_registry().covariate_kwargs(t.columns),
        )
        f = fit_interval(p.matrices["M0"][m], lo[m], up[m])
        cv[tst] = mid[tst] - f.predict(p.matrices["M0"][tst])
    width = up - lo
    return {
        "cells": len(t),
        "training_heads": int(t["cluster"].nunique()),
        "lengths": sorted(int(x) for x in w["length"].unique()),
        "temperature": 1.0,
        "sd_log2_midpoint": float(mid.std()),
        "m0_interval_sigma_in_sample": fit.sigma,
        "m0_midpoint_residual_sd_in_sample": float(res_in.std()),
        "m0_midpoint_residual_icc_in_sample": residual_icc(res_in, groups),
        "m0_midpoint_residual_sd_head_cv": float(cv.std()),
        "m0_midpoint_residual_icc_head_cv": residual_icc(cv, groups),
        "width_log2_mean": float(width.mean()),
        "width_log2_median": float(np.median(width)),
        "width_log2_by_eps": {
            f"{e:g}": float(width[w["eps"].to_numpy() == e].mean())
            for e in sorted(w["eps"].unique())
        },
        "closed_share": float(np.mean(width == 0)),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--intrinsic", action="store_true", help="also describe the intrinsic block")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument(
        "--design",
        type=Path,
        default=None,
        help="another drawn design: native head share on its training heads only",
    )
    args = ap.parse_args(argv)
    print("command:", command_line("experiments.simulation_assumptions"))
    work = args.out / "assumptions"
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    df, feats = describe_design(args.design or DESIGN, work, intrinsic=args.intrinsic)
    suffix = "" if args.design is None else "_" + args.design.stem
    table, share = native_head_share(df, feats)
    table.to_csv(args.out / f"native_head_share{suffix}.csv", index=False)
    out = {"native_head_share": share}
    if args.design is None:
        out["m0_residual_and_widths"] = residual_check()
    out["seconds"] = round(time.perf_counter() - t0, 1)
    (args.out / f"simulation_assumptions{suffix}.json").write_text(json.dumps(out, indent=1))
    with pd.option_context("display.width", 200, "display.max_columns", 10):
        print(table.round(3).to_string(index=False))
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
