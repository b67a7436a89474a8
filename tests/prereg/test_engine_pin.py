"""A design pins its bracket engine: ``engine = N`` in the design, ``engine`` in its lock.

The versions the package runs come in as ``engines`` (the prereg package never imports
the engine); (4, 5) stands for a package with engines 4 and 5.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.datasets import write_example_design
from analysis.prereg import (
    PreregistrationError,
    amend_design,
    check_design,
    deviations_path,
    load_design,
    lock_design,
    lock_path,
    require_locked,
)
from analysis.prereg.engine_pin import LEGACY_ENGINE, pinned_engine
from analysis.prereg.lock_diff import lock_hash
from analysis.validation import ParameterError

ENGINES = (4, 5)
OUTCOMES = {"time": "2026-12-06T00:00:00+00:00", "lock_sha256": "l" * 64, "store": "s"}


def _design(tmp_path: Path, engine: object = None, name: str = "d.toml") -> Path:
    """The example design, with ``engine = <engine>`` written at the top when given."""
    path = write_example_design(tmp_path / name)
    if engine is not None:
        value = json.dumps(engine)
        path.write_text(f"engine = {value}\n" + path.read_text(encoding="utf-8"))
    return path


def _set_engine(path: Path, engine: int) -> None:
    text = path.read_text(encoding="utf-8").splitlines(keepends=True)
    text = [line for line in text if not line.startswith("engine = ")]
    path.write_text(f"engine = {engine}\n" + "".join(text), encoding="utf-8")


def _lock(path: Path) -> dict:
    return json.loads(lock_path(path).read_text(encoding="utf-8"))


def test_a_new_design_without_engine_pins_the_newest(tmp_path):
    path = _design(tmp_path)
    record = lock_design(path, engines=ENGINES)
    assert record["engine"] == 5 and _lock(path)["engine"] == 5
    # the pin is the lock's: a later package with engine 6 still means 5
    assert pinned_engine(load_design(path).data, record, engines=(4, 5, 6)) == 5
    assert check_design(path, engines=(4, 5, 6)) == []


def test_a_design_names_its_engine(tmp_path):
    path = _design(tmp_path, 4)
    assert lock_design(path, engines=ENGINES)["engine"] == 4
    require_locked(path, engines=ENGINES)


@pytest.mark.parametrize("bad", [3, 6, 0])
def test_an_engine_the_package_lacks_is_named(tmp_path, bad):
    path = _design(tmp_path, bad)
    with pytest.raises(ParameterError) as info:
        lock_design(path, engines=ENGINES)
    assert info.value.name == "engine" and info.value.got == bad
    if bad >= 1:
        assert "one of the engine versions 4, 5" in str(info.value)
    assert not lock_path(path).exists()


@pytest.mark.parametrize("bad", ["4", 4.0, True, [4]])
def test_an_engine_that_is_no_integer_is_named_on_load(tmp_path, bad):
    path = _design(tmp_path, bad)
    with pytest.raises(ParameterError) as info:
        load_design(path)
    assert info.value.name == "engine" and info.value.got == bad


def test_a_lock_made_before_the_field_means_engine_4(tmp_path):
    """Locks made before locks recorded an engine were all made with engine 4: such a lock
    (and its hash) stays as it is, the design means 4, and writing ``engine = 4`` into
    it is an amendment that changes no engine and needs no numbers, even with outcomes."""
    path = _design(tmp_path)
    old = lock_design(path)  # no engines: the lock records none, as before the field
    assert "engine" not in old
    assert LEGACY_ENGINE == 4 and pinned_engine(load_design(path).data, old) == 4
    assert check_design(path, engines=ENGINES) == []
    # an unrelated amendment keeps the lock without the field (and its hash)
    _set_engine(path, 4)
    assert check_design(path, engines=ENGINES) == ["sections changed: engine"]
    with pytest.raises(PreregistrationError, match="drifted.*sections changed: engine"):
        require_locked(path, engines=ENGINES)
    new = amend_design(path, reason="write out the engine", outcomes=OUTCOMES, engines=ENGINES)
    entry = new["amendments"][-1]
    assert new["engine"] == 4 and entry["engine"] == {"before": 4, "after": 4}
    assert entry["sections"] == ["engine"] and entry["outcomes_existed"]
    assert new["locked_at"] == old["locked_at"] and new["lock_sha256"] != old["lock_sha256"]
    assert check_design(path, engines=ENGINES) == []
    log = deviations_path(path).read_text(encoding="utf-8")
    assert "engine 4 -> 4" not in log and "- engine" not in log


def test_an_unrelated_amendment_of_an_old_lock_adds_no_engine(tmp_path):
    path = _design(tmp_path)
    old = lock_design(path)
    write_example_design(path, eps=(0.2,))
    new = amend_design(path, reason="finer", engines=ENGINES)
    assert "engine" not in new and new["amendments"][-1]["engine"] == {"before": 4, "after": 4}
    assert pinned_engine(load_design(path).data, new, engines=ENGINES) == 4
    assert new["lock_sha256"] == lock_hash({**new}) != old["lock_sha256"]


def test_changing_the_engine_after_outcomes_records_before_after_numbers(tmp_path):
    path = _design(tmp_path, 4)
    first = lock_design(path, engines=ENGINES)
    _set_engine(path, 5)
    assert check_design(path, engines=ENGINES) == [
        "engine changed: 4 -> 5",
        "sections changed: engine",
    ]
    with pytest.raises(ParameterError) as info:
        amend_design(path, reason="engine 5", outcomes=OUTCOMES, engines=ENGINES)
    assert info.value.name == "engine" and "before/after numbers" in str(info.value)
    assert _lock(path) == first  # refused: nothing written
    assert not deviations_path(path).exists()
    numbers = {"median hi/lo": (2.57, 2.05), "H1 p": (0.031, 0.044)}
    new = amend_design(path, reason="engine 5", outcomes=OUTCOMES, engines=ENGINES, numbers=numbers)
    entry = new["amendments"][-1]
    assert new["engine"] == 5 and entry["engine"] == {"before": 4, "after": 5}
    assert entry["numbers"] == {
        "median hi/lo": {"before": 2.57, "after": 2.05},
        "H1 p": {"before": 0.031, "after": 0.044},
    }
    assert new["lock_sha256"] != first["lock_sha256"]
    log = deviations_path(path).read_text(encoding="utf-8")
    assert "- engine 4 -> 5\n" in log
    assert "- median hi/lo: 2.57 (engine 4) -> 2.05 (engine 5)\n" in log
    assert check_design(path, engines=ENGINES) == []


def test_changing_the_engine_before_outcomes_needs_no_numbers(tmp_path):
    path = _design(tmp_path, 4)
    lock_design(path, engines=ENGINES)
    _set_engine(path, 5)
    new = amend_design(path, reason="engine 5 before any outcome", engines=ENGINES)
    assert new["engine"] == 5 and "numbers" not in new["amendments"][-1]


@pytest.mark.parametrize(
    "numbers", [{}, {"x": (1.0,)}, {"x": ("a", 1.0)}, {"": (1.0, 2.0)}, {"x": (1.0, float("nan"))}]
)
def test_bad_numbers_are_named(tmp_path, numbers):
    path = _design(tmp_path, 4)
    lock_design(path, engines=ENGINES)
    _set_engine(path, 5)
    with pytest.raises(ParameterError) as info:
        amend_design(path, reason="r", outcomes=OUTCOMES, engines=ENGINES, numbers=numbers)
    assert info.value.name == "numbers"


def test_the_pinned_engine_is_inside_the_lock_hash(tmp_path):
    path = _design(tmp_path)
    record = lock_design(path, engines=ENGINES)
    lock_path(path).write_text(json.dumps({**record, "engine": 4}), encoding="utf-8")
    assert "lock file damaged: its lock hash does not match its content" in check_design(path)
