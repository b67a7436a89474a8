"""Where the bracket engine spends its time and loses its width at N = 64 / 128 / 256.

For a sample of MiniLM heads (the benchmark's text, ``experiments.common.minilm_attention``)
at one length: every refinement and closing-pass trial of the search, logged as it runs
(stage, round, eps, upper rank or lower size, whether it certified, the certified error
or margin over eps, optimizer seconds), and each profile's stage seconds (cheap,
refine, close). One process, one torch thread, as the engine runs per matrix.

Run from the repository root::

    python -m experiments.engine_lengths --length 256 --every 12 [--effort default]
    python -m experiments.engine_lengths --length 256 --every 12 --lower-steps 3 --give-up 1.0

``--lower-steps F`` multiplies the refinement's lower step budget (``lower_steps``) by F and
``--give-up G`` sets the ascent's hopeless cut (``give_up`` of
:func:`analysis.brackets.lower_ascent.refine_lower`), for this run only: what a longer lower
search would buy.

Writes ``experiments/out/engine_lengths_L{N}_trials.csv`` and ``..._profiles.csv`` and
prints the median stage seconds, the time per trial kind and how the lower trials ended.
"""

from __future__ import annotations

import argparse
import time

import pandas as pd
import torch

from analysis.brackets import profile_matrix
from analysis.brackets import stages as st
from experiments.common import EPS, OUT, command_line, minilm_attention

LOG: list[dict] = []
CTX: dict = {}


def _wrap_upper(fn):
    def inner(bs, caches, problems, steps, **kw):
        t0 = time.process_time()
        before = [bs[o].upper.get(k) for o, _, k in problems]
        out = fn(bs, caches, problems, steps, **kw)
        dt = (time.process_time() - t0) / max(1, len(problems))
        for (o, e, k), ok, old in zip(problems, out, before, strict=True):
            w = bs[o].upper.get(k)
            LOG.append(
                {
                    **CTX,
                    "kind": kw.get("method", "adam"),
                    "eps": e,
                    "size": k,
                    "ok": ok,
                    "value_over_eps": (w.error / e) if w is not None else float("nan"),
                    "improved": w is not old,
                    "cpu": dt,
                }
            )
        return out

    return inner


def _wrap_lower(fn):
    def inner(bs, caches, problems, steps, settings, device=None):
        t0 = time.process_time()
        out = fn(bs, caches, problems, steps, settings, device)
        dt = (time.process_time() - t0) / max(1, len(problems))
        for (o, e, m), ok in zip(problems, out, strict=True):
            w = bs[o].lower.get(m)
            LOG.append(
                {
                    **CTX,
                    "kind": "ascent",
                    "eps": e,
                    "size": m,
                    "ok": ok,
                    "value_over_eps": (w.margin / e) if w is not None else float("nan"),
                    "lo": bs[o].lo(e),
                    "hi": bs[o].hi(e),
                    "cpu": dt,
                }
            )
        return out

    return inner


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--length", type=int, default=256)
    ap.add_argument("--every", type=int, default=12)
    ap.add_argument("--effort", default="default")
    ap.add_argument("--tag", default="")
    ap.add_argument("--lower-steps", type=float, default=1.0, help="lower step budget factor")
    ap.add_argument("--give-up", type=float, default=None, help="the ascent's hopeless cut")
    args = ap.parse_args()
    print(command_line("experiments.engine_lengths"), flush=True)
    torch.set_num_threads(1)
    if args.lower_steps != 1.0:
        from dataclasses import replace
        from types import MappingProxyType

        from analysis.brackets import search

        base = search.SETTINGS[args.effort]
        steps = int(round(base.lower_steps * args.lower_steps))
        search.SETTINGS = MappingProxyType(
            {**search.SETTINGS, args.effort: replace(base, lower_steps=steps)}
        )
    if args.give_up is not None:
        from analysis.brackets import lower_ascent as lw

        ascent = lw.refine_lower

        def refine_lower(*a, **kw):
            kw.setdefault("give_up", args.give_up)
            return ascent(*a, **kw)

        lw.refine_lower = refine_lower
    st._upper_round = _wrap_upper(st._upper_round)
    st._lower_round = _wrap_lower(st._lower_round)
    A = minilm_attention(args.length)
    heads = list(range(0, A.shape[0], args.every))
    rows = []
    for i in heads:
        CTX.clear()
        CTX["head"] = i
        c0 = time.process_time()
        prof = profile_matrix(A[i], eps=EPS, effort=args.effort)
        cpu = time.process_time() - c0
        sec = prof.stats["seconds"]
        rows.append(
            {
                "head": i,
                "cpu": cpu,
                **{f"s_{k}": v for k, v in sec.items()},
                **{f"lo_{e:g}": prof.bracket(e)[0] for e in EPS},
                **{f"hi_{e:g}": prof.bracket(e)[1] for e in EPS},
            }
        )
        print(i, [prof.bracket(e) for e in EPS], f"cpu {cpu:.2f}", sec, flush=True)
    tag = f"_{args.tag}" if args.tag else ""
    prof_df = pd.DataFrame(rows)
    trials = pd.DataFrame(LOG)
    OUT.mkdir(parents=True, exist_ok=True)
    prof_df.to_csv(OUT / f"engine_lengths_L{args.length}{tag}_profiles.csv", index=False)
    trials.to_csv(OUT / f"engine_lengths_L{args.length}{tag}_trials.csv", index=False)
    print(prof_df.median(numeric_only=True).round(3).to_string())
    print(trials.groupby("kind").agg(n=("cpu", "size"), cpu=("cpu", "sum"), ok=("ok", "mean")))
    low = trials[trials.kind == "ascent"]
    if len(low):
        low = low.assign(rel=low["size"] / low["lo"].clip(lower=1))
        print(low.groupby("eps")[["size", "lo", "hi", "value_over_eps", "ok"]].describe().T)


if __name__ == "__main__":
    main()
