"""The refit bootstrap as the confirmatory CI (``refit_confirmatory``, method 3)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.compare import ComparisonSpec, NestedComparison
from analysis.compare.refit import FIXED_FITS, REFIT_BOOTSTRAP
from analysis.datasets import EXAMPLE_MODELS, example_comparison_table


def _fit(**kw):
    spec = ComparisonSpec(
        models=EXAMPLE_MODELS,
        family=[("base", "rich")],
        estimator="ols",
        metrics=["interval_sq_loss"],
        n_boot=199,
        random_state=0,
        sesoi={"base<rich": {"interval_sq_loss": 0.05}},
        **kw,
    )
    return NestedComparison(spec).fit(example_comparison_table())


def test_confirmatory_ci_and_p_are_the_refit_bootstraps():
    sens_only = _fit(refit_replicates=40)
    conf = _fit(refit_replicates=40, refit_confirmatory=True)
    row, base = conf.frame.iloc[0], sens_only.frame.iloc[0]
    refit = conf.sensitivity.set_index("analysis").loc[REFIT_BOOTSTRAP]
    fixed = conf.sensitivity.set_index("analysis").loc[FIXED_FITS]
    # the point effect is the comparison's own; its CI, p and equivalence p the refits'
    assert row["effect"] == base["effect"] == refit["effect"]
    for c in ("ci_low", "ci_high", "p_value", "equivalence_p"):
        assert row[c] == refit[c], c
        assert fixed[c] == base[c], c  # the held-out bootstrap, fits fixed, is kept
    # the same draws feed the sensitivity row with and without the option
    old = sens_only.sensitivity.set_index("analysis").loc[REFIT_BOOTSTRAP]
    assert (old["ci_low"], old["ci_high"]) == (refit["ci_low"], refit["ci_high"])
    # Holm and the decision read the refit p
    assert row["p_holm"] == row["p_value"]
    assert row["ci_low"] != base["ci_low"]


def test_without_the_option_nothing_changes():
    plain = _fit()
    sens_only = _fit(refit_replicates=40)
    pd.testing.assert_frame_equal(plain.frame, sens_only.frame, check_exact=True)
    assert list(sens_only.sensitivity["analysis"]) == [REFIT_BOOTSTRAP]
    assert np.isfinite(sens_only.sensitivity["ci_low"]).all()
