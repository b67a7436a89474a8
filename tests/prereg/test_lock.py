"""Lock / check / amend round trip, drift messages, require_locked and sealing."""

from __future__ import annotations

import json
import re
import sys

import pandas as pd
import pytest

from analysis.cli import main
from analysis.prereg import (
    PreregistrationError,
    SealedCells,
    amend_design,
    check_descriptor_columns,
    check_design,
    deviations_path,
    load_design,
    lock_design,
    lock_path,
    require_locked,
    verify_blocks,
)
from analysis.validation import ParameterError

FEATURES = {"baseline": ["log_n", "entropy"], "native": ["q"], "intrinsic": ["kappa"]}
VERSIONS = {"baseline": "a" * 64, "native": "b" * 64, "intrinsic": "c" * 64}


def _heads_line(path):
    return next(ln for ln in path.read_text().splitlines() if ln.startswith("heads = ["))


def _key(s):
    ck, layer, head = s.rsplit(":", 2)
    return ck, int(layer), int(head)


def _set_heads(path, heads):
    text = path.read_text()
    path.write_text(text.replace(_heads_line(path), "heads = " + json.dumps(heads)))


def test_round_trip(design_file, capsys):
    assert main(["prereg", "lock", str(design_file)]) == 0
    record = json.loads(lock_path(design_file).read_text())
    assert record["held_out"]["n"] == 5
    # the CLI locks each block's covariate names and version from the registry
    assert record["features_known"] is True
    assert "covariate names and version" in record["features_note"]
    assert "native__kappa" in record["models"]["M1"]["features"]
    assert set(record["blocks"]) == {"baseline", "native", "intrinsic"}
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
    assert msg == ["block native: covariate columns changed (added [native__r], removed none)"]
    with pytest.raises(PreregistrationError, match="block native: covariate columns.*amend"):
        require_locked(design_file, features=changed)
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
    assert data.lock_sha256 == lock["lock_sha256"]
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


def test_block_versions_locked_and_drift(design_file):
    record = lock_design(design_file, features=FEATURES, versions=VERSIONS)
    assert record["blocks"]["native"] == {"covariates": ["q"], "version": "b" * 64}
    assert record["blocks"]["baseline"]["covariates"] == ["entropy", "log_n"]
    assert check_design(design_file, features=FEATURES, versions=VERSIONS) == []
    edited = dict(VERSIONS, native="d" * 64)
    assert check_design(design_file, features=FEATURES, versions=edited) == [
        "block native: source changed (version bbbbbbbbbbbb -> dddddddddddd)"
    ]
    with pytest.raises(PreregistrationError, match=r"block native: source changed.*prereg amend"):
        require_locked(design_file, features=FEATURES, versions=edited)
    lock = require_locked(design_file)  # the design alone has not changed
    verify_blocks(lock, features=FEATURES, versions=VERSIONS)
    with pytest.raises(PreregistrationError, match=r"block native.*prereg amend"):
        verify_blocks(lock, features=FEATURES, versions=edited)

    new = amend_design(design_file, reason="native edited", features=FEATURES, versions=edited)
    assert new["design_sha256"] == record["design_sha256"]
    assert new["lock_sha256"] != record["lock_sha256"]  # results of the new block differ
    entry = new["amendments"][-1]
    assert entry["previous_lock_sha256"] == record["lock_sha256"]
    assert entry["new_lock_sha256"] == new["lock_sha256"]
    assert entry["blocks"] == {"native": {"covariates": ["q"], "version": "d" * 64}}
    log = deviations_path(design_file).read_text()
    assert "- block native: source changed" in log
    assert f"- block native locked: covariates [q]; version {'d' * 64}" in log
    assert f"Lock SHA-256: {record['lock_sha256']} -> {new['lock_sha256']}" in log
    assert (
        require_locked(design_file, features=FEATURES, versions=edited).sha256
        == (new["lock_sha256"])
    )


def test_a_lock_without_blocks_is_refused_when_blocks_are_checked(design_file):
    record = lock_design(design_file)
    assert record["features_known"] is False and record["blocks"] == {}
    assert "only block names" in record["features_note"]
    require_locked(design_file)  # the design alone is locked
    with pytest.raises(PreregistrationError, match=r"blocks baseline, native, intrinsic.*not"):
        require_locked(design_file, features=FEATURES, versions=VERSIONS)
    new = amend_design(design_file, reason="lock the blocks", features=FEATURES, versions=VERSIONS)
    assert new["features_known"] is True
    assert "are not locked" in new["amendments"][-1]["changes"][0]
    assert set(new["amendments"][-1]["blocks"]) == set(FEATURES)
    assert check_design(design_file, features=FEATURES, versions=VERSIONS) == []


def test_identical_content_gives_the_same_lock_hash(design_file, tmp_path):
    other = tmp_path / "other" / "preregistration" / design_file.name
    other.parent.mkdir(parents=True)
    other.write_text(design_file.read_text())
    a = lock_design(design_file, features=FEATURES, versions=VERSIONS)
    b = lock_design(other, features=FEATURES, versions=VERSIONS)
    assert a["lock_sha256"] == b["lock_sha256"] != a["design_sha256"]
    rec = json.loads(lock_path(other).read_text())
    rec["blocks"]["native"]["version"] = "e" * 64
    lock_path(other).write_text(json.dumps(rec))
    assert any("lock hash does not match" in m for m in check_design(other))


def test_descriptor_columns_checked_against_the_lock(design_file):
    lock_design(design_file, features=FEATURES, versions=VERSIONS)
    lock = require_locked(design_file)
    cols = ["baseline__entropy", "baseline__log_n", "native__q", "intrinsic__kappa"]
    check_descriptor_columns(lock, cols + ["elsewhere__x"])  # other blocks are ignored
    with pytest.raises(PreregistrationError, match=r"block native.*native__r.*prereg amend"):
        check_descriptor_columns(lock, cols + ["native__r"])
    with pytest.raises(PreregistrationError, match=r"block baseline.*lacks \[baseline__log_n\]"):
        check_descriptor_columns(lock, [c for c in cols if c != "baseline__log_n"])


def test_descriptor_columns_need_locked_covariates(design_file):
    lock_design(design_file)
    with pytest.raises(PreregistrationError, match="no covariate names.*prereg amend"):
        check_descriptor_columns(require_locked(design_file), ["native__q"])


OUTCOMES = {"time": "2026-01-01T00:00:00+00:00", "lock_sha256": "f" * 64, "store": "S"}


def test_outcomes_refuse_a_new_lock_and_freeze_the_core(design_file):
    with pytest.raises(PreregistrationError, match="outcomes exist since 2026-01-01") as err:
        lock_design(design_file, outcomes=OUTCOMES)
    assert err.value.name == "design" and "f" * 64 in str(err.value)
    assert not lock_path(design_file).exists()
    first = lock_design(design_file, features=FEATURES, versions=VERSIONS)
    text = design_file.read_text()
    design_file.write_text(text.replace('title = "toy"', 'title = "toy study"'))
    rec = amend_design(design_file, reason="title", outcomes=OUTCOMES)
    assert rec["amendments"][-1]["sections"] == ["title"]
    assert rec["amendments"][-1]["outcomes_existed"] is True
    assert rec["locked_at"] == first["locked_at"]
    assert rec["relocked_at"] == rec["amendments"][-1]["time"]
    assert (
        "Sections changed: [title] (outcomes existed)" in deviations_path(design_file).read_text()
    )
    design_file.write_text(design_file.read_text().replace("alpha = 0.05", "alpha = 0.1"))
    with pytest.raises(PreregistrationError, match=r"changes \[inference\], refused") as err:
        amend_design(design_file, reason="looser", outcomes=OUTCOMES)
    assert err.value.name == "inference"
    # without outcomes (before the first bracket) the same amendment is accepted
    assert amend_design(design_file, reason="looser")["amendments"][-1]["sections"] == ["inference"]


KIT_PLUGIN = '''
import numpy as np

from analysis.descriptors import descriptor


@descriptor("sinks", needs=("A", "K"), diagnostics=("k_*",){declared})
def sinks(cell):
    """Attention paid to the first key, and K's condition number (inf if singular)."""
    return {{"mass": float(cell.A[:, 0].mean()), "k_cond": float(np.linalg.cond(cell.K))}}


BLOCKS = [sinks]
'''


@pytest.mark.parametrize("declared", ["", ", nonfinite=('k_cond',)"])
def test_lock_and_amend_refuse_a_plugin_that_fails_the_block_kit(
    design_file, declared, monkeypatch, capsys
):
    module = f"kit_sinks_{len(declared)}"
    (design_file.parent.parent / f"{module}.py").write_text(
        KIT_PLUGIN.format(declared=declared), encoding="utf-8"
    )
    monkeypatch.delitem(sys.modules, module, raising=False)
    text = design_file.read_text().replace("plugins = []", f'plugins = ["{module}"]')
    design_file.write_text(
        text.replace('M2 = ["baseline", "intrinsic"]', 'M2 = ["baseline", "sinks"]')
    )
    capsys.readouterr()
    status = main(["prereg", "lock", str(design_file)])
    if declared:  # inf declared: the plugin passes the kit and the design locks
        assert status == 0 and lock_path(design_file).exists()
        return
    err = capsys.readouterr().err
    assert status == 2 and not lock_path(design_file).exists()
    assert (
        f"{design_file}: lock refused: blocks: expected block 'sinks' to pass check 'finite'" in err
    )
    assert "matrix rank_deficient (t=1.0, eps=0.05): k_cond=inf" in err
    lock_design(design_file)  # the library locks what the CLI refuses; amend refuses it too
    design_file.write_text(design_file.read_text().replace("alpha = 0.05", "alpha = 0.1"))
    assert main(["prereg", "amend", str(design_file), "--reason", "r"]) == 2
    assert "amendment refused: blocks: expected block 'sinks'" in capsys.readouterr().err
