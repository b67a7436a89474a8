"""Where the refit bootstrap's refits run, and the store a stopped comparison resumes from.

The numbers must not depend on either: the same comparison run here, on a pool of worker
processes, and resumed from a store that a stopped run left half full, gives the same
frames to the last bit.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from analysis.compare import ComparisonSpec, NestedComparison
from analysis.compare.refit_runner import RefitRunner, refit_key, refit_runner
from analysis.executor import task_pool
from analysis.study.refit_store import RefitFiles
from analysis.worker_setup import prepare_worker

MODELS = {"M0": ["baseline"], "M1": ["baseline", "native"]}


def _table(seed: int = 0, n_ck: int = 3, heads: int = 8, cells: int = 4) -> pd.DataFrame:
    """Three checkpoints of eight heads (three held out each) where ``native__v`` informs y."""
    rng = np.random.default_rng(seed)
    rows = []
    for c in range(n_ck):
        held = rng.choice(heads, size=3, replace=False)
        for h in range(heads):
            x, v = rng.normal(size=cells), rng.normal(size=cells)
            y = c + 0.8 * x + 0.4 * v + 0.3 * rng.normal(size=cells)
            lo = np.floor(2 * y) / 2
            for i in range(cells):
                rows.append(
                    {
                        "cell_key": f"{c}-{h}-{i}",
                        "cluster": f"ck{c}:{h}",
                        "stratum": f"ck{c}",
                        "held_out": bool(h in held),
                        "y_lower": lo[i],
                        "y_upper": lo[i] + 0.5,
                        "baseline__x": x[i],
                        "native__v": v[i],
                    }
                )
    return pd.DataFrame(rows)


def _spec(**kw) -> ComparisonSpec:
    """A method-3 comparison: confirmatory refit bootstrap, checkpoint effects, so the
    leave-one-family-out sensitivity refits the comparison, refits included."""
    settings = {
        "models": MODELS,
        "family": [("M0", "M1")],
        "estimator": "ols",
        "n_boot": 199,
        "random_state": 3,
        "checkpoint_effects": True,
        "sesoi": {"M0<M1": {"interval_sq_loss": 0.02}},
        "refit_replicates": 5,
        "refit_confirmatory": True,
        "method": 3,
    }
    return ComparisonSpec(**{**settings, **kw})


def _fit(table: pd.DataFrame):
    return NestedComparison(_spec(metrics=["interval_sq_loss"])).fit(table)


class _Dict(dict):
    """A RefitStore in memory that counts its writes and can stop the run after some."""

    def __init__(self, stop_after: int | None = None):
        super().__init__()
        self.puts, self.stop_after = 0, stop_after

    def put(self, key, rows):
        if self.stop_after is not None and self.puts >= self.stop_after:
            raise KeyboardInterrupt  # the run is stopped here
        self[key] = rows
        self.puts += 1


def _same(a, b) -> None:
    pd.testing.assert_frame_equal(a.frame, b.frame, check_exact=True)
    pd.testing.assert_frame_equal(a.sensitivity, b.sensitivity, check_exact=True)


@pytest.fixture(scope="module")
def serial():
    return _fit(_table())


def test_the_serial_run_refits_every_family_left_out(serial):
    # 5 refits of the main comparison, and 5 of each of the 3 leave-one-family-out fits
    store = _Dict()
    with refit_runner(RefitRunner(store=store)):
        again = _fit(_table())
    assert store.puts == 5 * (1 + 3)
    _same(serial, again)
    sens = serial.sensitivity
    assert sens["subset"].str.startswith("without ").sum() == 3


def test_a_pool_of_workers_gives_the_same_numbers(serial):
    with task_pool(None, 2, initializer=prepare_worker) as pool:
        with refit_runner(RefitRunner(pool=pool, store=_Dict())):
            pooled = _fit(_table())
    _same(serial, pooled)


def test_a_stopped_run_resumes_from_its_store(serial, tmp_path):
    files = RefitFiles(tmp_path / "refits")

    class Stopping(RefitFiles):
        puts = 0

        def put(self, key, rows):
            if Stopping.puts == 7:
                raise KeyboardInterrupt
            super().put(key, rows)
            Stopping.puts += 1

    with pytest.raises(KeyboardInterrupt), refit_runner(RefitRunner(store=Stopping(files.folder))):
        _fit(_table())
    assert len(files) == 7  # kept on disk as they finished

    class Counting(RefitFiles):
        puts = 0

        def put(self, key, rows):
            super().put(key, rows)
            Counting.puts += 1

    with refit_runner(RefitRunner(store=Counting(files.folder))):
        resumed = _fit(_table())
    assert Counting.puts == 20 - 7  # only the refits the stopped run had not finished
    _same(serial, resumed)


def test_a_refit_key_names_its_table_and_its_settings():
    table = _table()
    spec = ComparisonSpec(models=MODELS, family=[("M0", "M1")], random_state=1)
    key = refit_key(table, spec)
    assert key == refit_key(table.copy(), spec)
    assert key != refit_key(
        table, ComparisonSpec(models=MODELS, family=[("M0", "M1")], random_state=2)
    )
    changed = table.copy()
    changed.loc[0, "y_upper"] += 1e-12
    assert key != refit_key(changed, spec)
    assert key != refit_key(table.rename(columns={"native__v": "native__w"}), spec)


@pytest.mark.parametrize("estimator", ["ols", "interval"])
def test_sensitivities_leave_the_main_rows_as_they_are(estimator):
    # the study's OLS refit runs without sensitivities (only its main rows are written):
    # those rows, CI and p from the refit bootstrap included, are the same either way
    table = _table()
    spec = _spec(estimator=estimator)
    full = NestedComparison(spec).fit(table)
    lean = NestedComparison(dataclasses.replace(spec, sensitivities=False)).fit(table)
    assert not full.sensitivity.empty
    pd.testing.assert_frame_equal(full.frame, lean.frame, check_exact=True)
    pd.testing.assert_frame_equal(full.lr_tests, lean.lr_tests, check_exact=True)


def test_a_pool_reads_back_stored_refits_between_new_ones(serial):
    # stored and missing refits interleaved: the effects keep the plans' order
    store = _Dict()
    with refit_runner(RefitRunner(store=store)):
        _fit(_table())
    kept = _Dict()
    for j, (key, rows) in enumerate(sorted(store.items())):
        if j % 3:
            kept[key] = rows
    missing = len(store) - len(kept)
    kept.puts = 0
    with task_pool(None, 2, initializer=prepare_worker) as pool:
        with refit_runner(RefitRunner(pool=pool, store=kept)):
            resumed = _fit(_table())
    assert kept.puts == missing and len(kept) == len(store)
    _same(serial, resumed)
