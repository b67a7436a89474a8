"""The resampling-unit columns a study builds for designs that resample KV groups or layers."""

import numpy as np
import pytest

from analysis.attention import softmax64
from analysis.store import Store
from analysis.study.units import checkpoint_layer, kv_groups, unit_column
from analysis.validation import ParameterError


def _gqa_store(path, *, n_heads=6, n_kv=2, layers=2, inputs=("a", "b"), L=8, d=4, seed=0):
    """A store of grouped-query heads: key head j serves query heads j*g .. j*g + g - 1."""
    rng = np.random.default_rng(seed)
    g = n_heads // n_kv
    with Store(path, create=True) as st:
        for inp in inputs:
            for layer in range(layers):
                keys = [rng.standard_normal((L, d)) for _ in range(n_kv)]
                for h in range(n_heads):
                    Q = rng.standard_normal((L, d))
                    K = keys[h // g].copy()
                    A = softmax64(Q, K, 1 / np.sqrt(d))
                    st.add_matrices(
                        [
                            dict(
                                source="checkpoint",
                                checkpoint="org/gqa",
                                layer=layer,
                                head=h,
                                input_id=inp,
                                length=L,
                                A=A,
                                Q=Q,
                                K=K,
                                scale=1 / np.sqrt(d),
                            )
                        ]
                    )[0]
    return path


def test_kv_groups_follow_shared_keys(tmp_path):
    import pandas as pd

    path = _gqa_store(tmp_path / "store")
    heads = [f"org/gqa:{layer}:{h}" for layer in range(2) for h in range(6)]
    table = pd.DataFrame({"cluster": heads})
    with Store(path) as st:
        out = unit_column(table, "kv_group", store=st)
    got = dict(zip(out["cluster"], out["kv_group"], strict=True))
    for layer in range(2):
        assert [got[f"org/gqa:{layer}:{h}"] for h in range(6)] == [f"org/gqa:{layer}:kv0"] * 3 + [
            f"org/gqa:{layer}:kv3"
        ] * 3
    # layers never share a group, even where key arrays were equal
    assert not set(out.loc[out["cluster"].str.contains(":0:"), "kv_group"]) & set(
        out.loc[out["cluster"].str.contains(":1:"), "kv_group"]
    )


def test_heads_equal_on_one_input_only_are_not_grouped():
    k, other = np.zeros((3, 2)), np.ones((3, 2))
    groups = kv_groups({"m:0:0": {"a": k, "b": k}, "m:0:1": {"a": k.copy(), "b": other}})
    assert groups == {"m:0:0": "m:0:kv0", "m:0:1": "m:0:kv1"}


def test_multi_head_attention_gives_groups_of_one(tmp_path):
    import pandas as pd

    path = _gqa_store(tmp_path / "store", n_heads=4, n_kv=4, layers=1)
    table = pd.DataFrame({"cluster": [f"org/gqa:0:{h}" for h in range(4)]})
    with Store(path) as st:
        out = unit_column(table, "kv_group", store=st)
    assert out["kv_group"].nunique() == 4


def test_checkpoint_layer_and_head_units():
    import pandas as pd

    table = pd.DataFrame({"cluster": ["a/b:0:1", "a/b:0:2", "a/b:11:0", "c:0:0"]})
    assert checkpoint_layer(table["cluster"]) == ["a/b:0", "a/b:0", "a/b:11", "c:0"]
    assert unit_column(table, "head") is table  # nothing added: the digest stays
    with pytest.raises(ParameterError) as err:
        checkpoint_layer(["no-layer"])
    assert err.value.name == "head_id"


def test_kv_group_needs_every_head_in_the_store(tmp_path):
    import pandas as pd

    path = _gqa_store(tmp_path / "store", layers=1)
    table = pd.DataFrame({"cluster": ["org/gqa:0:0", "org/gqa:5:0"]})
    with Store(path) as st, pytest.raises(ParameterError) as err:
        unit_column(table, "kv_group", store=st)
    assert err.value.name == "store"


def _study_with_unit(tmp_path, monkeypatch, unit):
    from analysis.datasets import write_example_design
    from analysis.prereg import load_design, lock_design
    from analysis.study.core import Study, block_facts, engine_versions

    monkeypatch.chdir(tmp_path)
    path = write_example_design("studies/unit.toml", temperatures=(0.5, 1.0), eps=(0.1, 0.2))
    text = path.read_text()
    assert "inference = {" in text
    path.write_text(text.replace("inference = {", f'inference = {{cluster = "{unit}", ', 1))
    lock_design(path, engines=engine_versions(), **block_facts(load_design(path)))
    return Study.open(path)


@pytest.mark.parametrize("unit", ["head", "checkpoint_layer"])
def test_comparison_table_carries_the_designs_unit(tmp_path, monkeypatch, unit):
    import pandas as pd

    from analysis.study.comparison import comparison_table

    study = _study_with_unit(tmp_path, monkeypatch, unit)
    brackets = pd.DataFrame(
        {
            "cell_key": ["c1", "c2", "c3"],
            "source": "checkpoint",
            "checkpoint": "org/tiny",
            "head_id": ["org/tiny:0:0", "org/tiny:1:1", "org/tiny:1:2"],
            "held_out": False,
            "lo": [4, 2, 1],
            "hi": [8, 2, 2],
            "input_id": "corpus:0",
            "length": 16,
            "temperature": 1.0,
            "eps": 0.1,
        }
    )
    locked = study.lock.record["blocks"]
    covs = [f"{b}__{c}" for b in ("baseline", "native") for c in locked[b]["covariates"]]
    features = pd.DataFrame(1.0, index=range(3), columns=covs)
    features["cell_key"] = ["c1", "c2", "c3"]
    table, _, _ = comparison_table(study, brackets, features)
    if unit == "head":
        assert "checkpoint_layer" not in table and "kv_group" not in table
    else:
        assert table["checkpoint_layer"].tolist() == ["org/tiny:0", "org/tiny:1", "org/tiny:1"]
