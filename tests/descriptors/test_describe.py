"""attnrank describe: layout of OUT.csv, plugins, temperature handling, input errors."""

from __future__ import annotations

import textwrap
import uuid

import numpy as np
import pandas as pd
import pytest

from analysis.attention import softmax64
from analysis.cli import main
from analysis.descriptors import build_registry, builtin_registry
from analysis.descriptors.baseline import svd_projection_errors
from analysis.descriptors.describe import describe_arrays, describe_file
from analysis.validation import ParameterError


@pytest.fixture
def npz(tmp_path, rng, make_arrays, write_npz):
    return write_npz(tmp_path / "in.npz", make_arrays(rng, n_layer=2, n_head=2, L=12, d=3))


def test_cli_writes_one_row_per_cell_with_key_columns_first(npz, tmp_path, capsys):
    out = tmp_path / "sub" / "out.csv"
    rc = main(
        [
            "describe",
            str(npz),
            "--eps",
            "0.05",
            "0.1",
            "0.2",
            "--temperatures",
            "1",
            "2",
            "--blocks",
            "baseline",
            "native",
            "intrinsic",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert rc == 0
    df = pd.read_csv(out)
    assert list(df.columns[:4]) == ["layer", "head", "temperature", "eps"]
    assert len(df) == 2 * 2 * 2 * 3
    assert not df.duplicated(["layer", "head", "temperature", "eps"]).any()
    blocks = {c.split("__")[0] for c in df.columns[4:]}
    assert blocks == {"baseline", "native", "intrinsic"}
    assert all(df[c].dtype == np.float64 for c in df.columns[4:])
    for c in ("native__kappa", "intrinsic__Pi", "baseline__svd_rank_l2"):
        assert c in df.columns
    assert [p.name for p in out.parent.iterdir()] == ["out.csv"]  # no temp file left


def test_temperature_enters_exactly(npz):
    df = describe_file(npz, eps=[0.5], temperatures=[1.0, 2.0], blocks=["native", "intrinsic"])
    one, two = df[df.temperature == 1.0].reset_index(), df[df.temperature == 2.0].reset_index()
    np.testing.assert_allclose(two["native__kappa"], one["native__kappa"] / 2, rtol=1e-14)
    for r in (1, 2, 3):
        np.testing.assert_allclose(
            two[f"intrinsic__q_r{r}"], one[f"intrinsic__q_r{r}"] / 2, rtol=1e-14
        )
        np.testing.assert_allclose(
            two[f"intrinsic__tau_r{r}"], 2 * np.tanh(one[f"intrinsic__q_r{r}"] / 8), rtol=1e-14
        )
        k1, k2 = one[f"intrinsic__kappa_r{r}"], two[f"intrinsic__kappa_r{r}"]
        ok = k1.notna()
        np.testing.assert_allclose(k2[ok], k1[ok] / 2, rtol=1e-14)


def test_baseline_features_match_direct_computations(npz):
    df = describe_file(
        npz, eps=[0.05, 0.3], temperatures=[1.5], blocks=["baseline", "baseline_plus"]
    )
    with np.load(npz) as z:
        Q, K, s, mask = z["Q"][1, 0], z["K"][1, 0], z["scale"][1, 0], z["mask"]
    A = softmax64(Q, K, s, mask, 1.5)
    sv = np.linalg.svd(A, compute_uv=False)
    errs = svd_projection_errors(A)
    rows = df[(df.layer == 1) & (df["head"] == 0)]
    for _, row in rows.iterrows():
        eps = row["eps"]
        k = next(k for k in range(len(sv) + 1) if (sv[k] if k < len(sv) else 0.0) <= eps)
        assert row["baseline__svd_rank_l2"] == k
        assert row["baseline_plus__svd_proj_rank"] == next(
            k for k, e in enumerate(errs) if e <= eps
        )
        # brute force for that rank: A V_k V_k^T
        kk = int(row["baseline_plus__svd_proj_rank"])
        V = np.linalg.svd(A)[2][:kk].T
        assert np.abs(A - A @ V @ V.T).sum(1).max() <= eps + 1e-12
    H = -(A * np.log(A)).sum(1)
    assert rows["baseline__entropy_mean"].iloc[0] == pytest.approx(H.mean(), rel=1e-12)
    assert rows["baseline__max_col_mass"].iloc[0] == pytest.approx(A.sum(0).max() / 12, rel=1e-12)


def test_feature_metadata_marks_covariates_and_log_scale():
    feature_info = builtin_registry().feature_info
    assert feature_info("intrinsic__Pi").kind == "covariate"
    assert feature_info("intrinsic__q_r3").kind == "diagnostic"
    assert feature_info("intrinsic__kappa_r12").kind == "diagnostic"
    assert feature_info("native__kappa").log_scale
    assert feature_info("baseline__n_keys").log_scale and feature_info("baseline__n_keys").integer
    assert not feature_info("native__bound_exponent").log_scale
    assert feature_info("intrinsic__r_star").integer
    table = builtin_registry().feature_table(
        ["layer", "baseline__stable_rank", "intrinsic__tau_r1"]
    )
    assert list(table["kind"]) == ["covariate", "diagnostic"]


def test_plugin_block_appears_in_out_csv(npz, tmp_path, monkeypatch):
    name = f"plug_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(
        textwrap.dedent(f"""
        from analysis.descriptors import descriptor

        @descriptor("{name}", needs=("A",), log_scale=("max_entry",))
        def block(cell):
            return {{"max_entry": float(cell.A.max()), "n_rows": cell.A.shape[0]}}

        BLOCKS = [block]
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "out.csv"
    rc = main(
        ["describe", str(npz), "--eps", "0.1", "--plugin", name, "--out", str(out), "--quiet"]
    )
    assert rc == 0
    df = pd.read_csv(out)
    assert f"{name}__max_entry" in df.columns and f"{name}__n_rows" in df.columns
    assert {"baseline__eps", "native__kappa", "intrinsic__Pi"} <= set(df.columns)  # all blocks
    assert list(df.columns).index(f"{name}__max_entry") > list(df.columns).index("intrinsic__Pi")
    assert build_registry([name]).feature_info(f"{name}__max_entry").log_scale
    assert (df[f"{name}__max_entry"] <= 1).all()
    # importing the plugin registered nothing: the built-in registry is unchanged
    assert name not in builtin_registry()


@pytest.mark.parametrize(
    "change, array",
    [
        (lambda a: a.pop("Q"), "Q"),
        (lambda a: a.update(scale=np.ones(3)), "scale"),
        (lambda a: a.update(scale=-a["scale"]), "scale"),
        (lambda a: a.update(K=a["K"][..., :2]), "K"),
        (lambda a: a.update(Q=a["Q"][0]), "Q"),
        (lambda a: a.update(mask=np.zeros((12, 12), dtype=bool)), "mask"),
        (lambda a: a.update(mask=np.ones((12, 12))), "mask"),
    ],
)
def test_bad_arrays_name_the_file_and_the_array(tmp_path, rng, make_arrays, change, array):
    arrays = make_arrays(rng, n_layer=1, n_head=1, L=12, d=3)
    arrays.pop("A")
    change(arrays)
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    with pytest.raises(ParameterError) as err:
        describe_file(path, eps=[0.1])
    assert err.value.name == "path"
    assert str(err.value.got).startswith("bad.npz: ") and array in str(err.value.got)


def test_stored_A_must_match_softmax64(tmp_path, rng, make_arrays):
    arrays = make_arrays(rng, n_layer=1, n_head=1, L=12, d=3)
    arrays["A"] = np.roll(arrays["A"], 1, axis=-1)
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ParameterError, match="^A:"):
        describe_file(tmp_path / "bad.npz", eps=[0.1])


def test_not_an_npz_and_missing_file(tmp_path):
    (tmp_path / "x.npz").write_text("not a zip")
    with pytest.raises(ParameterError, match="^path:"):
        describe_file(tmp_path / "x.npz", eps=[0.1])
    with pytest.raises(FileNotFoundError, match="^path: no such file"):
        describe_file(tmp_path / "missing.npz", eps=[0.1])


def test_object_arrays_are_refused_without_pickle(tmp_path, rng, make_arrays):
    arrays = make_arrays(rng, n_layer=1, n_head=1, L=12, d=3)
    arrays["meta"] = np.array([{"a": 1}], dtype=object)
    np.savez(tmp_path / "obj.npz", **arrays)
    with pytest.raises(ParameterError, match="^path:"):
        describe_file(tmp_path / "obj.npz", eps=[0.1])


def test_zero_interaction_gives_dimension_zero(make_arrays, rng):
    data = make_arrays(rng, n_layer=1, n_head=1, L=8, d=2)
    data["Q"][:] = 1.0  # constant queries: S has only column terms, C = 0
    data.pop("A")
    df = describe_arrays(data, eps=[0.1], blocks=["intrinsic"])
    assert df["intrinsic__rank_C"].iloc[0] == 0
    assert df["intrinsic__Pi"].iloc[0] == 0 and df["intrinsic__interaction_dim"].iloc[0] == 0
