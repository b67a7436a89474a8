"""Efficient-attention approximants as certified upper witnesses (``attnrank approximants``)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis.attention import softmax64
from analysis.brackets.approximant_tables import compare_with_brackets, summarize
from analysis.brackets.approximants import (
    METHODS,
    approximant_errors,
    approximant_ranks,
    least_ranks,
    linformer_witness,
    nystrom_witness,
    performer_features,
    performer_witness,
    rows_witness,
    segment_matrix,
)
from analysis.brackets.io import QueriesKeys
from analysis.brackets.verify import certified_upper_error
from analysis.cli import main
from analysis.cli.inputs import load_matrices, load_queries_keys
from analysis.validation import ParameterError


@pytest.fixture
def qk():
    rng = np.random.default_rng(0)
    Q = rng.normal(size=(24, 4))
    K = rng.normal(size=(24, 4))
    s = 0.7
    return Q, K, s, softmax64(Q, K, s)


def _plain_error(A, U, W):
    return np.abs(A - U @ W.T).sum(1).max()


def test_segment_matrix_averages_contiguous_segments():
    E = segment_matrix(7, 3)  # segments {0, 1, 2}, {3, 4}, {5, 6}
    expected = np.zeros((3, 7))
    expected[0, :3] = 1 / 3
    expected[1, 3:5] = 1 / 2
    expected[2, 5:] = 1 / 2
    np.testing.assert_allclose(E, expected, rtol=0, atol=0)
    np.testing.assert_array_equal(segment_matrix(5, 5), np.eye(5))


def test_full_rank_landmarks_reproduce_A(qk):
    # k = N: every segment is one position, so Linformer's E is the identity and
    # Nystromformer's landmarks are Q and K themselves (A pinv(A) A = A).
    Q, K, s, A = qk
    for U, W in (linformer_witness(Q, K, s, 24), nystrom_witness(Q, K, s, 24)):
        assert U.shape == (24, 24) and W.shape == (24, 24)
        assert _plain_error(A, U, W) < 1e-9


def test_linformer_rows_are_probability_vectors(qk):
    # softmax over k pooled keys times segment means: rows of B are non-negative, sum 1.
    Q, K, s, A = qk
    U, W = linformer_witness(Q, K, s, 5)
    B = U @ W.T
    assert (B >= 0).all()
    np.testing.assert_allclose(B.sum(1), 1.0, rtol=1e-12)


def test_rows_witness_is_exact_at_the_rank_of_A():
    rng = np.random.default_rng(1)
    # A rank-3 row-stochastic matrix: rows are mixtures of 3 distributions.
    P = rng.dirichlet(np.ones(12), size=3)
    A = rng.dirichlet(np.ones(3), size=20) @ P
    U, W = rows_witness(A, 3)
    assert _plain_error(A, U, W) < 1e-10
    assert _plain_error(A, *rows_witness(A, 2)) > 1e-3


def test_performer_is_normalized_and_unbiased():
    rng = np.random.default_rng(2)
    Q = 0.3 * rng.normal(size=(16, 3))
    K = 0.3 * rng.normal(size=(16, 3))
    A = softmax64(Q, K, 1.0)
    U, W = performer_witness(Q, K, 1.0, performer_features(3, 8, np.random.default_rng(0)))
    assert (U > 0).all() and (W > 0).all()
    np.testing.assert_allclose((U @ W.T).sum(1), 1.0, rtol=1e-12)
    # Unbiased kernel estimate: with many features the error falls towards 0 (a biased
    # estimator, e.g. orthogonal blocks from an unsigned QR, stalls near 0.1 here).
    errs = [
        _plain_error(
            A, *performer_witness(Q, K, 1.0, performer_features(3, c, np.random.default_rng(3)))
        )
        for c in (30, 30_000)
    ]
    assert errs[1] < 0.03 < errs[0]


def test_performer_features_are_orthogonal_in_blocks_and_nested(qk):
    W = performer_features(4, 10, np.random.default_rng(5))
    assert W.shape == (10, 4)
    block = W[:4] / np.linalg.norm(W[:4], axis=1, keepdims=True)
    np.testing.assert_allclose(block @ block.T, np.eye(4), atol=1e-12)
    # One draw of min(M, N) = 24 features serves every rank: rank 5 uses its first 5,
    # whatever other ranks are tried.
    Q, K, s, A = qk
    feats = performer_features(4, 24, np.random.default_rng(0))
    want = certified_upper_error(A, *performer_witness(Q, K, s, feats[:5]))
    for ranks in ([5, 10], [5]):
        errs = approximant_errors(A, QueriesKeys(Q, K, s), methods=("performer",), ranks=ranks)
        assert errs["error"].iloc[0] == want


def test_errors_are_certified_and_least_rank_is_the_first_reaching_eps(qk):
    Q, K, s, A = qk
    errs = approximant_errors(A, QueriesKeys(Q, K, s), random_state=0)
    assert list(errs.columns) == ["method", "rank", "error", "computed"]
    assert set(errs["method"]) == set(METHODS)
    assert (errs["error"] >= errs["computed"]).all()
    np.testing.assert_allclose(errs["error"], errs["computed"], rtol=1e-6, atol=1e-12)
    # The certified error of the rows witness at rank 5 is the verifier's.
    U, W = rows_witness(A, 5)
    got = errs[(errs["method"] == "rows") & (errs["rank"] == 5)]["error"].item()
    assert got == certified_upper_error(A, U, W)
    eps = (0.05, 0.2)
    table = least_ranks(errs, eps, full_rank=24)
    for (method, e), row in table.set_index(["method", "eps"]).iterrows():
        g = errs[errs["method"] == method]
        ok = g[g["error"] <= e]["rank"]
        assert (pd.isna(row["rank"]) and ok.empty) or row["rank"] == ok.min()
        assert row["reached"] == (not ok.empty and ok.min() < 24)
    # Stopping early at the smallest eps gives the same least ranks.
    fast = approximant_ranks(A, eps, QueriesKeys(Q, K, s), random_state=0)
    pd.testing.assert_frame_equal(fast, table)


def test_svd_and_rows_need_only_A(qk):
    *_, A = qk
    t = approximant_ranks(A, [0.1], methods=("svd", "rows"))
    assert list(t["method"]) == ["svd", "rows"]
    assert t["reached"].all()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"methods": ("svd", "fourier")}, "methods"),
        ({"methods": ()}, "methods"),
        ({"methods": ("svd", "svd")}, "methods"),
        ({"methods": ("nystrom",)}, "qk"),
        ({"methods": ("linformer",), "Q": np.ones((3, 2)), "K": np.ones((24, 2))}, "qk.Q, qk.K"),
        ({"methods": ("performer",), "scale": -1.0}, "qk.scale"),
        ({"methods": ("nystrom",), "mask": np.tril(np.ones((24, 24), bool))}, "qk.mask"),
        ({"methods": ("nystrom",), "bias": np.zeros((24, 24))}, "qk.bias"),
        ({"ranks": [0, 3]}, "ranks"),
        ({"ranks": [25]}, "ranks"),
    ],
)
def test_invalid_input_names_the_parameter(qk, kwargs, match):
    Q, K, s, A = qk
    heads = {"Q": Q, "K": K, "scale": s}
    fields = {k: kwargs.pop(k) for k in ("Q", "K", "scale", "mask", "bias") if k in kwargs}
    given = None if kwargs == {"methods": ("nystrom",)} and not fields else heads | fields
    with pytest.raises(ParameterError, match=match):
        approximant_errors(A, None if given is None else QueriesKeys(**given), **kwargs)


def test_overhead_is_bounded_by_the_bracket():
    table = pd.DataFrame(
        {
            "index": [0, 0, 1],
            "eps": [0.1, 0.2, 0.1],
            "method": ["svd"] * 3,
            "rank": pd.array([12, 6, pd.NA], dtype="Int64"),
            "reached": [True, True, False],
        }
    )
    brackets = pd.DataFrame(
        {"index": [0, 0, 1], "eps": [0.1, 0.2, 0.1], "lower": [4, 0, 3], "upper": [6, 5, 9]}
    )
    out = compare_with_brackets(table, brackets)
    np.testing.assert_allclose(out["overhead_min"], [2.0, 1.2, np.nan])
    np.testing.assert_allclose(out["overhead_max"], [3.0, np.inf, np.nan])
    s = summarize(out)
    assert list(s["eps"]) == [0.1, 0.2]
    np.testing.assert_allclose(s["never_share"], [0.5, 0.0])
    np.testing.assert_allclose(s["median_overhead_min"], [2.0, 1.2])


def write_extract(path, *, heads: int, length: int, mask, seed: int):
    """An extract-like .npz (one layer): Q, K [1, heads, L, 4], scale 0.5, the given mask."""
    rng = np.random.default_rng(seed)
    Q = rng.normal(size=(1, heads, length, 4)).astype(np.float32)
    K = rng.normal(size=(1, heads, length, 4)).astype(np.float32)
    scale = np.full((1, heads), 0.5, dtype=np.float32)
    A = softmax64(Q, K, scale, mask).astype(np.float32)
    np.savez(path, Q=Q, K=K, scale=scale, mask=mask, A=A)
    return path


@pytest.fixture
def extract_npz(tmp_path):
    mask = np.ones((16, 16), dtype=bool)
    return write_extract(tmp_path / "x.npz", heads=2, length=16, mask=mask, seed=4)


def test_cli_against_brackets(extract_npz, tmp_path, capsys):
    out = tmp_path / "b.json"
    args = ["--eps", "0.1", "0.2", "--temperature", "2", "--quiet"]
    assert main(["bracket", str(extract_npz), *args, "--effort", "fast", "--out", str(out)]) == 0
    table = tmp_path / "t.csv"
    rc = main(
        ["approximants", str(extract_npz), *args, "--brackets", str(out), "--out", str(table)]
    )
    assert rc == 0
    df = pd.read_csv(table)
    assert len(df) == 2 * len(METHODS) * 2  # matrices x methods x eps
    assert {"layer", "head", "lower", "upper", "overhead_min", "overhead_max"} <= set(df.columns)
    res = json.loads(out.read_text())
    for m in res["matrices"]:
        for b in m["brackets"]:
            svd = df[
                (df["index"] == m["index"]) & (df["eps"] == b["eps"]) & (df["method"] == "svd")
            ]
            # The SVD witness is one of the engine's candidates: its rank is >= the upper end.
            assert svd["rank"].item() >= b["upper"] and svd["lower"].item() == b["lower"]
    assert "median_rank" in capsys.readouterr().out
    # A bracket file of another temperature is refused, naming --brackets.
    bad = ["approximants", str(extract_npz), "--eps", "0.1", "--quiet", "--brackets", str(out)]
    assert main(bad) == 2
    assert "--brackets" in capsys.readouterr().err


def test_cli_npy_input_defaults_to_A_only_methods(tmp_path, capsys):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(12, 3))
    p = tmp_path / "A.npy"
    np.save(p, softmax64(X, X, 2.0))
    assert main(["approximants", str(p), "--eps", "0.1", "--quiet"]) == 0
    cap = capsys.readouterr()
    assert "nystrom, linformer, performer left out" in cap.err
    assert "rows" in cap.out and "nystrom" not in cap.out
    assert main(["approximants", str(p), "--eps", "0.1", "--quiet", "--methods", "nystrom"]) == 2
    assert "--methods" in capsys.readouterr().err


def test_interrupted_run_resumes_from_checkpoint(extract_npz, tmp_path, monkeypatch):
    import analysis.brackets.approximant_tables as bio
    import analysis.brackets.approximants as ap

    data = load_matrices(extract_npz)
    qk = load_queries_keys(extract_npz, data)
    full, _ = bio.approximants_for_input(data, qk, eps=(0.1, 0.2), progress=False)
    ck = tmp_path / "t.csv.partial"
    calls = {"n": 0}
    real = ap.approximant_ranks

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt  # as if Ctrl-C hit during the second matrix
        return real(*args, **kwargs)

    monkeypatch.setattr(ap, "approximant_ranks", flaky)
    with pytest.raises(KeyboardInterrupt):
        bio.approximants_for_input(data, qk, eps=(0.1, 0.2), progress=False, checkpoint=ck)
    assert len(ck.read_text().splitlines()) == 1  # the finished matrix was kept
    calls["n"] = -100
    resumed, _ = bio.approximants_for_input(data, qk, eps=(0.1, 0.2), progress=False, checkpoint=ck)
    assert calls["n"] == -100 + 1  # only the unfinished matrix was computed
    pd.testing.assert_frame_equal(resumed, full)


def test_cli_masked_extract_leaves_out_qk_methods(tmp_path, capsys):
    causal = np.tril(np.ones((12, 12), dtype=bool))
    p = write_extract(tmp_path / "causal.npz", heads=1, length=12, mask=causal, seed=7)
    assert main(["approximants", str(p), "--eps", "0.1", "--quiet"]) == 0
    cap = capsys.readouterr()
    assert "left out: the input masks some keys" in cap.err
    assert "svd" in cap.out and "performer" not in cap.out
    assert main(["approximants", str(p), "--eps", "0.1", "--quiet", "--methods", "performer"]) == 2
    assert "mask" in capsys.readouterr().err


def test_a_method_without_finite_witness_gets_na_ranks():
    errors = pd.DataFrame(
        {"method": ["svd", "svd"], "rank": [1, 2], "error": [0.3, 0.05], "computed": [0.3, 0.05]}
    )
    t = least_ranks(errors, (0.1,), full_rank=4, methods=("nystrom", "svd"))
    assert list(t["method"]) == ["nystrom", "svd"]
    assert pd.isna(t["rank"].iloc[0]) and not t["reached"].iloc[0]
    assert t["rank"].iloc[1] == 2 and t["reached"].iloc[1]


def test_cli_notes_eps_without_bracket(extract_npz, tmp_path, capsys):
    out = tmp_path / "b.json"
    assert (
        main(
            [
                "bracket",
                str(extract_npz),
                "--eps",
                "0.2",
                "--quiet",
                "--effort",
                "fast",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    rc = main(
        ["approximants", str(extract_npz), "--eps", "0.1", "0.2", "--quiet", "--brackets", str(out)]
    )
    assert rc == 0
    assert "no bracket at eps [0.1]" in capsys.readouterr().err


def test_geometric_grid_is_refined_between_grid_ranks(monkeypatch):
    # Above ALL_RANKS_UP_TO ranks come from a geometric grid; every rank between the last
    # grid rank that misses an eps and the first that reaches it is tried too.
    import analysis.brackets.approximants as ap

    rng = np.random.default_rng(8)
    X = rng.normal(size=(60, 3))
    A = softmax64(X, X, 3.0)
    eps = (0.05, 0.2)
    full = approximant_ranks(A, eps, methods=("svd", "rows")).set_index(["method", "eps"])
    curves = approximant_errors(A, methods=("svd", "rows"))  # every rank 1..60
    monkeypatch.setattr(ap, "ALL_RANKS_UP_TO", 10)
    monkeypatch.setattr(ap, "GRID", 8)
    grid = ap.default_ranks(60)
    assert len(grid) < 20
    coarse = approximant_ranks(A, eps, methods=("svd", "rows")).set_index(["method", "eps"])
    off_grid = 0
    for (method, e), row in coarse.iterrows():
        err = curves[curves["method"] == method].set_index("rank")["error"]
        first = min(g for g in grid if err[g] <= e)  # first grid rank reaching eps
        prev = max([g for g in grid if g < first], default=0)
        want = min(k for k in range(prev + 1, first + 1) if err[k] <= e)
        assert row["rank"] == want
        assert row["rank"] >= full.loc[(method, e), "rank"]
        off_grid += int(row["rank"] not in grid)
    assert off_grid > 0  # the refinement found ranks the grid does not contain


def test_tampered_checkpoint_tables_are_recertified_and_recomputed(extract_npz, tmp_path):
    """A resumed run rebuilds each stored row's witness at its rank and certifies it again:
    a lowered rank or error fails, and that matrix's table is recomputed and counted."""
    import analysis.brackets.approximant_tables as bio

    data = load_matrices(extract_npz)
    qk = load_queries_keys(extract_npz, data)
    eps = (0.1, 0.2)
    ck = tmp_path / "t.csv.partial"
    full, _ = bio.approximants_for_input(data, qk, eps=eps, progress=False, checkpoint=ck)
    lines = [json.loads(line) for line in ck.read_text().splitlines()]
    row = next(r for r in lines[0]["rows"] if r["method"] == "svd" and r["eps"] == 0.1)
    row["rank"] -= 2  # claims a rank two below the least one the SVD reaches
    row = next(r for r in lines[1]["rows"] if r["method"] == "rows" and r["eps"] == 0.2)
    row["error"] /= 2  # claims half the certified error
    ck.write_text("".join(json.dumps(rec) + "\n" for rec in lines))
    said: list[str] = []
    resumed, _ = bio.approximants_for_input(
        data, qk, eps=eps, progress=False, checkpoint=ck, say=said.append
    )
    pd.testing.assert_frame_equal(resumed, full)
    assert said == ["2 stored approximant tables failed re-verification and were recomputed"]
    said.clear()
    again, _ = bio.approximants_for_input(
        data, qk, eps=eps, progress=False, checkpoint=ck, say=said.append
    )
    pd.testing.assert_frame_equal(again, full)
    assert said == []
