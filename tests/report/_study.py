"""A small StudyResults computed from real small computations (shared by the report tests).

Two tiny random "checkpoints" (random Q, K per head; the second causal), certified
brackets from ``analysis.brackets.profile_matrix`` (effort "fast"), descriptor blocks
from the registry, a synthetic spherical / ball family, and the nested comparisons and
head-level analysis from ``analysis.compare`` on the resulting table. Nothing is typed
in by hand except the design, which mirrors ``preregistration/offline-minilm.toml``.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pandas as pd

from analysis.brackets import profile_matrix
from analysis.compare import compare_nested
from analysis.compare.headlevel import head_level_analysis
from analysis.descriptors.registry import (
    Cell,
    MatrixData,
    covariate_kwargs,
    feature_info,
    get_block,
    run_block,
)
from analysis.report.results import BRACKET_COLUMNS, StudyResults
from analysis.sources.synthetic import full_ball, spherical

TEMPERATURES = (0.5, 1.0, 2.0)
EPS = (0.1, 0.2)
LENGTHS = (10, 14)
BLOCKS = ("baseline", "baseline_plus", "native", "intrinsic")
#: A few features per block keep the interval fits on ~120 training cells well posed
#: (and fast); the per-r diagnostic stays to check that summaries leave it out.
KEEP = (
    "baseline__n_keys",
    "baseline__temperature",
    "baseline__eps",
    "baseline__entropy_mean",
    "baseline__stable_rank",
    "baseline_plus__svd_proj_rank",
    "native__kappa",
    "native__q_stable_rank",
    "intrinsic__Pi",
    "intrinsic__r_star",
    "intrinsic__q_r1",
)
CHECKPOINTS = {
    # checkpoint -> (family, layers, heads, head_dim, causal)
    "tiny/bert-random": ("bert", 2, 4, 4, False),
    "tiny/gpt2-random": ("gpt2", 2, 3, 4, True),
}
HELD_OUT = (
    "tiny/bert-random:0:1",
    "tiny/bert-random:1:2",
    "tiny/gpt2-random:0:0",
    "tiny/gpt2-random:1:1",
)

DESIGN: dict[str, Any] = {
    "title": "Report test study: two tiny random checkpoints",
    "effort": "fast",
    "hypotheses": [
        {
            "id": "H1",
            "kind": "confirmatory",
            "pair": ["M0", "M1"],
            "statement": "The native block lowers the held-out loss beyond the baseline.",
        },
        {
            "id": "H2",
            "kind": "secondary",
            "pair": ["M0", "M2"],
            "statement": "The intrinsic block lowers the held-out loss beyond the baseline.",
        },
        {
            "id": "H3",
            "kind": "secondary",
            "pair": ["M0", "M3"],
            "statement": "Native and intrinsic together lower the held-out loss.",
        },
        {
            "id": "S1",
            "kind": "sensitivity",
            "pair": ["M0plus", "M1plus"],
            "statement": "H1 with baseline_plus in both models; outside the Holm family.",
        },
    ],
    "sampling": {
        "temperatures": list(TEMPERATURES),
        "eps": list(EPS),
        "lengths": list(LENGTHS),
        "cluster": "head",
        "sources": [
            {"kind": "checkpoint", "checkpoint": c, "layers": v[1], "heads": v[2]}
            for c, v in CHECKPOINTS.items()
        ]
        + [
            {"kind": "synthetic", "family": "spherical", "exploratory": True, "d": [2, 3]},
            {"kind": "synthetic", "family": "ball", "exploratory": True, "d": [2]},
        ],
    },
    "held_out": {"heads": list(HELD_OUT), "seed": 1, "fraction": 0.25, "unit": "head"},
    "outcome": {"quantity": "r_eps", "transform": "log2", "observed_as": "interval"},
    "models": {
        "M0": ["baseline"],
        "M1": ["baseline", "native"],
        "M2": ["baseline", "intrinsic"],
        "M3": ["baseline", "native", "intrinsic"],
        "M0plus": ["baseline", "baseline_plus"],
        "M1plus": ["baseline", "baseline_plus", "native"],
    },
    "metrics": {"primary": "interval_sq_loss", "secondary": ["interval_loglik", "spearman_mid"]},
    "inference": {
        "estimator": "interval",
        "bootstrap": "cluster",
        "bootstrap_replicates": 199,
        "seed": 7,
        "alpha": 0.05,
        "ci_level": 0.95,
        "family": [["M0", "M1"], ["M0", "M2"], ["M0", "M3"]],
        "correction": "holm",
        "decision": "adds information when the Holm-adjusted one-sided bootstrap p < alpha "
        "and the 95% CI lower end > 0",
        "sensitivity_pairs": [["M0plus", "M1plus"]],
    },
    "exclusions": {"rules": ["failed verification", "missing covariate"]},
    "exploratory": {"analyses": ["synthetic families", "head-level analysis"]},
}


def _real_matrices(rng: np.random.Generator):
    for ck, (family, layers, heads, d, causal) in CHECKPOINTS.items():
        for layer in range(layers):
            for head in range(heads):
                spread = float(np.exp(rng.normal(0.0, 0.5)))  # heads differ in kappa
                for L in LENGTHS:
                    Q = rng.normal(size=(L, d)) * spread
                    K = rng.normal(size=(L, d)) * spread
                    mask = np.tril(np.ones((L, L), dtype=bool)) if causal else None
                    yield ck, family, layer, head, L, Q, K, d**-0.5, mask


def _bracket_rows(A: np.ndarray, eps=EPS) -> list[tuple[float, int, int]]:
    prof = profile_matrix(A, eps=eps, effort="fast")
    return [(b["eps"], b["lower"], b["upper"]) for b in prof.brackets(eps)]


def make_study(seed: int = 0) -> StudyResults:
    """Compute the small study (about 100 profiles; a few seconds of CPU)."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    feats: list[dict[str, Any]] = []
    blocks = [get_block(b) for b in BLOCKS]
    for ck, family, layer, head, L, Q, K, scale, mask in _real_matrices(rng):
        head_id = f"{ck}:{layer}:{head}"
        matrix_key = f"{head_id}|corpus-0|N={L}"
        md = MatrixData(Q, K, scale, mask, eps_grid=EPS, temperatures=TEMPERATURES)
        for t in TEMPERATURES:
            for eps, lo, hi in _bracket_rows(md.attention(t)):
                key = f"{matrix_key}|t={t:g}|eps={eps:g}"
                rows.append(
                    dict(
                        cell_key=key,
                        matrix_key=matrix_key,
                        source="checkpoint",
                        checkpoint=ck,
                        family=family,
                        head_id=head_id,
                        layer=layer,
                        head=head,
                        input_id="corpus-0",
                        length=L,
                        temperature=t,
                        eps=eps,
                        lo=lo,
                        hi=hi,
                        closed=lo == hi,
                        held_out=head_id in HELD_OUT,
                        d=np.nan,
                        beta=np.nan,
                        seed=np.nan,
                    )
                )
                f = {"cell_key": key}
                for b in blocks:
                    f.update(run_block(b, Cell(md, t, eps)))
                feats.append(f)
    for fam, maker, dims in (("spherical", spherical, (2, 3)), ("ball", full_ball, (2,))):
        for d in dims:
            for beta in (1.0, 4.0, 16.0):
                for s in (0, 1):
                    m = maker(12, d, beta, random_state=s)
                    matrix_key = f"{m.checkpoint_id}|seed={s}|n=12"
                    for eps, lo, hi in _bracket_rows(m.A):
                        rows.append(
                            dict(
                                cell_key=f"{matrix_key}|t=1|eps={eps:g}",
                                matrix_key=matrix_key,
                                source="synthetic",
                                checkpoint=fam,
                                family=fam,
                                head_id="",
                                layer=0,
                                head=0,
                                input_id="",
                                length=12,
                                temperature=1.0,
                                eps=eps,
                                lo=lo,
                                hi=hi,
                                closed=lo == hi,
                                held_out=False,
                                d=float(d),
                                beta=beta,
                                seed=float(s),
                            )
                        )
    brackets = pd.DataFrame(rows, columns=list(BRACKET_COLUMNS))
    features = pd.DataFrame(feats).loc[:, ["cell_key", *KEEP]]

    real = brackets[brackets.source == "checkpoint"]
    table = real[["cell_key", "head_id", "held_out", "input_id", "length"]].rename(
        columns={"head_id": "cluster"}
    )
    table = table.assign(
        y_lower=np.log2(np.maximum(real["lo"].to_numpy(float), 1.0)),
        y_upper=np.log2(real["hi"].to_numpy(float)),
    ).merge(features, on="cell_key")
    log_columns = [c for c in features.columns if c != "cell_key" and feature_info(c).log_scale]
    models = {k: list(v) for k, v in DESIGN["models"].items()}
    inf = DESIGN["inference"]
    kwargs = dict(
        family=[tuple(p) for p in inf["family"]],
        extra_pairs=[tuple(p) for p in inf["sensitivity_pairs"]],
        log_columns=log_columns,
        n_boot=inf["bootstrap_replicates"],
        alpha=inf["alpha"],
        random_state=inf["seed"],
        **covariate_kwargs(table.columns),
    )
    lock = "ab" * 32
    res = compare_nested(table, models, estimator="interval", lock_sha256=lock, **kwargs)
    res_ols = compare_nested(table, models, estimator="ols", lock_sha256=lock, **kwargs)
    train = table.loc[~table["held_out"]].drop(columns=["held_out"])
    hl_models = {k: models[k] for k in ("M0", "M1", "M2", "M3")}
    hl = head_level_analysis(
        train,
        hl_models,
        log_columns=log_columns,
        estimator="ols",
        random_state=3,
        **covariate_kwargs(train.columns),
    )
    return StudyResults(
        study="report-test",
        title=DESIGN["title"],
        design=copy.deepcopy(DESIGN),
        brackets=brackets,
        features=features,
        comparison=res.to_frame(),
        comparison_ols=res_ols.to_frame(),
        head_level=hl.to_frame(),
        dropped_columns=sorted(set(res.dropped["column"])) if len(res.dropped) else [],
        excluded={"failed_verification": 0, "missing_covariate": 0},
        provenance={
            "design_sha256": "cd" * 32,
            "lock_sha256": lock,
            "held_out_sha256": "ef" * 32,
            "package_version": "0.1.0",
            "git_commit": "0123456789abcdef0123456789abcdef01234567",
            "libraries": {"numpy": np.__version__, "pandas": pd.__version__},
            "seeds": {"inference": inf["seed"], "held_out": 1},
            "effort": "fast",
            "stage_seconds": {"brackets": 1.5, "descriptors": 0.7, "compare": 2.25},
            "created": "2026-12-03T12:00:00+00:00",
        },
        lr_tests=res.lr_tests.copy(),
        head_level_meta={
            "residual_icc": hl.residual_icc,
            "base_model": hl.base_model,
            "folds": hl.folds,
        },
    )
