"""What each half of engine 5's closing pass buys, and what it costs.

The closing pass (``analysis.brackets.stages.close``) treats brackets at most
``close_width`` wide: an upper run at rank ``hi - 1`` (``close_upper_steps``) and
multi-start lower ascents at size ``lo + 1`` (``close_lower_steps``). Per MiniLM head of
the benchmark text (heads 0, every, 2 every, ...), eps 0.05 / 0.1 / 0.2, t = 1, one
thread: engine 5's profile as pinned, then the same with the upper half switched off
(``close_upper_steps = 0``), then with the lower half off (``close_lower_steps = 0``), each
on a replaced copy of engine 5's settings for this run only (the engine is unchanged).
Prints per head the brackets and CPU seconds (``time.process_time``) of each variant and
their sums; every profile is re-verified.

Usage, from the repository root::

    python -m experiments.close_halves [--length 64] [--every 6]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

from analysis.attention import fixed_torch_threads
from analysis.brackets import profile_matrix, search
from analysis.brackets.settings import ROWSPAN_SETTINGS
from experiments.common import command_line, minilm_attention

EPS = (0.05, 0.1, 0.2)


def variants() -> dict[str, dict]:
    """Engine 5's settings table as pinned, without the closing pass's upper half, and
    without its lower half (effort ``default`` replaced)."""
    d = ROWSPAN_SETTINGS["default"]

    def off(**kw):
        return dict(ROWSPAN_SETTINGS) | {
            "default": dataclasses.replace(d, base=dataclasses.replace(d.base, **kw))
        }

    return {
        "engine 5": dict(ROWSPAN_SETTINGS),
        "no close upper": off(close_upper_steps=0),
        "no close lower": off(close_lower_steps=0),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--length", type=int, default=64)
    ap.add_argument("--every", type=int, default=6)
    args = ap.parse_args()
    print("command:", command_line("experiments.close_halves"), flush=True)
    A = minilm_attention(args.length)
    table = variants()
    sums = {name: [0, 0, 0.0] for name in table}
    pinned = search.ROWSPAN_SETTINGS
    try:
        with fixed_torch_threads(1):
            for i in range(0, len(A), args.every):
                for name, st in table.items():
                    search.ROWSPAN_SETTINGS = st
                    c = time.process_time()
                    prof = profile_matrix(A[i], eps=EPS, engine=5)
                    cpu = time.process_time() - c
                    if prof.reverify(A[i]):
                        raise RuntimeError(f"head {i}, {name}: a witness fails re-verification")
                    br = [tuple(prof.bracket(e)) for e in EPS]
                    s = sums[name]
                    s[0] += sum(b[0] for b in br)
                    s[1] += sum(b[1] for b in br)
                    s[2] += cpu
                    print(f"head {i} {name}: {br} cpu {cpu:.2f}s", flush=True)
    finally:
        search.ROWSPAN_SETTINGS = pinned
    for name, (lo, hi, cpu) in sums.items():
        print(f"{name}: lower ends summed {lo}, upper ends summed {hi}, CPU {cpu:.1f} s")


if __name__ == "__main__":
    main()
