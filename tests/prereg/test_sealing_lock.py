"""SealedCells with a lock already verified in the same run: no second read of the design."""

from __future__ import annotations

import pathlib

import pandas as pd
import pytest

from analysis.prereg import SealedCells, lock_design, require_locked
from analysis.validation import ParameterError


def test_sealing_with_a_verified_lock_reads_nothing(design_file, monkeypatch):
    lock_design(design_file)
    lock = require_locked(design_file)
    held = lock.held_out[0]
    table = pd.DataFrame({"cluster": [held, "x"], "y_lower": [1.0, 2.0], "y_upper": [1.0, 2.0]})
    reads = []
    real = pathlib.Path.read_text

    def counting(self, *args, **kwargs):
        reads.append(self)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "read_text", counting)
    sealed = SealedCells(table, design_file, lock=lock)
    assert reads == []
    data = sealed.release_confirmatory()
    assert data.lock_sha256 == lock.sha256
    assert data.table["held_out"].tolist() == [True, False]


def test_sealing_refuses_a_foreign_lock(design_file, tmp_path):
    lock_design(design_file)
    lock = require_locked(design_file)
    table = pd.DataFrame({"cluster": ["x"], "y_lower": [1.0], "y_upper": [1.0]})
    with pytest.raises(ParameterError, match="lock"):
        SealedCells(table, tmp_path / "other.toml", lock=lock)
    with pytest.raises(ParameterError, match="lock"):
        SealedCells(table, design_file, lock=lock.record)
    with pytest.raises(ParameterError, match="features"):
        SealedCells(table, design_file, lock=lock, features={"baseline": ["log_n"]})
