"""What power does a design's stored power curve give at each hypothesis's SESOI?

The power stage (``attnrank run DESIGN --power-simulations N``) stores, per hypothesis, the
rejection rate and the mean simulated held-out effect (base loss minus rich loss) at every
signal share it simulated (``DESIGN.power.json``, ``result.hypotheses[].curve``). Its
headline power is read at a share (0.10 of the residual variance), not at the design's SESOI,
which is in loss units. This script reads the curve and interpolates the rejection rate
linearly in the mean effect between the two simulated shares whose mean effects bracket the
SESOI, and prints the MDE (power 0.8) as an effect (the stored ``mde_loss``). No simulation, a reading of the stored
record::

    python -m experiments.power_at_sesoi preregistration/paper-lengths.toml

(The paper-lengths study: docs/results/paper-lengths.md, "The power beside the verdict".)
The interpolation is only as fine as the simulated shares around the SESOI; the bracketing
shares and their rates are printed beside it so the reader sees the gap.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from analysis.power.file import not_computed, read_power_file
from analysis.prereg.design import load_design
from experiments.common import command_line


def power_at(curve: list[dict], effect: float) -> tuple[float, dict | None, dict | None]:
    """Rejection rate interpolated linearly in the mean effect at ``effect``.

    Returns the rate and the two curve points that bracket it (None where the effect lies
    outside the simulated range, with the rate NaN).
    """
    pts = sorted(curve, key=lambda c: c["mean_effect"])
    below = [c for c in pts if c["mean_effect"] <= effect]
    above = [c for c in pts if c["mean_effect"] > effect]
    if not below or not above:
        return float("nan"), below[-1] if below else None, above[0] if above else None
    lo, hi = below[-1], above[0]
    t = (effect - lo["mean_effect"]) / (hi["mean_effect"] - lo["mean_effect"])
    return float(lo["rate"] + t * (hi["rate"] - lo["rate"])), lo, hi


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("design", type=Path, help="a design whose power file exists beside it")
    args = ap.parse_args()
    print(command_line("experiments.power_at_sesoi"), flush=True)
    design = load_design(args.design).data
    sesoi = {h["id"]: h.get("sesoi") for h in design.get("hypotheses", [])}
    record = read_power_file(args.design)
    if record is None:
        raise SystemExit(not_computed(args.design))
    res = record["result"]
    print(
        f"{record['design']}: {res['simulations']} simulated studies per share; "
        f"simulated M0 loss {res['simulated_m0_loss']:.5f} (reference {res['reference_m0_loss']:.5f})"
    )
    for h in res["hypotheses"]:
        hid = h["hypothesis"]
        s = sesoi.get(hid)
        line = f"  {hid} ({h['pair']}, signal {h['signal']}): "
        if s is None:
            line += "no SESOI in the design; "
        else:
            rate, lo, hi = power_at(h["curve"], float(s))
            if lo is None or hi is None:
                line += f"SESOI {s} outside the simulated effects; "
            else:
                line += (
                    f"power at the SESOI {s}: {rate:.2f} (between share {lo['share']:.3f}: "
                    f"effect {lo['mean_effect']:.5f}, power {lo['rate']:.2f} and share "
                    f"{hi['share']:.3f}: effect {hi['mean_effect']:.5f}, power {hi['rate']:.2f}); "
                )
        line += (
            f"MDE (power {h['mde_target']}) share {h['mde']:.3f} "
            f"[{h['mde_low']:.3f}, {h['mde_high']:.3f}], an effect of {h['mde_loss']:.5f}"
        )
        print(line)


if __name__ == "__main__":
    main()
