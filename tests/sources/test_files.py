"""The one reader of the extract ``.npz``: every check, each failure naming the file and the array.

:func:`analysis.sources.files.read_extract` is what :func:`load_extraction`, ``attnrank
describe`` (:func:`analysis.descriptors.describe.load_npz`) and the bracket commands
(:func:`analysis.cli.inputs.load_matrices`) read an extract with; a file each of them
reads is refused by all of them with the same message.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from analysis.attention import softmax64
from analysis.cli.inputs import load_matrices
from analysis.descriptors.describe import load_npz
from analysis.sources.files import load_extraction, read_extract
from analysis.validation import ParameterError

L = 5


def _arrays() -> dict[str, np.ndarray]:
    """A valid extract of one layer, two heads, L = 5, with a causal mask and a bias."""
    rng = np.random.default_rng(0)
    Q = rng.normal(size=(1, 2, L, 3)).astype(np.float32)
    K = rng.normal(size=(1, 2, L, 3)).astype(np.float32)
    scale = np.full((1, 2), 3**-0.5)
    mask = np.tril(np.ones((L, L), dtype=bool))
    bias = rng.normal(size=(1, 2, L, L)).astype(np.float32)
    return {
        "A": softmax64(Q, K, scale, mask, bias=bias).astype(np.float32),
        "Q": Q,
        "K": K,
        "scale": scale,
        "mask": mask,
        "causal": np.asarray(True),
        "tokens": np.asarray([f"t{i}" for i in range(L)]),
        "meta": np.asarray(json.dumps({"checkpoint": "c", "input_id": "i"})),
        "bias": bias,
    }


def _nan(x: np.ndarray) -> np.ndarray:
    x = x.copy()
    x.flat[1] = np.nan
    return x


#: (array, change): each makes the file wrong in that array only.
BAD = [
    ("Q", lambda a: a.update(Q=_nan(a["Q"]))),
    ("Q", lambda a: a.update(Q=a["Q"] > 0)),  # bool: not numeric
    ("Q", lambda a: a.update(Q=a["Q"][0])),  # not [layer, head, L, d]
    ("Q", lambda a: a.update(Q=a["Q"][..., :0], K=a["K"][..., :0])),  # d = 0
    ("K", lambda a: a.update(K=_nan(a["K"]))),
    ("K", lambda a: a.update(K=a["K"][..., :2])),
    ("scale", lambda a: a.update(scale=np.ones(2))),
    ("scale", lambda a: a.update(scale=np.zeros((1, 2)))),
    ("scale", lambda a: a.update(scale=-a["scale"])),
    ("scale", lambda a: a.update(scale=np.full((1, 2), np.inf))),
    ("scale", lambda a: a.update(scale=np.full((1, 2), "x"))),
    ("mask", lambda a: a.update(mask=a["mask"].astype(np.float64))),
    ("mask", lambda a: a.update(mask=a["mask"][:-1])),
    ("mask", lambda a: a.update(mask=np.triu(a["mask"], 1))),  # the last row allows no key
    ("A", lambda a: a.update(A=a["A"][..., :-1])),
    ("A", lambda a: a.update(A=_nan(a["A"]))),
    ("A", lambda a: a.update(A=(a["A"] > 0).astype(np.int64))),
    ("bias", lambda a: a.update(bias=a["bias"][0])),
    ("bias", lambda a: a.update(bias=_nan(a["bias"]))),
    ("bias", lambda a: a.update(bias=np.zeros((1, 2, L, L), dtype=np.int64))),
    ("causal", lambda a: a.update(causal=np.asarray(1))),
    ("causal", lambda a: a.update(causal=np.asarray([True]))),
    ("tokens", lambda a: a.update(tokens=a["tokens"][:-1])),
    ("tokens", lambda a: a.update(tokens=np.arange(L))),
    ("meta", lambda a: a.update(meta=np.asarray("{not json"))),
    ("meta", lambda a: a.update(meta=np.asarray("[1, 2]"))),
]


def _write(tmp_path, change=None) -> object:
    arrays = _arrays()
    if change is not None:
        change(arrays)
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    return path


def test_a_valid_extract_reads_as_stored(tmp_path):
    path = _write(tmp_path)
    x = load_extraction(path)
    arrays = _arrays()
    for name in ("A", "Q", "K", "scale", "mask", "tokens", "bias"):
        got = getattr(x, name)
        assert got.dtype == arrays[name].dtype and np.array_equal(got, arrays[name])
    assert x.causal is True and x.meta == {"checkpoint": "c", "input_id": "i"}


@pytest.mark.parametrize(("array", "change"), BAD)
def test_each_bad_array_is_named_with_the_file(tmp_path, array, change):
    path = _write(tmp_path, change)
    with pytest.raises(ParameterError) as info:
        load_extraction(path)
    assert info.value.name == "path"
    got = str(info.value.got)
    assert got.startswith("bad.npz: ") and got.split(": ")[1].split()[0] == array, got


@pytest.mark.parametrize(
    ("array", "change"), [(a, c) for a, c in BAD if a in ("Q", "K", "scale", "mask", "bias")]
)
def test_every_reader_refuses_what_the_reader_refuses(tmp_path, array, change):
    """describe and the bracket commands read through read_extract: the same refusal."""
    path = _write(tmp_path, change)
    messages = []
    for read in (load_extraction, load_npz, load_matrices):
        with pytest.raises(ParameterError) as info:
            read(path)
        assert info.value.name == "path"
        messages.append(str(info.value.got))
    assert len(set(messages)) == 1 and array in messages[0]


def test_a_nan_in_q_is_named_q_not_a(tmp_path):
    """The bracket commands rebuild A from Q: a NaN in Q is refused as Q, before any A."""
    path = _write(tmp_path, lambda a: a.update(Q=_nan(a["Q"])))
    with pytest.raises(ParameterError, match="Q has NaN or inf"):
        load_matrices(path)


def test_optional_arrays_are_read_only_when_asked(tmp_path):
    path = _write(tmp_path, lambda a: a.update(A=_nan(a["A"])))
    z = read_extract(path, required=("Q", "K", "scale"), optional=("mask",))
    assert sorted(z) == ["K", "Q", "mask", "scale"]
