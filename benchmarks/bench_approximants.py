"""How far practical efficient-attention approximants are from the certified optimum rank.

For the 72 MiniLM heads (the packaged checkpoint, one bundled text per length, the
package's own extraction), brackets ``[lo, hi]`` of ``r_eps`` from the engine
(``attnrank bracket``, ``default`` effort) and, per head and eps, the least rank at which
each approximant of ``attnrank approximants`` has certified max-row-l1 error <= eps:
truncated SVD, landmark rows (pivoted QR), Nystromformer (segment-mean landmarks),
Linformer (segment-mean pooling) and Performer (FAVOR+). Its overhead ``rank / r_eps`` lies
in ``[rank / hi, rank / lo]``.

Writes ``benchmarks/out/approximants_L{N}[_t{t}].csv`` (one row per head, method, eps),
``approximants_L{N}[_t{t}]_summary.csv`` / ``.json`` and, at t = 1,
``docs/figures/approximants_L{N}.png``. ``--temperatures`` divides the logits by t
(smoother heads at t > 1, where low-rank approximants are meant to work).

Usage, from the repository root::

    python -m benchmarks.bench_approximants [--lengths 128] [--temperatures 1]
                                            [--corpus-seed 0] [--workers 2]
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.atomic import atomic_write
from analysis.brackets.approximant_tables import (
    approximants_for_input,
    compare_with_brackets,
    summarize,
)
from analysis.brackets.approximants import approximant_errors
from analysis.brackets.io import profile_file, result_json
from analysis.brackets.results import bracket_frame
from analysis.cli.inputs import load_matrices, load_queries_keys
from analysis.executor import RunSpec
from benchmarks.common import EPS, OUT, ROOT, minilm_extract_npz

FIGURES = ROOT / "docs" / "figures"


def figure(table: pd.DataFrame, length: int, path: Path) -> None:
    """Per eps: heads sorted by their upper end, the bracket as a bar, each method's rank."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = {
        "svd": ("o", "C0"),
        "rows": ("s", "C1"),
        "nystrom": ("^", "C2"),
        "linformer": ("v", "C3"),
        "performer": ("x", "C4"),
    }
    fig, axes = plt.subplots(1, len(EPS), figsize=(5.2 * len(EPS), 4.2), sharey=True)
    for ax, e in zip(axes, EPS, strict=True):
        d = table[table["eps"] == e]
        br = d.drop_duplicates("index").sort_values(["upper", "lower"]).reset_index(drop=True)
        x = {idx: i for i, idx in enumerate(br["index"])}
        ax.vlines(range(len(br)), br["lower"], br["upper"], color="0.3", lw=2.5, label="bracket")
        for method, (marker, color) in styles.items():
            m = d[(d["method"] == method) & d["rank"].notna()]
            if m.empty:
                continue
            ax.scatter(
                [x[i] for i in m["index"]],
                m["rank"].astype(float),
                marker=marker,
                s=14,
                color=color,
                label=method,
                alpha=0.8,
            )
        ax.axhline(length, color="0.6", ls=":", lw=1)
        ax.set_title(f"eps = {e:g}")
        ax.set_xlabel("head (sorted by certified upper end)")
    axes[0].set_ylabel("rank reaching eps (certified)")
    axes[0].legend(fontsize=7, loc="upper left")
    fig.suptitle(
        f"MiniLM, N = {length}: least rank of each approximant vs certified bracket "
        "(Performer never reaches eps at rank <= N)"
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path, mode="wb") as fh:
        fig.savefig(fh, format="png", dpi=130)
    plt.close(fig)


def performer_at_full_rank(A: np.ndarray, qk) -> dict:
    """Performer's certified error with N features (seed 0) per head, and the median norms
    of ``sqrt(s) q`` and ``sqrt(s) k`` that drive its variance."""
    Q, K, s = qk.Q, qk.K, qk.scale
    N = A.shape[-1]
    errs = [
        approximant_errors(A[i], qk.head(i), methods=("performer",), ranks=[N])["error"].item()
        for i in range(A.shape[0])
    ]
    nq = [np.median(np.linalg.norm(np.sqrt(s[i]) * Q[i], axis=1)) for i in range(A.shape[0])]
    nk = [np.median(np.linalg.norm(np.sqrt(s[i]) * K[i], axis=1)) for i in range(A.shape[0])]
    return {
        "performer_error_full_rank_min": float(np.min(errs)),
        "performer_error_full_rank_median": float(np.median(errs)),
        "scaled_query_norm_median": float(np.median(nq)),
        "scaled_query_norm_range": [float(np.min(nq)), float(np.max(nq))],
        "scaled_key_norm_median": float(np.median(nk)),
    }


def run(length: int, corpus_seed: int, workers: int, temperatures: list[float]) -> list[dict]:
    metas = []
    with tempfile.TemporaryDirectory() as tmp:
        npz = Path(tmp) / "x.npz"
        input_id = minilm_extract_npz(npz, length, corpus_seed=corpus_seed)
        for t in temperatures:
            metas.append(run_temperature(npz, input_id, length, t, workers))
    return metas


def run_temperature(npz: Path, input_id: str, length: int, t: float, workers: int) -> dict:
    data = load_matrices(npz, temperature=t)
    t0 = time.perf_counter()
    profiles = profile_file(
        data, eps=EPS, effort="default", execution=RunSpec(workers=workers, progress=False)
    )
    t_brackets = time.perf_counter() - t0
    res = result_json(data, profiles, eps=EPS, effort="default", witnesses=False)
    t0 = time.perf_counter()
    qk = load_queries_keys(npz, data)
    table, _ = approximants_for_input(data, qk, eps=EPS, progress=False)
    t_approx = time.perf_counter() - t0
    performer = performer_at_full_rank(data.A, qk)
    table = compare_with_brackets(table, bracket_frame(res, data))
    summary = summarize(table)
    stem = f"approximants_L{length}" + ("" if t == 1 else f"_t{t:g}")
    OUT.mkdir(parents=True, exist_ok=True)
    with atomic_write(OUT / f"{stem}.csv", mode="w") as fh:
        table.to_csv(fh, index=False)
    with atomic_write(OUT / f"{stem}_summary.csv", mode="w") as fh:
        summary.to_csv(fh, index=False)
    if t == 1:
        figure(table, length, FIGURES / f"{stem}.png")
    # Where the best approximant from A alone (SVD or landmark rows) sits in the bracket.
    a_only = table[table["method"].isin(["svd", "rows"])]
    best = a_only.groupby(["index", "eps"])["rank"].min().astype(float)
    br = table.drop_duplicates(["index", "eps"]).set_index(["index", "eps"])
    meta = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "length": length,
        "temperature": t,
        "input": input_id,
        "heads": int(data.A.shape[0]),
        "eps": list(EPS),
        "seconds_brackets": round(t_brackets, 1),
        "seconds_approximants": round(t_approx, 1),
        "median_hi_over_lo": float(np.median(br["upper"] / br["lower"])),
        "best_A_only_equals_upper_share": float((best == br["upper"]).mean()),
        "median_best_A_only_over_upper": float(np.median(best / br["upper"])),
        # Approximant ends below the engine's upper end (the engine missed a witness).
        "approximant_below_upper": table.loc[
            table["rank"] < table["upper"], ["index", "eps", "method", "rank", "lower", "upper"]
        ]
        .astype(object)
        .to_dict(orient="records"),
        **performer,
        "summary": summary.to_dict(orient="records"),
    }
    with atomic_write(OUT / f"{stem}_summary.json", mode="w") as fh:
        json.dump(meta, fh, indent=2)
    return meta


def report(meta: dict) -> None:
    print(
        f"N = {meta['length']}, t = {meta['temperature']:g}, input {meta['input']}: brackets "
        f"{meta['seconds_brackets']} s, approximants {meta['seconds_approximants']} s, median "
        f"hi/lo {meta['median_hi_over_lo']:.2f}; Performer at rank N: certified error min "
        f"{meta['performer_error_full_rank_min']:.3f}, median "
        f"{meta['performer_error_full_rank_median']:.3f}"
    )
    for row in meta["approximant_below_upper"]:
        print(f"approximant below the engine's upper end: {row}")
    summary = pd.DataFrame(meta["summary"])
    print(summary.to_string(index=False, float_format=lambda x: f"{x:.3g}"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lengths", type=int, nargs="+", default=[128])
    p.add_argument("--corpus-seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument(
        "--temperatures", type=float, nargs="+", default=[1.0], help="logit temperatures t"
    )
    args = p.parse_args(argv)
    for length in args.lengths:
        for meta in run(length, args.corpus_seed, args.workers, args.temperatures):
            report(meta)
    return 0


if __name__ == "__main__":
    sys.exit(main())
