"""The worked query on a real atlas: lowest_rank_layers ranks layers by their median lower
end, within each checkpoint and length; the heatmap is written atomically."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.atlas import depth_grid, layer_depth_heatmap, lowest_rank_layers
from analysis.validation import ParameterError


def test_lowest_rank_layers_on_the_studys_atlas(atlas):
    top = lowest_rank_layers(atlas, eps=0.1, temperature=2.0)
    real = atlas.query("source == 'checkpoint' and eps == 0.1 and temperature == 2.0")
    assert set(zip(top["length"], top["layer"], strict=True)) == set(
        zip(real["length"], real["layer"], strict=True)
    )
    assert top["cells"].sum() == len(real) and (top["heads"] == 6).all()
    for (length, layer), cells in real.groupby(["length", "layer"]):
        row = top.loc[(top["length"] == length) & (top["layer"] == layer)].iloc[0]
        assert row["median_lower"] == np.median(cells["lower"])
        assert row["median_log2_lower"] == np.median(np.log2(np.maximum(cells["lower"], 1)))
        assert row["depth"] == round(layer / 5, 2)  # MiniLM has 6 layers
    for _, group in top.groupby("length"):
        order = group.sort_values("median_log2_lower")["layer"].tolist()
        assert group["layer"].tolist() == order and group["rank"].iloc[0] == 1


def test_heatmap_is_a_png_and_an_absent_eps_is_refused(atlas, tmp_path):
    path = layer_depth_heatmap(atlas, tmp_path / "fig" / "depth.png", eps=0.2)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in path.parent.iterdir()) == ["depth.png"]  # no temporary left
    with pytest.raises(ParameterError, match="^eps: "):
        layer_depth_heatmap(atlas, tmp_path / "x.png", eps=0.05)
    with pytest.raises(ParameterError, match="^by: "):
        lowest_rank_layers(atlas, eps=0.1, by=("no_such_column",))


def test_depth_grid_orders_lengths_as_numbers(atlas):
    # by length as a number within each checkpoint (a string sort puts "L=128" before "L=64")
    grid = depth_grid(atlas, eps=0.1)
    lengths = [int(c.rsplit("L=", 1)[1]) for c in grid.columns]
    models = [c.split("\n", 1)[0] for c in grid.columns]
    assert models == sorted(models)
    for model in set(models):
        mine = [n for m, n in zip(models, lengths, strict=True) if m == model]
        assert mine == sorted(mine) and len(mine) == len(set(mine))
    real = atlas.query("source == 'checkpoint' and eps == 0.1 and temperature == 1.0")
    assert sorted(set(lengths)) == sorted(set(real["length"]))
    assert 1 <= grid.shape[0] <= real["n_layers"].max()  # bins no layer falls in are left out


def test_depth_grid_puts_64_before_128(atlas):
    short, long_ = sorted(set(atlas["length"]))[:2]
    renamed = atlas.assign(length=atlas["length"].replace({short: 64, long_: 128}))
    columns = list(depth_grid(renamed, eps=0.1).columns)
    first = columns[0].split("\n", 1)[0]
    assert [c for c in columns if c.startswith(first + "\n")][:2] == [
        f"{first}\nL=64",
        f"{first}\nL=128",
    ]
