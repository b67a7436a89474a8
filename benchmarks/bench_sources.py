"""Benchmark: MiniLM extraction time at L = 128 and store size per 1,000 matrices.

Run from the repository root::

    python -m benchmarks.bench_sources [--length 128] [--inputs 3] [--repeats 3] [--profiles 4]

Extraction time is one forward pass with the capture (all 6 x 12 = 72 heads), the parity
check included, excluding the one-off model load (reported separately); the median over
``--repeats`` runs is printed. The store size is measured on ``--inputs`` corpus inputs
(72 matrices each) added to a fresh store and extrapolated linearly to 1,000 matrices
(every matrix record has the same array shapes, so size is linear in the count).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path


def _folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--inputs", type=int, default=3, help="corpus inputs for the size")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--profiles", type=int, default=4, help="heads to profile for the profile size (0: skip)"
    )
    args = parser.parse_args(argv)

    import torch

    from analysis.sources.checkpoints import extract_from_model, load_checkpoint
    from analysis.sources.inputs import corpus_text
    from analysis.store import Store
    from benchmarks.common import command_line

    print("command:", command_line("benchmarks.bench_sources"))
    print(f"torch threads: {torch.get_num_threads()}")
    t0 = time.perf_counter()
    ck = load_checkpoint("minilm")
    load_s = time.perf_counter() - t0
    print(f"load {ck.checkpoint_id}: {load_s:.2f} s (once per run, not in the timing below)")

    inp = corpus_text(ck, 0, args.length)
    extract_from_model(ck, inp)  # warm-up
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        ex = extract_from_model(ck, inp)
        times.append(time.perf_counter() - t0)
    n_heads = ex.A.shape[0] * ex.A.shape[1]
    print(
        f"extraction L={args.length}, {n_heads} heads: median {statistics.median(times):.3f} s "
        f"over {args.repeats} runs (min {min(times):.3f}, max {max(times):.3f}); "
        f"parity max |softmax64 - A| = {ex.meta['parity_max_abs']:.1e}"
    )

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "store", create=True)
        t0 = time.perf_counter()
        n = 0
        for seed in range(args.inputs):
            ex = extract_from_model(ck, corpus_text(ck, seed, args.length))
            n += len(store.add_extraction(ex))
        add_s = time.perf_counter() - t0
        n = len(store.matrices())  # distinct records (two seeds may pick the same text)
        store.close()
        total = _folder_bytes(Path(tmp) / "store")
        arrays = _folder_bytes(Path(tmp) / "store" / "arrays")
        profile_line = _profile_sizes(Path(tmp) / "store", args.profiles)
    per = total / n
    print(
        f"store: {n} matrices at L={args.length} take {total / 1e6:.2f} MB "
        f"(arrays {arrays / 1e6:.2f} MB, index {(total - arrays) / 1e6:.2f} MB), "
        f"{per / 1e3:.1f} kB per matrix -> {per * 1000 / 1e6:.1f} MB per 1,000 matrices "
        f"(linear extrapolation; profiles not included); extract + add took {add_s:.1f} s"
    )
    print(profile_line)
    return 0


def _profile_sizes(path: Path, n_heads: int) -> str:
    """Profile ``n_heads`` heads at effort "fast" (t = 1) with the real engine, if present."""
    import analysis.brackets as engine
    from analysis.store import RunSpec, Store, run_brackets

    if n_heads <= 0:
        return "profiles: skipped (--profiles 0)"
    if not hasattr(engine, "profile_matrix"):
        return "profiles: skipped (analysis.brackets has no profile_matrix on this branch)"
    small = path.parent / "profiles"
    with Store(path) as src, Store(small, create=True) as dst:
        for rec in src.matrices()[:: max(1, len(src.matrices()) // n_heads)][:n_heads]:
            arr = src.arrays(rec.key)
            dst.add_matrices(
                [
                    dict(
                        **{f: getattr(rec, f) for f in ("source", "checkpoint", "layer", "head")},
                        input_id=rec.input_id,
                        length=rec.length,
                        A=arr.A,
                        Q=arr.Q,
                        K=arr.K,
                        scale=arr.scale,
                        mask=arr.mask,
                    )
                ]
            )[0]
    before = _folder_bytes(small)
    summary = run_brackets(small, (0.05, 0.1, 0.2), effort="fast", run=RunSpec(progress=False))
    grown = _folder_bytes(small) - before
    per = grown / max(summary.computed, 1)
    return (
        f"profiles (effort fast, eps 0.05 0.1 0.2, with witnesses): {summary.computed} heads, "
        f"{summary.elapsed_s:.1f} s, index grew {grown / 1e6:.2f} MB = {per / 1e6:.2f} MB per "
        f"profile -> {per * 1000 / 1e9:.2f} GB per 1,000 profiles"
    )


if __name__ == "__main__":
    raise SystemExit(main())
