"""At the boundary null, how often is a rejection an error given the fitted models?

``attnrank validate-comparison`` measures the size at the boundary null, where the
*expected* held-out effect over simulated studies is 0. The cluster bootstrap resamples
held-out heads only (the fits are not refitted), so it tests the effect of the models as
fitted, ``theta(fits)``: the expected loss difference on new heads from the population.
That varies between studies with the training draw. This diagnostic simulates each study
of the shipped MiniLM design with a large extra population of held-out heads, computes
``theta(fits)`` on it (the fits, calibration and standardization come from training cells
only, so the extra heads change nothing else), and reports for the percentile and the
studentized bootstrap: the rejection rates (decision; unadjusted one-sided p < alpha),
the share of studies with ``theta(fits) <= 0`` and the rejection rate among them.

Usage, from the repository root::

    python -m experiments.boundary_conditional --share 0.0505 --simulations 300 \
        [--population 400] [--seed 0] [--native-features 12 --baseline-features 10]

Writes ``experiments/out/boundary_conditional.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

import numpy as np

from analysis.compare.metrics import interval_sq_loss
from analysis.power import PowerAssumptions, load_widths, simulate_study, sizes_from_design
from analysis.power.simulate import simulated_comparison
from experiments.common import OUT

DESIGN = "preregistration/offline-minilm.toml"
WIDTHS = "data/reference/minilm_bracket_widths.csv"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--share", type=float, required=True, help="the boundary share")
    ap.add_argument("--simulations", type=int, default=300)
    ap.add_argument("--population", type=int, default=400, help="extra held-out heads")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--native-features", type=int)
    ap.add_argument("--baseline-features", type=int)
    args = ap.parse_args()
    sizes = sizes_from_design(DESIGN)
    study = {m: dataclasses.replace(sizes, bootstrap=m) for m in ("cluster", "studentized")}
    big = dataclasses.replace(
        sizes,
        n_heads=sizes.n_heads + args.population,
        n_held_out=sizes.n_held_out + args.population,
        strata=(),
    )
    a = PowerAssumptions(
        native_features=args.native_features, baseline_features=args.baseline_features
    )
    widths = load_widths(WIDTHS)
    rows = []
    t0 = time.perf_counter()
    for seq in np.random.SeedSequence(args.seed).spawn(args.simulations):
        g = np.random.default_rng(seq)
        table = simulate_study(big, widths, share=args.share, assumptions=a, random_state=g)
        held = table.loc[table["held_out"], "cluster"].unique()
        pop = table["held_out"] & ~table["cluster"].isin(set(held[: sizes.n_held_out]))
        small = table.loc[~pop].reset_index(drop=True)
        row = {}
        for m, s in study.items():
            r = simulated_comparison(s, small, random_state=np.random.default_rng(1)).frame
            r = r[(r.pair == "M0<M1") & (r.metric == s.primary_metric)].iloc[0]
            row[m] = (bool(r.adds_information), float(r.p_value) < s.alpha, float(r.effect))
        full = simulated_comparison(
            dataclasses.replace(sizes, n_boot=99), table, random_state=np.random.default_rng(1)
        )
        p = pop.to_numpy()
        lo, up = table["y_lower"].to_numpy()[p], table["y_upper"].to_numpy()[p]
        loss = {
            k: interval_sq_loss(full.fits[k].predict(full.covariates.matrices[k][p]), lo, up).mean()
            for k in ("M0", "M1")
        }
        rows.append((row, loss["M0"] - loss["M1"]))
    theta = np.array([t for _, t in rows])
    eff = np.array([r["cluster"][2] for r, _ in rows])
    out = {
        "design": DESIGN,
        "share": args.share,
        "simulations": args.simulations,
        "population_heads": args.population,
        "assumptions": a.to_dict(),
        "mean_effect": float(eff.mean()),
        "sd_effect": float(eff.std(ddof=1)),
        "mean_theta": float(theta.mean()),
        "sd_theta": float(theta.std(ddof=1)),
        "share_theta_le_0": float((theta <= 0).mean()),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    le0 = theta <= 0
    for m in study:
        dec = np.array([r[m][0] for r, _ in rows])
        unadj = np.array([r[m][1] for r, _ in rows])
        out[m] = {
            "decision_rate": float(dec.mean()),
            "unadjusted_rate": float(unadj.mean()),
            "decision_rate_given_theta_le_0": float(dec[le0].mean()) if le0.any() else None,
            "unadjusted_rate_given_theta_le_0": float(unadj[le0].mean()) if le0.any() else None,
            "errors_decision": float((dec & le0).mean()),
            "errors_unadjusted": float((unadj & le0).mean()),
        }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "boundary_conditional.json").write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
