"""Bracket files: an interrupted ``profile_file`` resumes from its checkpoint."""

import pytest

from analysis.cli.inputs import load_matrices
from analysis.executor import RunSpec
from tests.fixtures.stacks import write_stack


@pytest.fixture
def stack(tmp_path):
    """Three 20 x 20 attention matrices in one .npy (float32)."""
    return write_stack(tmp_path / "A.npy")


def test_interrupted_run_resumes_from_checkpoint(stack, tmp_path, monkeypatch):
    import analysis.brackets.io as bio

    data = load_matrices(stack)
    ck = tmp_path / "ck.partial"
    full = bio.profile_file(data, eps=(0.1,), effort="fast", execution=RunSpec(progress=False))

    calls = {"n": 0}
    real = bio.profile_matrices  # one call per block; blocks of one matrix here

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt  # as if Ctrl-C hit during the third matrix
        return real(*args, **kwargs)

    monkeypatch.setattr(bio, "profile_matrices", flaky)
    with pytest.raises(KeyboardInterrupt):
        bio.profile_file(
            data,
            eps=(0.1,),
            effort="fast",
            checkpoint=ck,
            execution=RunSpec(progress=False, batch=1),
        )
    assert len(ck.read_text().splitlines()) == 2  # two finished matrices were kept
    with open(ck, "a") as f:
        f.write('{"key": "torn')  # a line cut short by a crash is ignored
    calls["n"] = -100  # no more interruptions; count the recomputed matrices
    resumed = bio.profile_file(
        data, eps=(0.1,), effort="fast", checkpoint=ck, execution=RunSpec(progress=False, batch=1)
    )
    assert calls["n"] == -100 + 1  # only the unfinished matrix was computed
    assert [p.brackets((0.1,)) for p in resumed] == [p.brackets((0.1,)) for p in full]


def test_tampered_checkpoint_lines_are_reverified_and_recomputed(stack, tmp_path, monkeypatch):
    """A resumed run re-verifies every stored profile against its matrix: a line whose
    witness no longer certifies its stored number is dropped, its block recomputed, and
    the count reported."""
    import json

    import analysis.brackets.io as bio
    from tests.fixtures.tamper import scale_upper, set_margin

    data = load_matrices(stack)
    eps = (0.1, 0.2)
    kw = {"eps": eps, "effort": "fast", "execution": RunSpec(progress=False, batch=1)}
    ck = tmp_path / "ck.partial"
    full = bio.profile_file(data, checkpoint=ck, **kw)
    lines = [json.loads(line) for line in ck.read_text().splitlines()]
    assert len(lines) == 3
    # matrix 0: the witness deciding hi at eps 0.1 gets U * 1.5, its error kept as stored
    hi = full[0].bracket(0.1)[1]
    lines[0]["profile"] = scale_upper(lines[0]["profile"], hi, 1.5)
    # matrix 2: the largest lower witness claims a margin above every eps
    size = max(full[2].lower)
    lines[2]["profile"] = set_margin(lines[2]["profile"], size, 0.9)
    ck.write_text("".join(json.dumps(rec) + "\n" for rec in lines))

    calls = []
    real = bio.profile_matrices

    def counting(As, **kwargs):
        calls.append(len(As))
        return real(As, **kwargs)

    monkeypatch.setattr(bio, "profile_matrices", counting)
    said: list[str] = []
    resumed = bio.profile_file(data, checkpoint=ck, say=said.append, **kw)
    assert calls == [1, 1]  # matrices 0 and 2 were recomputed, matrix 1 was reused
    assert [p.brackets(eps) for p in resumed] == [p.brackets(eps) for p in full]
    assert all(p.reverify(a) == [] for p, a in zip(resumed, data.A, strict=True))
    assert said == ["2 stored profiles failed re-verification and were recomputed"]
    # the recomputed profiles were appended: the next resume trusts and reuses them all
    said.clear()
    again = bio.profile_file(data, checkpoint=ck, say=said.append, **kw)
    assert calls == [1, 1] and said == []
    assert [p.brackets(eps) for p in again] == [p.brackets(eps) for p in full]
