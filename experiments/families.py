"""Bracket and descriptor cost and quality on the real heads of each checkpoint family.

For each checkpoint alias and length, one bundled corpus input (``--corpus-seed``, default
0: a ``pydoc_data.topics`` text, a scikit-learn sample image for vision models, or the
generated clip of :func:`analysis.sources.audio.generated_clip` for a speech encoder) is
extracted with the package (:func:`analysis.sources.checkpoints.extract_from_model`); every
head's ``A = softmax64(Q, K, scale, mask)`` at t = 1 is bracketed by the engine
(:func:`analysis.brackets.profile_matrices`, blocks of ``--batch`` heads, ``--effort``) and
described by every registered descriptor block
(:func:`analysis.descriptors.describe.describe_matrix`), one torch / BLAS thread per worker.

Writes to ``experiments/out/families/`` (``--out``):

* ``<alias>_s<seed>_L<L>.npz``: the extraction (reused by a rerun, so resumed heads see the same
  matrices);
* ``<alias>_s<seed>_L<L>_<effort>_<heads>.csv``: one row per (head, eps): ``lower``, ``upper``,
  the construction behind each end, seconds per profile (the block's time over its size),
  descriptor seconds per head, and three shape measures of the head (mean mass on key 0,
  on the diagonal, on the previous key). Written atomically when every head is done; until
  then each finished block sits in ``....parts/`` (atomic too), so a killed run resumes
  where it stopped and a finished (checkpoint, length) is skipped;
* ``<alias>_summary.csv`` / ``<alias>.md`` per family and ``families_summary.csv`` /
  ``families.md`` for every family of this run: per (length, eps) the number of heads,
  median hi/lo, closed share (lo == hi), median and mean width, median seconds per
  profile, median descriptor seconds per head, and a note on the family's mask and heads;
* for the families of this run together: ``families_by_lower_end.csv`` (median hi/lo and
  width per bin of the lower end: families compared at the same certified rank),
  ``families_by_sink_mass.csv`` (heads in thirds of their mass on key 0),
  ``families_closed.csv`` (every closed bracket) and ``families_methods.csv`` (the
  construction that won each end).

Usage, from the repository root::

    python -m experiments.families --checkpoint smollm2 minilm [--lengths 64 128]
        [--eps 0.05 0.1 0.2] [--heads-limit 9] [--workers 2] [--effort default]
        [--batch 4] [--corpus-seed 0] [--fresh] [--out DIR] [--summarize-only]

Default lengths: 64 and 128 for text, 65 and 145 (1 + 8^2, 1 + 12^2) for vision.
``--heads-limit k`` takes k heads evenly spaced over (layer, head) in layer-major order (a
quick estimate of the whole run's time). ``--summarize-only`` runs nothing and writes the
summaries from the rows on disk, an unfinished run's finished blocks included (its head
count says how many); so families run by separate invocations are tabled together.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from experiments.common import EPS, OUT, command_line

#: Where this experiment writes (under the gitignored experiments/out/).
FAMILIES_OUT = OUT / "families"
TEXT_LENGTHS = (64, 128)
VISION_LENGTHS = (65, 145)


def _slug(alias: str) -> str:
    return alias.lower().replace("/", "--")


def _atomic_csv(df: pd.DataFrame, path: Path) -> None:
    from analysis.atomic import atomic_write

    with atomic_write(path, mode="w") as fh:
        df.to_csv(fh, index=False)


def family_note(ck: Any, ex: Any) -> str:
    """The mask and head layout of an extraction, in words (the table's note column)."""
    meta = ex.meta
    if meta.get("model_type") == "whisper":
        return (
            "speech encoder: generated clip, 2 L log-mel frames, bidirectional; "
            "queries carry the 1/8 scale; float16 weights"
        )
    if ck.is_vision:
        prefix = int(meta.get("input", {}).get("prefix_tokens", 1))
        return f"vision: {prefix} prefix + {ex.length - prefix} patches, bidirectional"
    parts = []
    if ex.causal:
        parts.append("causal: lower-triangular mask, row i has i + 1 keys")
    else:
        parts.append("bidirectional text")
    n_kv = meta.get("num_key_value_heads")
    if n_kv is not None and n_kv < ex.A.shape[1]:
        parts.append(f"GQA {ex.A.shape[1]} query / {n_kv} KV heads")
    if "rope_theta" in meta:
        parts.append("RoPE")
    window = meta.get("sliding_window")
    if window is not None and meta.get("sliding_layers"):
        n_sliding, n_layers = len(meta["sliding_layers"]), ex.A.shape[0]
        reach = "the full causal mask at this L" if window >= ex.length else "banded"
        parts.append(f"{n_sliding} of {n_layers} layers sliding window {window} ({reach})")
    if ex.bias is not None:
        parts.append("relative-position bias on every head's logits")
    if "dequantized_from" in meta:
        parts.append(f"dequantized from {meta['dequantized_from']}")
    return "; ".join(parts)


def extraction(alias: str, length: int, seed: int, out_dir: Path) -> tuple[Any, str]:
    """The extraction of one corpus input (read back when this experiment saved it)."""
    from analysis.sources.files import load_extraction

    path = out_dir / f"{_slug(alias)}_s{seed}_L{length}.npz"
    if path.is_file():
        ex = load_extraction(path)
        if ex.meta["input"].get("corpus_seed") != seed:
            raise SystemExit(f"{path} holds another corpus seed's input: rerun with --fresh")
        return ex, ex.meta["bench_note"]
    from analysis.sources import inputs
    from analysis.sources.audio import corpus_audio, is_audio
    from analysis.sources.checkpoints import extract_from_model
    from analysis.sources.files import save_extraction

    ck = _checkpoint(alias)
    if is_audio(ck):
        model_input = corpus_audio(ck, seed, length)  # the generated clip, 2 L mel frames
    elif ck.is_vision:
        model_input = inputs.corpus_image(ck, seed, length)
    else:
        model_input = inputs.corpus_text(ck, seed, length)
    ex = extract_from_model(ck, model_input)
    note = family_note(ck, ex)
    ex.meta["bench_note"] = note
    save_extraction(ex, path)
    return ex, note


_CHECKPOINTS: dict[str, Any] = {}


def _checkpoint(alias: str) -> Any:
    """The loaded checkpoint of ``alias`` (loaded once per family)."""
    from analysis.sources.checkpoints import load_checkpoint

    if alias not in _CHECKPOINTS:
        t0 = time.perf_counter()
        _CHECKPOINTS[alias] = load_checkpoint(alias)
        print(f"  loaded {alias} in {time.perf_counter() - t0:.1f} s")
    return _CHECKPOINTS[alias]


def default_lengths(alias: str) -> tuple[int, ...]:
    """64, 128 for a text checkpoint; 65, 145 for a vision one (loads the checkpoint)."""
    return VISION_LENGTHS if _checkpoint(alias).is_vision else TEXT_LENGTHS


def select_heads(n_layers: int, n_heads: int, limit: int | None) -> list[tuple[int, int]]:
    """All (layer, head) pairs, or ``limit`` of them evenly spaced in layer-major order."""
    total = n_layers * n_heads
    if limit is None or limit >= total:
        idx = np.arange(total)
    else:
        idx = np.unique(np.linspace(0, total - 1, limit).round().astype(int))
    return [(int(i) // n_heads, int(i) % n_heads) for i in idx]


def _shape_measures(A: np.ndarray) -> dict[str, float]:
    L = A.shape[0]
    return {
        "sink_mass": float(A[:, 0].mean()),
        "diag_mass": float(np.diag(A).mean()),
        "prev_mass": float(np.diag(A, -1).mean()) if L > 1 else 0.0,
    }


#: The descriptor blocks other than ``intrinsic`` (timed together).
_CHEAP_BLOCKS = ("baseline", "baseline_plus", "native")


def _job(job: tuple) -> list[dict]:
    """Bracket and describe one block of heads (runs in a worker process)."""
    heads, Q, K, scale, mask, bias, eps, effort = job
    import torch
    from threadpoolctl import threadpool_limits

    from analysis.attention import softmax64
    from analysis.brackets import profile_matrices
    from analysis.descriptors.describe import describe_matrix

    torch.set_num_threads(1)
    rows = []
    with threadpool_limits(1):
        # The model's additive logit bias (MPNet's relative-position bias) is part of A
        # and of the logits every descriptor block sees.
        biases = [None] * len(heads) if bias is None else list(bias)
        mats = [softmax64(Q[i], K[i], scale[i], mask, bias=biases[i]) for i in range(len(heads))]
        profiles = profile_matrices(mats, eps=eps, effort=effort)
        for i, ((layer, head), prof) in enumerate(zip(heads, profiles, strict=True)):
            # Every registered block, timed in two groups: the intrinsic block (SVDs of C
            # and the kappa solver) and the rest.
            seconds = {}
            for group in (_CHEAP_BLOCKS, ("intrinsic",)):
                t0 = time.perf_counter()
                describe_matrix(
                    Q=Q[i],
                    K=K[i],
                    scale=scale[i],
                    mask=mask,
                    bias=biases[i],
                    eps=eps,
                    blocks=list(group),
                    diagnostics=True,
                )
                seconds[group[-1]] = time.perf_counter() - t0
            shape = _shape_measures(mats[i])
            for e in eps:
                lo, hi = prof.bracket(e)
                meth = prof.stats["methods"][f"{e:g}"]
                rows.append(
                    {
                        "layer": layer,
                        "head": head,
                        "eps": e,
                        "lower": lo,
                        "upper": hi,
                        "upper_method": meth["upper"],
                        "lower_method": meth["lower"],
                        "profile_seconds": prof.stats["seconds"]["total"],
                        "describe_seconds": sum(seconds.values()),
                        "intrinsic_seconds": seconds["intrinsic"],
                        **shape,
                    }
                )
    return rows


def _final_path(alias: str, length: int, seed: int, effort: str, tag: str, out_dir: Path) -> Path:
    return out_dir / f"{_slug(alias)}_s{seed}_L{length}_{effort}_{tag}.csv"


def collect(parts: Path, ex: Any, alias: str, effort: str, note: str) -> pd.DataFrame:
    """The per-(head, eps) rows of the finished blocks in ``parts``, with the columns
    that name the run (checkpoint, alias, length, input, effort, note)."""
    files = sorted(parts.glob("*.csv"))
    if not files:
        return pd.DataFrame()
    df = pd.concat([pd.read_csv(p) for p in files], ignore_index=True)
    df.insert(0, "checkpoint", ex.checkpoint_id)
    df.insert(1, "alias", alias)
    df.insert(2, "length", ex.length)
    df.insert(3, "input_id", ex.input_id)
    df["effort"] = effort
    df["note"] = note
    return df.sort_values(["layer", "head", "eps"], ignore_index=True)


def on_disk(
    alias: str, length: int, *, effort: str, heads_limit: int | None, seed: int, out_dir: Path
) -> pd.DataFrame:
    """The rows of one (checkpoint, length) as far as they are on disk, running nothing:
    the finished table, else the finished blocks of an unfinished run (fewer heads),
    else no rows."""
    tag = "all" if heads_limit is None else f"h{heads_limit}"
    final = _final_path(alias, length, seed, effort, tag, out_dir)
    if final.is_file():
        return pd.read_csv(final)
    parts = final.with_suffix(".parts")
    if not (out_dir / f"{_slug(alias)}_s{seed}_L{length}.npz").is_file() or not parts.is_dir():
        return pd.DataFrame()
    ex, note = extraction(alias, length, seed, out_dir)
    df = collect(parts, ex, alias, effort, note)
    if len(df):
        n = df.groupby(["layer", "head"]).ngroups
        print(f"  {alias} L={length}: unfinished, {n} of {ex.A.shape[0] * ex.A.shape[1]} heads")
    return df


def run_one(
    alias: str,
    length: int,
    *,
    eps: tuple[float, ...],
    effort: str,
    heads_limit: int | None,
    workers: int,
    batch: int,
    seed: int,
    out_dir: Path,
) -> pd.DataFrame:
    """The per-(head, eps) table of one (checkpoint, length), resuming finished blocks."""
    from tqdm.auto import tqdm

    tag = "all" if heads_limit is None else f"h{heads_limit}"
    final = _final_path(alias, length, seed, effort, tag, out_dir)
    if final.is_file():
        print(f"  {final.name} exists: skipped")
        return pd.read_csv(final)
    parts = final.with_suffix(".parts")
    parts.mkdir(parents=True, exist_ok=True)
    ex, note = extraction(alias, length, seed, out_dir)
    n_layers, n_heads = ex.A.shape[:2]
    chosen = select_heads(n_layers, n_heads, heads_limit)
    blocks = [chosen[i : i + batch] for i in range(0, len(chosen), batch)]
    done = {p.stem for p in parts.glob("*.csv")}
    jobs = {}
    for heads in blocks:
        key = f"{heads[0][0]:03d}_{heads[0][1]:03d}"
        if key in done:
            continue
        li = [h[0] for h in heads]
        hi = [h[1] for h in heads]
        bias = None if ex.bias is None else ex.bias[li, hi]
        jobs[key] = (
            heads,
            ex.Q[li, hi],
            ex.K[li, hi],
            ex.scale[li, hi],
            ex.mask,
            bias,
            eps,
            effort,
        )
    t0 = time.perf_counter()
    bar = tqdm(total=len(chosen), initial=len(chosen) - sum(len(j[0]) for j in jobs.values()))
    bar.set_description(f"{alias} L={length}")
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(_job, job): key for key, job in jobs.items()}
        for fut in as_completed(futures):
            key = futures[fut]
            _atomic_csv(pd.DataFrame(fut.result()), parts / f"{key}.csv")
            bar.update(len(jobs[key][0]))
    bar.close()
    wall = time.perf_counter() - t0
    df = collect(parts, ex, alias, effort, note)
    _atomic_csv(df, final)
    shutil.rmtree(parts)
    todo = sum(len(job[0]) for job in jobs.values())
    print(
        f"  {todo} of {len(chosen)} heads in {wall:.1f} s wall ({workers} workers) -> {final.name}"
    )
    return df


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """Per (checkpoint, length, eps): heads, median hi/lo, closed share, widths, times."""
    df = df.assign(
        ratio=df["upper"] / df["lower"].clip(lower=1),
        width=df["upper"] - df["lower"],
        closed=df["upper"] == df["lower"],
    )
    keys = ["checkpoint", "alias", "length", "eps"]
    out = df.groupby(keys, sort=False).agg(
        heads=("head", "size"),
        median_hi_over_lo=("ratio", "median"),
        closed_share=("closed", "mean"),
        median_width=("width", "median"),
        mean_width=("width", "mean"),
        median_lower=("lower", "median"),
        median_upper=("upper", "median"),
        seconds_per_profile=("profile_seconds", "median"),
        seconds_per_profile_mean=("profile_seconds", "mean"),
        describe_seconds_per_head=("describe_seconds", "median"),
        describe_seconds_mean=("describe_seconds", "mean"),
        describe_seconds_max=("describe_seconds", "max"),
        intrinsic_share=("intrinsic_seconds", "sum"),
        note=("note", "first"),
    )
    # Of all descriptor time, the share spent in the intrinsic block.
    total = df.groupby(keys, sort=False)["describe_seconds"].sum()
    out["intrinsic_share"] = out["intrinsic_share"] / total.where(total > 0)
    return out.reset_index()


#: Lower-end bins for comparing families at the same certified rank.
LOWER_BINS = (0, 5, 10, 20, 40, 80, 10**6)


def _with_ratio(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(
        ratio=df["upper"] / df["lower"].clip(lower=1),
        width=df["upper"] - df["lower"],
        closed=df["upper"] == df["lower"],
    )


def by_lower_end(df: pd.DataFrame) -> pd.DataFrame:
    """Median hi/lo and width per (length, eps, lower-end bin, checkpoint): families
    compared at the same certified rank."""
    df = _with_ratio(df)
    df["lower_bin"] = pd.cut(df["lower"], LOWER_BINS)
    keys = ["length", "eps", "lower_bin", "alias"]
    out = df.groupby(keys, sort=True, observed=True).agg(
        heads=("ratio", "size"),
        median_hi_over_lo=("ratio", "median"),
        median_width=("width", "median"),
    )
    out = out.reset_index()
    out["lower_bin"] = out["lower_bin"].astype(str)
    return out


def by_sink_mass(df: pd.DataFrame) -> pd.DataFrame:
    """Per (checkpoint, length, eps), the heads in thirds of their mean mass on key 0:
    median lower end, width, hi/lo and closed share."""
    df = _with_ratio(df)
    third = df.groupby(["alias", "length"])["sink_mass"].transform(
        lambda x: pd.qcut(x, 3, labels=False, duplicates="drop")
    )
    df["sink_third"] = third.map({0: "low", 1: "mid", 2: "high"})
    keys = ["alias", "length", "eps", "sink_third"]
    out = df.groupby(keys, sort=False).agg(
        heads=("ratio", "size"),
        median_lower=("lower", "median"),
        median_width=("width", "median"),
        median_hi_over_lo=("ratio", "median"),
        closed_share=("closed", "mean"),
    )
    return out.reset_index()


def closed_heads(df: pd.DataFrame) -> pd.DataFrame:
    """Every closed bracket with its head's shape measures and the winning constructions."""
    df = _with_ratio(df)
    cols = ["alias", "length", "eps", "layer", "head", "lower", "upper_method"]
    cols += ["lower_method", "sink_mass", "diag_mass"]
    return df.loc[df["closed"], cols].reset_index(drop=True)


def methods(df: pd.DataFrame) -> pd.DataFrame:
    """How many brackets each construction won, per (checkpoint, length, eps, end)."""
    parts = []
    for end in ("upper", "lower"):
        c = df.groupby(["alias", "length", "eps"])[f"{end}_method"].value_counts()
        parts.append(c.rename("brackets").reset_index().rename(columns={f"{end}_method": "method"}))
        parts[-1].insert(3, "end", end)
    return pd.concat(parts, ignore_index=True)


def markdown(summary: pd.DataFrame) -> str:
    """The summary as a Markdown table; the family's note on its first row."""
    head = (
        "| checkpoint | L | eps | heads | median hi/lo | closed | median width "
        "| s per profile | descriptor s per head (median / mean) | intrinsic share | note |"
    )
    lines = [head, "|" + " --- |" * head.count(" | ") + " --- |"]
    seen = set()
    for _, r in summary.iterrows():
        note = "" if r["alias"] in seen else str(r["note"])
        seen.add(r["alias"])
        cells = [
            str(r["alias"]),
            str(r["length"]),
            f"{r['eps']:g}",
            str(r["heads"]),
            f"{r['median_hi_over_lo']:.2f}",
            f"{100 * r['closed_share']:.1f}%",
            f"{r['median_width']:g}",
            f"{r['seconds_per_profile']:.2f}",
            f"{r['describe_seconds_per_head']:.2f} / {r['describe_seconds_mean']:.2f}",
            f"{100 * r['intrinsic_share']:.0f}%",
            note,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", nargs="+", default=["smollm2", "minilm"])
    ap.add_argument("--lengths", type=int, nargs="+", default=None)
    ap.add_argument("--eps", type=float, nargs="+", default=list(EPS))
    ap.add_argument("--effort", default="default")
    ap.add_argument("--heads-limit", type=int, default=None)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=4, help="heads profiled side by side per job")
    ap.add_argument("--corpus-seed", type=int, default=0)
    ap.add_argument("--fresh", action="store_true", help="delete this run's earlier outputs")
    ap.add_argument(
        "--summarize-only",
        action="store_true",
        help="run nothing: summarize the rows on disk (an unfinished run's finished blocks "
        "count, with their number of heads)",
    )
    ap.add_argument("--out", type=Path, default=FAMILIES_OUT, help="output folder")
    args = ap.parse_args(argv)
    print("command:", command_line("experiments.families"))
    out_dir = args.out
    out_dir.mkdir(parents=True, exist_ok=True)
    eps = tuple(sorted(set(args.eps)))
    if args.fresh and args.summarize_only:
        raise SystemExit("--fresh deletes what --summarize-only would read: give one")
    summaries, tables = [], []
    for alias in args.checkpoint:
        if args.summarize_only:
            frames = [
                on_disk(
                    alias,
                    L,
                    effort=args.effort,
                    heads_limit=args.heads_limit,
                    seed=args.corpus_seed,
                    out_dir=out_dir,
                )
                for L in args.lengths or _lengths_on_disk(alias, args.corpus_seed, out_dir)
            ]
            frames = [f for f in frames if len(f)]
            if not frames:
                print(f"{alias}: no rows on disk")
                continue
        else:
            frames = _run_family(alias, args, eps, out_dir)
        tables.extend(frames)
        summary = summarize(pd.concat(frames, ignore_index=True))
        _atomic_csv(summary, out_dir / f"{_slug(alias)}_summary.csv")
        (out_dir / f"{_slug(alias)}.md").write_text(markdown(summary))
        summaries.append(summary)
        print(markdown(summary))
    if not tables:
        raise SystemExit("no rows to summarize")
    rows = pd.concat(tables, ignore_index=True)
    for name, table in (
        ("families_by_lower_end", by_lower_end(rows)),
        ("families_by_sink_mass", by_sink_mass(rows)),
        ("families_closed", closed_heads(rows)),
        ("families_methods", methods(rows)),
    ):
        _atomic_csv(table, out_dir / f"{name}.csv")
    allsum = pd.concat(summaries, ignore_index=True)
    _atomic_csv(allsum, out_dir / "families_summary.csv")
    (out_dir / "families.md").write_text(
        f"Command: `{command_line('experiments.families')}`\n\n" + markdown(allsum)
    )
    print(json.dumps({"outputs": str(out_dir)}))


def _lengths_on_disk(alias: str, seed: int, out_dir: Path) -> list[int]:
    """The lengths of this family's extractions saved in ``out_dir``."""
    prefix = f"{_slug(alias)}_s{seed}_L"
    found = [p.stem.removeprefix(prefix) for p in out_dir.glob(f"{prefix}*.npz")]
    return sorted(int(x) for x in found if x.isdigit())


def _run_family(alias: str, args: argparse.Namespace, eps: tuple, out_dir: Path) -> list:
    """Run (or resume) every length of one family: its per-(head, eps) tables."""
    if args.fresh:
        for p in out_dir.glob(f"{_slug(alias)}_*"):
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    frames = []
    for L in args.lengths or default_lengths(alias):
        print(f"{alias} L={L}")
        frames.append(
            run_one(
                alias,
                L,
                eps=eps,
                effort=args.effort,
                heads_limit=args.heads_limit,
                workers=args.workers,
                batch=args.batch,
                seed=args.corpus_seed,
                out_dir=out_dir,
            )
        )
    _CHECKPOINTS.pop(alias, None)  # free the model before the next family
    return frames


if __name__ == "__main__":
    main()
