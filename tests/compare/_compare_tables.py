"""Small simulated comparison tables (shared by the compare tests)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def make_table(
    rng: np.random.Generator,
    *,
    n_heads: int = 24,
    cells: int = 12,
    native_effect: float = 0.0,
    held_fraction: float = 0.25,
) -> pd.DataFrame:
    """Cells of ``n_heads`` heads; y depends on baseline (and native if effect > 0)."""
    n = n_heads * cells
    head = np.repeat(np.arange(n_heads), cells)
    length = np.tile(np.array([16, 32] * (cells // 2)), n_heads)
    input_id = np.tile(np.repeat([0, 1], cells // 2), n_heads)
    x1 = rng.normal(size=n)
    x2 = np.exp(rng.normal(size=n))  # positive scale feature
    nat = rng.normal(size=n)
    intr = rng.normal(size=n)
    y = (
        2.0
        + 0.8 * x1
        + 0.5 * np.log(x2)
        + native_effect * nat
        + 0.3 * rng.normal(size=n_heads)[head]
        + 0.3 * rng.normal(size=n)
    )
    w = rng.choice([0.0, 0.5, 1.0], size=n)
    lower = y - rng.uniform(size=n) * w
    upper = lower + w
    held_heads = rng.choice(n_heads, size=round(held_fraction * n_heads), replace=False)
    return pd.DataFrame(
        {
            "cell_key": [f"c{i}" for i in range(n)],
            "cluster": [f"h{h}" for h in head],
            "held_out": np.isin(head, held_heads),
            "input_id": input_id,
            "length": length,
            "y_lower": lower,
            "y_upper": upper,
            "baseline__x1": x1,
            "baseline__scale": x2,
            "native__q": nat,
            "intrinsic__k": intr,
            "intrinsic__q_r3": rng.normal(size=n),  # a diagnostic (see COVARIATES)
        }
    )


MODELS = {
    "M0": ["baseline"],
    "M1": ["baseline", "native"],
    "M2": ["baseline", "intrinsic"],
    "M3": ["baseline", "native", "intrinsic"],
}
FAMILY = [("M0", "M1"), ("M0", "M2"), ("M0", "M3")]
#: What a descriptor registry would say about these tables (compare's own defaults are
#: neutral): calibrated blocks, the screen's block order, the per-r diagnostic.
COVARIATES = {
    "calibrate_blocks": ("baseline", "baseline_plus"),
    "block_order": ("baseline", "baseline_plus", "native", "intrinsic"),
    "diagnostic_columns": ("intrinsic__q_r3",),
}
