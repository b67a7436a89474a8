"""Engine 4 runs bit for bit as it did before engine 5 was added.

``data/engine4_reference.json`` holds the profiles (``to_dict`` with float32-base64
witnesses, each array replaced by the SHA-256 of its bytes, timing stats removed) that the code of commit 7fa849f (the last commit with
engine 4 alone) computed for :func:`reference_cases`, written once by running this
module's :func:`reference_profiles` from a git worktree of 7fa849f::

    git worktree add /tmp/e4 7fa849f
    cd /tmp/e4 && PYTHONPATH=$PWD python -c "import json, sys; \\
        sys.path.insert(0, '<this checkout>/tests/brackets'); \\
        import test_engine4_unchanged as t; \\
        json.dump(t.reference_profiles(), open('engine4_reference.json', 'w'))"

The test recomputes them with ``engine=4`` and compares every field: integer ends,
certified errors and margins (exact floats), methods and the witnesses' bytes. The
comparison is exact, so it holds on the host that wrote the reference (or one whose BLAS
rounds the same); elsewhere a last-bit difference of a float32 product would show here
first.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

DATA = Path(__file__).parent / "data" / "engine4_reference.json"
MINILM = Path(__file__).resolve().parents[2] / "data" / "examples" / "minilm_l64_4heads.npy"


def reference_cases() -> list[tuple[str, np.ndarray, str]]:
    """``(name, matrix, effort)``: two random 8 x 8 heads and the four N = 64 MiniLM heads
    (each alone; :func:`reference_profiles` adds heads 1 and 3 searched side by side)."""
    from analysis.brackets.examples import example_head

    heads = np.load(MINILM)
    cases = [(f"example_head-{s}", example_head(seed=s), "default") for s in (0, 3)]
    cases += [(f"minilm64-{i}", heads[i], "default") for i in range(len(heads))]
    cases += [("minilm64-0-fast", heads[0], "fast")]
    return cases


def _strip(d: dict) -> dict:
    """``d`` without its timings, each witness array replaced by the SHA-256 of its
    float32 bytes (exact, and the reference file stays small)."""
    d = dict(d)
    d["stats"] = {k: v for k, v in d["stats"].items() if k != "seconds"}
    for side in ("upper", "lower"):
        d[side] = [
            {k: hashlib.sha256(v.encode()).hexdigest() if k in "UWRY" else v for k, v in w.items()}
            for w in d[side]
        ]
    return d


def reference_profiles() -> dict[str, dict]:
    """Engine 4's profile of every reference case, as stored in the reference file."""
    from analysis.brackets import profile_matrices, profile_matrix

    eps = (0.05, 0.1, 0.2)
    out = {}
    for name, A, effort in reference_cases():
        prof = profile_matrix(A, eps=eps, effort=effort, engine=4)
        out[name] = _strip(prof.to_dict(arrays="float32-base64"))
    # two heads side by side (the batched path)
    heads = np.load(MINILM)[[1, 3]]
    for i, prof in enumerate(profile_matrices(heads, eps=eps, effort="default", engine=4)):
        out[f"minilm64-batch-{i}"] = _strip(prof.to_dict(arrays="float32-base64"))
    return out


def test_engine4_profiles_are_unchanged():
    ref = json.loads(DATA.read_text())
    now = json.loads(json.dumps(reference_profiles()))
    assert sorted(now) == sorted(ref)
    for name in ref:
        assert now[name] == ref[name], f"engine 4's profile of {name} changed"
