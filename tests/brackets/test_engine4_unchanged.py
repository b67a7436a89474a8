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

On another host the stored reference can differ in the last bit of a float32 product (the
CPU this suite runs on in CI has AVX-512 kernels; the reference was written on another).
There the test recomputes the reference itself: it exports commit 7fa849f's ``analysis/``
with ``git archive`` and runs the same cases through that code in a subprocess on this
host, then requires today's engine 4 to equal it bit for bit. The property checked is the
same, "engine 4 computes what the code of 7fa849f computes, on this machine"; only the
place the reference comes from changes. Without git history (a source archive) and with a
stored reference that does not match, the test fails and says so.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np

DATA = Path(__file__).parent / "data" / "engine4_reference.json"
ROOT = Path(__file__).resolve().parents[2]
MINILM = ROOT / "data" / "examples" / "minilm_l64_4heads.npy"
#: The last commit with engine 4 alone: the code the reference file was written with.
REFERENCE_COMMIT = "7fa849f"


def reference_cases() -> list[tuple[str, np.ndarray, str]]:
    """``(name, matrix, effort)``: two random 8 x 8 heads and the four N = 64 MiniLM heads
    (each alone; :func:`reference_profiles` adds heads 1 and 3 searched side by side)."""
    from analysis.datasets import example_head

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


def profiles_of(cases: list[tuple[str, np.ndarray, str]], batch: np.ndarray) -> dict[str, dict]:
    """Engine 4's profile of each case and of ``batch`` searched side by side, stripped as
    in the reference file. Imports ``analysis`` when called, so a subprocess whose path
    starts with another commit's code computes that commit's profiles."""
    from analysis.brackets import profile_matrices, profile_matrix

    eps = (0.05, 0.1, 0.2)
    out = {}
    for name, A, effort in cases:
        prof = profile_matrix(A, eps=eps, effort=effort, engine=4)
        out[name] = _strip(prof.to_dict(arrays="float32-base64"))
    for i, prof in enumerate(profile_matrices(batch, eps=eps, effort="default", engine=4)):
        out[f"minilm64-batch-{i}"] = _strip(prof.to_dict(arrays="float32-base64"))
    return out


def reference_profiles() -> dict[str, dict]:
    """Engine 4's profile of every reference case, as stored in the reference file."""
    return profiles_of(reference_cases(), np.load(MINILM)[[1, 3]])


def _profiles_at_commit(commit: str, work: Path) -> dict[str, dict]:
    """:func:`reference_profiles` computed by the code of ``commit`` on this host."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        raise AssertionError(
            "engine 4's profiles differ from the stored reference and no git history is "
            f"here to recompute it from commit {commit} on this host"
        )
    archive = work / "old.tar"
    subprocess.run(
        ["git", "-C", str(ROOT), "archive", "-o", str(archive), commit, "analysis"], check=True
    )
    with tarfile.open(archive) as tar:
        tar.extractall(work / "code", filter="data")
    cases = reference_cases()
    np.savez(
        work / "cases.npz",
        **{f"case{i}": A for i, (_, A, _) in enumerate(cases)},
        batch=np.load(MINILM)[[1, 3]],
    )
    (work / "cases.json").write_text(json.dumps([[n, e] for n, _, e in cases]))
    script = (
        "import json, sys; import numpy as np\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "import test_engine4_unchanged as t\n"
        "meta = json.load(open('cases.json')); z = np.load('cases.npz')\n"
        "cases = [(n, z[f'case{i}'], e) for i, (n, e) in enumerate(meta)]\n"
        "json.dump(t.profiles_of(cases, z['batch']), open('old.json', 'w'))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(work / "code")}
    # cwd = work: the checkout's own analysis/ must not shadow the exported one
    subprocess.run([sys.executable, "-c", script], cwd=work, env=env, check=True)
    return json.loads((work / "old.json").read_text())


def test_engine4_profiles_are_unchanged(tmp_path):
    ref = json.loads(DATA.read_text())
    now = json.loads(json.dumps(reference_profiles()))
    assert sorted(now) == sorted(ref)
    if now != ref:  # another host's rounding: the reference of this host, from the old code
        ref = _profiles_at_commit(REFERENCE_COMMIT, tmp_path)
        assert sorted(now) == sorted(ref)
    for name in ref:
        assert now[name] == ref[name], f"engine 4's profile of {name} changed"
