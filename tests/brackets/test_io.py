"""Bracket files: an interrupted ``profile_file`` resumes from its checkpoint."""

import pytest

from tests.fixtures.stacks import write_stack


@pytest.fixture
def stack(tmp_path):
    """Three 20 x 20 attention matrices in one .npy (float32)."""
    return write_stack(tmp_path / "A.npy")


def test_interrupted_run_resumes_from_checkpoint(stack, tmp_path, monkeypatch):
    import analysis.brackets.io as bio

    data = bio.load_matrices(stack)
    ck = tmp_path / "ck.partial"
    full = bio.profile_file(data, eps=(0.1,), effort="fast", progress=False)

    calls = {"n": 0}
    real = bio.profile_matrices  # one call per block; blocks of one matrix here

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt  # as if Ctrl-C hit during the third matrix
        return real(*args, **kwargs)

    monkeypatch.setattr(bio, "profile_matrices", flaky)
    with pytest.raises(KeyboardInterrupt):
        bio.profile_file(data, eps=(0.1,), effort="fast", progress=False, checkpoint=ck, batch=1)
    assert len(ck.read_text().splitlines()) == 2  # two finished matrices were kept
    with open(ck, "a") as f:
        f.write('{"key": "torn')  # a line cut short by a crash is ignored
    calls["n"] = -100  # no more interruptions; count the recomputed matrices
    resumed = bio.profile_file(
        data, eps=(0.1,), effort="fast", progress=False, checkpoint=ck, batch=1
    )
    assert calls["n"] == -100 + 1  # only the unfinished matrix was computed
    assert [p.brackets((0.1,)) for p in resumed] == [p.brackets((0.1,)) for p in full]
