"""Lock / check / amend round trip, drift messages, require_locked and sealing."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from analysis.cli import main
from analysis.prereg import (
    PreregistrationError,
    SealedCells,
    amend_design,
    check_design,
    deviations_path,
    load_design,
    lock_design,
    lock_path,
    require_locked,
)
from analysis.validation import ParameterError

FEATURES = {"baseline": ["log_n", "entropy"], "native": ["q"], "intrinsic": ["kappa"]}


def _heads_line(path):
    return next(ln for ln in path.read_text().splitlines() if ln.startswith("heads = ["))


def _key(s):
    ck, layer, head = s.rsplit(":", 2)
    return ck, int(layer), int(head)


def _set_heads(path, heads):
    text = path.read_text()
    path.write_text(text.replace(_heads_line(path), "heads = " + json.dumps(heads)))


def test_round_trip(design_file, capsys):
    record = lock_design(design_file)
    assert lock_path(design_file).is_file()
    assert record["held_out"]["n"] == 5
    assert record["features_known"] is False
    assert "only block names" in record["features_note"]
    assert record["provenance"]["package_version"]
    assert re.match(r"\d{4}-\d\d-\d\dT", record["locked_at"])
    assert check_design(design_file) == []
    assert main(["prereg", "check", str(design_file)]) == 0

    # a deliberate change: three more heads held out
    heads = json.loads(_heads_line(design_file)[len("heads = ") :])
    extra = [h for h in load_design(design_file).population() if h not in heads][:3]
    new = sorted(set(heads) | set(extra), key=_key)
    added = len(set(new) - set(heads))
    assert added == 3
    _set_heads(design_file, new)
    changes = check_design(design_file)
    assert any(c.startswith(f"held-out list changed: {added} heads added") for c in changes)
    capsys.readouterr()
    assert main(["prereg", "check", str(design_file)]) == 1
    assert "held-out list changed" in capsys.readouterr().err
    with pytest.raises(PreregistrationError, match="held-out list changed"):
        require_locked(design_file)

    assert main(["prereg", "amend", str(design_file), "--reason", "broken heads"]) == 0
    assert check_design(design_file) == []
    log = deviations_path(design_file).read_text()
    assert "broken heads" in log and "held-out list changed" in log
    rec = json.loads(lock_path(design_file).read_text())
    assert len(rec["amendments"]) == 1
    assert rec["amendments"][0]["previous_held_out_sha256"] == record["held_out"]["sha256"]
    assert require_locked(design_file).held_out == tuple(new)


def test_comments_and_whitespace_are_not_drift(design_file):
    lock_design(design_file)
    text = design_file.read_text()
    design_file.write_text(
        "# a new comment\n\n" + text.replace("alpha = 0.05", "alpha   =   0.05   # two-sided?")
    )
    assert check_design(design_file) == []


def test_model_edit_named(design_file):
    lock_design(design_file)
    text = design_file.read_text()
    design_file.write_text(
        text.replace('M1 = ["baseline", "native"]', 'M1 = ["baseline", "native", "intrinsic"]')
    )
    changes = check_design(design_file)
    assert len(changes) == 1 and changes[0].startswith("models changed: M1")
    assert "intrinsic" in changes[0]


def test_other_section_edit_named(design_file):
    lock_design(design_file)
    design_file.write_text(design_file.read_text().replace("alpha = 0.05", "alpha = 0.1"))
    assert check_design(design_file) == ["sections changed: inference"]
    design_file.write_text(design_file.read_text().replace("seed = 7", "seed = 8"))
    assert "held_out" in check_design(design_file)[0]


def test_removed_head_named(design_file):
    lock_design(design_file)
    heads = json.loads(_heads_line(design_file)[len("heads = ") :])
    _set_heads(design_file, heads[1:])
    assert check_design(design_file)[0].startswith("held-out list changed: 1 head removed")


def test_lock_refuses_when_locked(design_file):
    lock_design(design_file)
    with pytest.raises(PreregistrationError, match="already exists.*amend"):
        lock_design(design_file)
    assert main(["prereg", "lock", str(design_file)]) == 2


def test_lock_refuses_a_list_that_is_not_the_draw(design_file):
    heads = json.loads(_heads_line(design_file)[len("heads = ") :])
    _set_heads(design_file, heads[:-1])
    with pytest.raises(ParameterError, match="held_out.heads"):
        lock_design(design_file)


def test_amend_needs_reason_and_a_change(design_file):
    lock_design(design_file)
    with pytest.raises(ParameterError, match="reason"):
        amend_design(design_file, reason="  ")
    with pytest.raises(PreregistrationError, match="nothing to amend"):
        amend_design(design_file, reason="no change")


def test_feature_columns_locked_and_drift(design_file, tmp_path):
    record = lock_design(design_file, features=FEATURES)
    assert record["features_known"] is True
    assert record["models"]["M1"]["features"] == [
        "baseline__entropy",
        "baseline__log_n",
        "native__q",
    ]
    assert check_design(design_file, features=FEATURES) == []
    changed = dict(FEATURES, native=["q", "r"])
    msg = check_design(design_file, features=changed)
    assert msg and "M1 feature columns changed" in msg[0] and "native__r" in msg[0]
    with pytest.raises(PreregistrationError, match="feature columns"):
        require_locked(design_file, features=changed)
    fjson = tmp_path / "features.json"
    fjson.write_text(json.dumps(changed))
    assert main(["prereg", "check", str(design_file), "--features", str(fjson)]) == 1
    amend_design(design_file, reason="new native feature", features=changed)
    assert check_design(design_file, features=changed) == []


def test_missing_lock_refuses_confirmatory_analysis(design_file):
    with pytest.raises(PreregistrationError, match="no lock"):
        require_locked(design_file)
    table = pd.DataFrame({"cluster": ["org/tiny-a:0:0"], "y_lower": [1.0], "y_upper": [2.0]})
    with pytest.raises(PreregistrationError, match="no lock"):
        SealedCells(table, design_file)
    assert main(["prereg", "check", str(design_file)]) == 2


def test_sealing(design_file):
    lock = lock_design(design_file)
    held = lock["held_out"]["heads"]
    train_head = "org/tiny-b:0:0" if "org/tiny-b:0:0" not in held else "org/tiny-b:0:1"
    table = pd.DataFrame(
        {
            "cluster": [held[0], held[0], train_head],
            "y_lower": [1.0, 2.0, 3.0],
            "y_upper": [1.5, 2.5, 3.0],
        }
    )
    sealed = SealedCells(table, design_file)
    tr = sealed.training()
    assert list(tr["cluster"]) == [train_head] and not tr["held_out"].any()
    data = sealed.release_confirmatory()
    assert data.lock_sha256 == lock["design_sha256"]
    assert data.table["held_out"].tolist() == [True, True, False]
    assert len(data.missing_heads) == len(held) - 1
    with pytest.raises(PreregistrationError, match="already released"):
        sealed.release_confirmatory()
    bad = table.assign(held_out=[False, False, False])
    with pytest.raises(PreregistrationError, match="disagrees"):
        SealedCells(bad, design_file)


def test_drifted_design_refuses_sealing(design_file):
    lock_design(design_file)
    design_file.write_text(
        design_file.read_text().replace(
            'M2 = ["baseline", "intrinsic"]', 'M2 = ["baseline", "native", "intrinsic"]'
        )
    )
    table = pd.DataFrame({"cluster": ["x"], "y_lower": [1.0], "y_upper": [1.0]})
    with pytest.raises(PreregistrationError, match="models changed: M2 blocks"):
        SealedCells(table, design_file)


def test_cli_draw_and_lock(tmp_path, design_text):
    path = tmp_path / "d.toml"
    path.write_text(design_text)
    assert main(["prereg", "draw", str(path)]) == 0
    assert main(["prereg", "lock", str(path)]) == 0
    assert main(["prereg", "draw", str(path)]) == 2  # locked: use amend
    assert main(["prereg", "check", str(path)]) == 0


def test_damaged_lock_is_caught(design_file):
    lock_design(design_file)
    lp = lock_path(design_file)
    rec = json.loads(lp.read_text())
    rec["held_out"]["heads"] = rec["held_out"]["heads"][:-1]
    lp.write_text(json.dumps(rec))
    msgs = check_design(design_file)
    assert any("lock file damaged" in m for m in msgs)
    with pytest.raises(PreregistrationError, match="damaged"):
        require_locked(design_file)
