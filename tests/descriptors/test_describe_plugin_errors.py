"""``attnrank describe`` and a plugin block that misbehaves on some cells (issue 52).

A block whose feature names differ between cells (item 12) is refused, naming the block,
rather than written as the union of its names with blanks; a block that raises (item 10)
is one line naming the block and the cell, never a traceback. Either way no OUT.csv is
written.
"""

from __future__ import annotations

import textwrap
import uuid

import pytest

from analysis.cli import main
from analysis.descriptors.describe import describe_arrays

# Each plugin misbehaves on one cell kind only: eps 0.2, or head 1 (the key vectors of
# head 1 are drawn apart from head 0's in the fixture, so cell.K tells them apart).
BODIES = {
    "names_by_eps": 'return {"x": 1.0} if cell.eps < 0.15 else {"y": 1.0}',
    "extra_name_by_eps": 'return {"x": 1.0, **({"z": 2.0} if cell.eps > 0.15 else {})}',
    "names_by_head": 'return {"x": 1.0} if float(cell.K[0, 0]) == K00 else {"y": 1.0}',
    "raises_by_eps": 'if cell.eps > 0.15:\n        raise RuntimeError("kaput")\n    return {"x": 1.0}',
    "raises_by_head": 'if float(cell.K[0, 0]) != K00:\n        raise KeyError("lost")\n    return {"x": 1.0}',
}


@pytest.fixture
def arrays(rng, make_arrays):
    return make_arrays(rng, n_layer=1, n_head=2, L=8, d=3)


def _plugin(tmp_path, monkeypatch, body: str, k00: float) -> str:
    name = f"plug_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(
        textwrap.dedent(f"""
        from analysis.descriptors import descriptor

        K00 = {k00!r}

        @descriptor("{name}")
        def block(cell):
            {{body}}

        BLOCKS = [block]
    """).replace("{body}", body)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


@pytest.mark.parametrize("kind", sorted(BODIES))
def test_describe_refuses_a_misbehaving_block_in_one_line(
    kind, arrays, write_npz, tmp_path, monkeypatch, capsys
):
    npz = write_npz(tmp_path / "in.npz", arrays, dtype=float)
    name = _plugin(tmp_path, monkeypatch, BODIES[kind], float(arrays["K"][0, 0, 0, 0]))
    out = tmp_path / "out.csv"
    argv = ["describe", str(npz), "--eps", "0.1", "0.2", "--plugin", name, "--blocks", name]
    rc = main([*argv, "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert f"block '{name}'" in lines[0], err
    cell = "head 1, t=1, eps=0.1" if kind.endswith("head") else "head 0, t=1, eps=0.2"
    assert f"layer 0, {cell}" in lines[0], err
    if kind.startswith("raises"):
        assert ("RuntimeError: kaput" if "eps" in kind else "KeyError") in lines[0], err
    else:
        assert "the same feature names on every cell" in lines[0], err
    assert not out.exists()


def test_a_block_with_the_same_names_everywhere_is_written(arrays, tmp_path, monkeypatch):
    """The check refuses only a difference: a well-behaved plugin still describes."""
    name = _plugin(tmp_path, monkeypatch, 'return {"x": float(cell.eps)}', 0.0)
    from analysis.descriptors import build_registry

    block = build_registry([name]).get(name)
    df = describe_arrays(arrays, eps=[0.1, 0.2], temperatures=[1.0, 2.0], blocks=[block])
    assert df[f"{name}__x"].notna().all() and len(df) == 8
    assert sorted(set(df[f"{name}__x"])) == [0.1, 0.2]
