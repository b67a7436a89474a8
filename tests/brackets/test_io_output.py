"""What a bracket run writes: ``OUT.json`` encoded matrix by matrix (``ResultWriter``), the
checkpoint's witness encoding, and the ``on_profile`` hook of ``profile_file``."""

import dataclasses
import json

import numpy as np
import pytest

import analysis.brackets.io as bio
from analysis.brackets import Profile
from analysis.brackets.io import ResultWriter, profile_file, result_json
from analysis.brackets.results import verify_result
from analysis.cli.inputs import load_matrices
from analysis.executor import RunSpec
from analysis.validation import ParameterError
from tests.fixtures.stacks import write_stack

EPS = (0.05, 0.1, 0.2)


@pytest.fixture
def data(tmp_path):
    """Three 20 x 20 attention matrices, as ``attnrank bracket`` loads them."""
    return load_matrices(write_stack(tmp_path / "A.npy"))


@pytest.mark.parametrize("witnesses", [True, False])
def test_writer_writes_the_bytes_of_result_json(data, tmp_path, witnesses):
    """Encoded matrix by matrix as the profiles arrive, the file is byte for byte
    ``json.dumps(result_json(...))``, and with witnesses it re-verifies."""
    writer = ResultWriter(data, eps=EPS, effort="fast", witnesses=witnesses)
    profs = profile_file(
        data,
        eps=EPS,
        effort="fast",
        on_profile=writer.add,
        execution=RunSpec(progress=False, batch=2),
    )
    out = tmp_path / "out.json"
    writer.write(out)
    res = result_json(data, profs, eps=EPS, effort="fast", witnesses=witnesses)
    assert out.read_text() == json.dumps(res)
    report = verify_result(data, json.loads(out.read_text()))
    assert report.status == (0 if witnesses else 2)
    assert report.checked == (
        sum(2 if lo else 1 for p in profs for lo, _ in p.brackets(EPS)) if witnesses else 0
    )


def test_writer_refuses_a_missing_matrix(data, tmp_path):
    writer = ResultWriter(data, eps=EPS, effort="fast", witnesses=True)
    profs = profile_file(data, eps=EPS, effort="fast", execution=RunSpec(progress=False))
    writer.add(0, profs[0])
    writer.add(2, profs[2])
    with pytest.raises(ParameterError, match=r"^profile: .*none for \[1\]"):
        writer.write(tmp_path / "out.json")
    assert not (tmp_path / "out.json").exists()


def test_on_profile_sees_every_matrix_once_reused_ones_first(data, tmp_path):
    """A resumed run hands the reused profiles to ``on_profile`` first, then the computed
    ones; each index once, with the profile that is returned."""
    ck = tmp_path / "ck.partial"
    kw = {
        "eps": EPS,
        "effort": "fast",
        "execution": RunSpec(progress=False, batch=1),
        "checkpoint": ck,
    }
    full = profile_file(data, **kw)
    lines = ck.read_text().splitlines()
    ck.write_text(lines[2] + "\n")  # only matrix 2 is stored
    seen: list[tuple[int, Profile]] = []
    resumed = profile_file(data, on_profile=lambda i, p: seen.append((i, p)), **kw)
    assert [i for i, _ in seen] == [2, 0, 1]
    assert all(p is resumed[i] for i, p in seen)
    assert [p.brackets(EPS) for p in resumed] == [p.brackets(EPS) for p in full]


def test_checkpoint_lines_hold_float32_witnesses_exactly(data, tmp_path, monkeypatch):
    """Checkpoint lines encode the witnesses as float32 bytes (the search stores only
    float32 values), and a resumed run reuses every line: nothing is recomputed, and each
    witness comes back bit for bit."""
    ck = tmp_path / "ck.partial"
    kw = {
        "eps": EPS,
        "effort": "fast",
        "execution": RunSpec(progress=False, batch=1),
        "checkpoint": ck,
    }
    full = profile_file(data, **kw)
    recs = [json.loads(line) for line in ck.read_text().splitlines()]
    assert [r["profile"]["arrays"] for r in recs] == ["float32-base64"] * 3
    lists = sum(len(json.dumps(p.to_dict())) for p in full)
    assert sum(len(json.dumps(r["profile"])) for r in recs) < lists / 2

    def no_search(*args, **kwargs):
        raise AssertionError("a stored profile was recomputed")

    monkeypatch.setattr(bio, "profile_matrices", no_search)
    again = profile_file(data, **kw)
    for p, q in zip(full, again, strict=True):
        assert sorted(p.upper) == sorted(q.upper) and sorted(p.lower) == sorted(q.lower)
        for k in p.upper:
            assert np.array_equal(p.upper[k].U, q.upper[k].U)
            assert np.array_equal(p.upper[k].W, q.upper[k].W)
        for m in p.lower:
            assert np.array_equal(p.lower[m].R, q.lower[m].R)
            assert np.array_equal(p.lower[m].Y, q.lower[m].Y)


def test_a_witness_off_float32_is_checkpointed_as_lists(data):
    """A value float32 cannot hold exactly keeps the lossless encoding (lists)."""
    prof = profile_file(data, eps=EPS, effort="fast", execution=RunSpec(progress=False))[0]
    assert bio._arrays_of(prof) == "float32-base64"
    k = max(prof.upper)
    w = prof.upper[k]
    U = w.U.copy()
    U[0, 0] = np.nextafter(U[0, 0], np.inf)  # a float64 between two float32 values
    off = dataclasses.replace(prof, upper={**prof.upper, k: dataclasses.replace(w, U=U)})
    assert bio._arrays_of(off) == "lists"
    back = Profile.from_dict(json.loads(json.dumps(off.to_dict(arrays=bio._arrays_of(off)))))
    assert np.array_equal(back.upper[k].U, U)
