"""Issue 52, item 11 (its last part): layers and heads a checkpoint does not have are
refused at `prereg draw` and `lock`, read from the checkpoint's config offline; a config
that cannot be read is said and skipped."""

from __future__ import annotations

import json

import pytest

from analysis.cli import main
from analysis.datasets import write_example_design
from analysis.prereg.lock import lock_path


def _checkpoint(tmp_path, layers: int, heads: int):
    folder = tmp_path / "tinyck"
    folder.mkdir()
    config = {"model_type": "bert", "num_hidden_layers": layers, "num_attention_heads": heads}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return str(folder)


@pytest.mark.parametrize(("layers", "heads", "key"), [(1, 4, "layers"), (2, 3, "heads")])
def test_draw_and_lock_refuse_what_the_checkpoint_lacks(tmp_path, capsys, layers, heads, key):
    ck = _checkpoint(tmp_path, layers, heads)  # the design samples 2 layers x 4 heads
    design = write_example_design(tmp_path / "d.toml", held_out=None, checkpoints=(ck,))
    before = design.read_bytes()
    capsys.readouterr()
    assert main(["prereg", "draw", str(design)]) == 2
    err = capsys.readouterr().err
    assert f"sampling.sources[0].{key}: expected" in err and f"{ck} has" in err
    assert design.read_bytes() == before  # nothing drawn
    # a held-out list written by other means: the lock refuses too
    from analysis.prereg.design import draw_held_out, load_design, write_held_out

    write_held_out(design, draw_held_out(load_design(design, require_held_out=False).data))
    assert main(["prereg", "lock", str(design)]) == 2
    assert f"sampling.sources[0].{key}: expected" in capsys.readouterr().err
    assert not lock_path(design).exists()


def test_a_checkpoint_that_has_them_is_drawn_and_locked(tmp_path, capsys):
    ck = _checkpoint(tmp_path, 2, 4)
    design = write_example_design(tmp_path / "d.toml", held_out=None, checkpoints=(ck,))
    assert main(["prereg", "draw", str(design)]) == 0
    assert main(["prereg", "lock", str(design)]) == 0
    assert "layers and heads not checked" not in capsys.readouterr().err


def test_an_unreadable_config_is_said_and_skipped(tmp_path, capsys):
    design = write_example_design(tmp_path / "d.toml", held_out=None)  # org/tiny: nowhere
    capsys.readouterr()
    assert main(["prereg", "draw", str(design)]) == 0
    err = capsys.readouterr().err
    assert "note: sampling.sources[0]: org/tiny: not on this machine" in err
    assert "layers and heads not checked" in err
