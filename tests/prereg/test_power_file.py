"""The stored power beside a design: read and written whole, hashed into the lock, its
change or removal is drift that `prereg check` names, recorded through `prereg amend`."""

from __future__ import annotations

import hashlib
import json

import pytest

from analysis.cli import main
from analysis.power import POWER_FILE_FORMAT, read_power_file, write_power_file
from analysis.prereg import (
    PreregistrationError,
    amend_design,
    check_design,
    deviations_path,
    lock_design,
    lock_path,
    power_path,
    require_locked,
)
from analysis.validation import ParameterError


def _record(design_file, rate=0.25):
    return {
        "format": POWER_FILE_FORMAT,
        "design": design_file.name,
        "key": "k" * 64,
        "inputs": {"simulations": 4, "seed": 1, "assumptions": {"native_head_share": 0.5}},
        "result": {"hypotheses": [{"hypothesis": "H1", "power": {"rate": rate}}]},
        "provenance": {"command": "attnrank run x --power-simulations 4"},
    }


def _lock(design_file):
    return json.loads(lock_path(design_file).read_text())


def test_power_file_round_trip_and_refusals(design_file):
    assert read_power_file(design_file) is None
    path = write_power_file(design_file, _record(design_file))
    assert path == design_file.with_name(design_file.stem + ".power.json")
    assert read_power_file(design_file) == _record(design_file)
    wrong = dict(_record(design_file), design="another.toml")
    with pytest.raises(ParameterError, match="record"):
        write_power_file(design_file, wrong)
    path.write_text(json.dumps(wrong))  # a file copied from another design
    with pytest.raises(ParameterError, match="power_file.*another.toml"):
        read_power_file(design_file)
    path.write_text(json.dumps({**_record(design_file), "format": "power/0"}))
    with pytest.raises(ParameterError, match="power_file"):
        read_power_file(design_file)
    path.write_text("{not json")
    with pytest.raises(ParameterError, match="power_file"):
        read_power_file(design_file)


def test_power_file_is_locked_and_its_change_is_drift(design_file, capsys):
    record = lock_design(design_file)
    assert record["power_sha256"] is None
    first, lock_hash = record["locked_at"], record["lock_sha256"]
    path = write_power_file(design_file, _record(design_file))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    # a power file the lock does not know is drift: check names it, analysis refuses
    assert check_design(design_file) == [
        f"power file {path.name} is not locked (sha256 {digest[:12]})"
    ]
    with pytest.raises(PreregistrationError, match="power file"):
        require_locked(design_file)
    assert main(["prereg", "check", str(design_file)]) == 1
    assert "is not locked" in capsys.readouterr().err
    # amend records it: deviations log entry, lock hash and first lock time unchanged
    new = amend_design(design_file, reason="store the design's power")
    assert new["power_sha256"] == digest and _lock(design_file)["power_sha256"] == digest
    assert new["lock_sha256"] == lock_hash and new["locked_at"] == first
    entry = new["amendments"][-1]
    assert (entry["previous_power_sha256"], entry["new_power_sha256"]) == (None, digest)
    log = deviations_path(design_file).read_text()
    assert f"Power SHA-256: None -> {digest}" in log
    assert check_design(design_file) == []
    require_locked(design_file)
    # tampering with a stored number is drift
    write_power_file(design_file, _record(design_file, rate=0.99))
    changed = hashlib.sha256(path.read_bytes()).hexdigest()
    assert check_design(design_file) == [
        f"power file {path.name} changed (sha256 {digest[:12]} -> {changed[:12]})"
    ]
    # and so is removing it
    path.unlink()
    assert check_design(design_file) == [
        f"power file {path.name} is missing (locked sha256 {digest[:12]})"
    ]
    assert power_path(design_file) == path
