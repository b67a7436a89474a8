"""Native block version 2: no covariate is rounding noise; version 1 stays as locked.

Version 1's ``q_cond = sigma_max / sigma_min`` is the inverse of the SVD's rounding
residue when Q is exactly rank-deficient (fewer distinct rows than d: repeated tokens in a
layer without position). Version 2 takes the spectrum over the numerical rank. These tests
build such heads and perturb them far below the rank tolerance: every version 2 covariate
stays put, version 1's condition numbers do not.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from analysis.descriptors import (
    block_covariates,
    block_version,
    build_registry,
    builtin_registry,
    check_block,
)
from analysis.descriptors.builtin import BLOCK_VERSIONS
from analysis.descriptors.native2 import RANK_EPS, logit_rank, spectrum
from analysis.descriptors.registry import Cell, MatrixData, run_block
from analysis.prereg import descriptor_versions
from analysis.prereg.design import Design, tomllib
from analysis.prereg.schema import validate_design
from analysis.validation import ParameterError

ROOT = Path(__file__).resolve().parents[2]
V1 = builtin_registry().get("native")
V2 = build_registry(versions={"native": 2}).get("native")
TEMPS, EPS = (1.0, 2.0), (0.05, 0.2)


def rank_deficient_head(rng: np.random.Generator, *, L: int, distinct: int, d: int):
    """Q, K ``[L, d]`` of exact rank ``distinct - 1``: ``distinct`` distinct rows (tokens
    repeated), each with a zero last column, and K's rows also summing to a repeated row."""
    tokens = np.concatenate([np.arange(distinct), rng.integers(0, distinct, L - distinct)])
    rng.shuffle(tokens)
    Q0, K0 = rng.standard_normal((distinct, d)), rng.standard_normal((distinct, d))
    Q0[:, -1] = K0[:, -1] = 0.0  # a zero column
    Q0[-1] = Q0[0] + Q0[1]  # one more exact dependency: rank distinct - 1
    K0[-1] = K0[0] - K0[2]
    return Q0[tokens], K0[tokens]


def rows(block, Q, K, scale=0.125):
    """The block's rows on every (t, eps) cell of one head, as {column: value}."""
    data = MatrixData(Q, K, scale, None, eps_grid=EPS, temperatures=TEMPS)
    out = {}
    for t in TEMPS:
        for e in EPS:
            out.update({f"{c}@{t},{e}": v for c, v in run_block(block, Cell(data, t, e)).items()})
    return out


def relative_change(a: float, b: float) -> float:
    if a == b:  # equal infinities included
        return 0.0
    if not (np.isfinite(a) and np.isfinite(b)):
        return np.inf
    return abs(a - b) / max(abs(a), abs(b))


def perturbed(rng, X, rel):
    """X plus Gaussian noise of ``rel`` times X's largest entry (zero entries move too)."""
    return X + rel * np.abs(X).max() * rng.standard_normal(X.shape)


@pytest.mark.parametrize("L, distinct, d", [(80, 43, 64), (50, 61, 64), (12, 5, 8)])
def test_v2_covariates_are_stable_on_exactly_rank_deficient_heads(L, distinct, d):
    rng = np.random.default_rng(L * 1000 + distinct)
    distinct = min(distinct, L)
    Q, K = rank_deficient_head(rng, L=L, distinct=distinct, d=d)
    exact = distinct - 1
    assert np.linalg.matrix_rank(Q) == np.linalg.matrix_rank(K) == exact < d
    base2, base1 = rows(V2, Q, K), rows(V1, Q, K)
    assert base2 and all(np.isfinite(v) for v in base2.values())
    assert base2["native__q_rank@1.0,0.05"] == base2["native__k_rank@1.0,0.05"] == exact
    worst_v1 = 1.0  # the largest factor by which a version 1 condition number moved
    for _ in range(5):
        Qp, Kp = perturbed(rng, Q, 1e-12), perturbed(rng, K, 1e-12)
        assert np.linalg.matrix_rank(Qp, tol=0) > exact  # no longer exactly deficient
        new2 = rows(V2, Qp, Kp)
        assert new2.keys() == base2.keys()
        for c, v in base2.items():
            if V2.info(c.split("__")[1].split("@")[0]).integer:
                assert new2[c] == v, c
            else:
                assert relative_change(v, new2[c]) < 1e-6, (c, v, new2[c])
        new1 = rows(V1, Qp, Kp)
        for c in (c for c in base1 if c.startswith(("native__q_cond", "native__k_cond"))):
            a, b = base1[c], new1[c]
            worst_v1 = max(worst_v1, np.inf if a == np.inf else max(a / b, b / a))
    # The motivating contrast: version 1's condition numbers are rounding noise, moved by
    # orders of magnitude by the same perturbations (from the SVD's residue to the noise's).
    assert worst_v1 > 100.0


def test_v2_under_float32_rounding_of_the_arrays_moves_cond_within_weyls_bound():
    """Rounding Q and K to float32 (the arrays' precision; noise far above float64's, far
    below the rank tolerance) keeps the ranks, and moves cond by no more than Weyl's
    inequality allows: |d sigma_i| <= ||E||_2, so d cond / cond <= ~2 ||E||_2 / sigma_r."""
    rng = np.random.default_rng(7)
    Q, K = rank_deficient_head(rng, L=80, distinct=43, d=64)
    for X in (Q, K):
        X32 = X.astype(np.float32).astype(np.float64)
        g, g32 = spectrum(X), spectrum(X32)
        assert g32["rank"] == g["rank"] == 42
        E = np.linalg.norm(X32 - X, 2)
        sv = np.linalg.svd(X, compute_uv=False)
        assert relative_change(g["cond"], g32["cond"]) <= 3 * E / sv[g["rank"] - 1]
    assert logit_rank(Q, K, 0.125) == logit_rank(
        Q.astype(np.float32).astype(np.float64), K.astype(np.float32).astype(np.float64), 0.125
    )


def test_v2_reads_what_the_tolerance_says():
    """Rank and cond at the tolerance's two sides; ranks of the logits from subspaces."""
    d = 6
    sv = np.array([1.0, 0.5, 0.1, 1e-3, 0.0, 0.0])
    tol = max(8, d) * RANK_EPS
    U, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((8, d)))
    for small, rank in ((tol * 4, 5), (tol / 4, 4)):
        s = sv.copy()
        s[4] = small
        g = spectrum((U * s) @ np.eye(d))
        assert g["rank"] == rank
        assert g["cond"] == pytest.approx(1.0 / s[rank - 1], rel=1e-6)
        assert g["stable_rank"] == pytest.approx((s**2).sum(), rel=1e-12)
    zero = spectrum(np.zeros((4, 3)))
    assert zero["rank"] == 0 and np.isnan(zero["cond"]) and np.isnan(zero["stable_rank"])
    eye = np.eye(5)
    # Q in span(e1..e3), K in span(e3..e5): Q K^T has exact rank 1 (e3 only)
    assert logit_rank(eye[:3], eye[2:], 1.0) == 1
    assert logit_rank(eye[:3], eye[3:], 1.0) == 0
    assert logit_rank(eye[:3], eye[:3], 0.0) == 0


def test_v2_passes_the_block_kit_and_declares_its_columns():
    check_block(V2)
    cov1, cov2 = set(block_covariates(V1)), set(block_covariates(V2))
    # version 1's covariates, each with the same name, plus the three ranks
    assert cov2 - cov1 == {"q_rank", "k_rank", "qk_rank"} and cov1 <= cov2
    for f in ("q_rank", "k_rank", "qk_rank", "head_dim"):
        assert V2.info(f).integer and V2.info(f).log_scale
    for f in ("q_cond", "k_cond", "kappa", "q_norm_max"):
        assert V2.info(f).log_scale and not V2.info(f).integer
    assert V2.info("bias_spectral").kind == "diagnostic"
    assert set(V2.nonfinite) == set(V1.nonfinite)


def test_gauge_changes_v2s_native_geometry_but_not_the_logit_rank():
    rng = np.random.default_rng(3)
    Q, K = rank_deficient_head(rng, L=20, distinct=6, d=8)
    U, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    V, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    G = (U * np.logspace(0, 2, 8)) @ V.T  # generic, condition number 100
    a, b = rows(V2, Q, K), rows(V2, Q @ G, K @ np.linalg.inv(G).T)
    key = "@1.0,0.05"
    assert a["native__qk_rank" + key] == b["native__qk_rank" + key] == 5
    assert a["native__head_dim" + key] == b["native__head_dim" + key]
    for f in ("kappa", "q_spectral", "k_norm_max", "q_cond"):
        assert relative_change(a[f"native__{f}{key}"], b[f"native__{f}{key}"]) > 1e-3, f


def test_v1_is_untouched_and_still_what_the_locks_pin():
    lock = json.loads((ROOT / "preregistration/paper-lengths.toml.lock").read_text())
    assert block_version(V1) == lock["blocks"]["native"]["version"]
    assert list(block_covariates(V1)) == lock["blocks"]["native"]["covariates"]
    assert block_version(V2) != block_version(V1)
    assert V1.func.__module__ == "analysis.descriptors.native"
    assert builtin_registry().get("native") is BLOCK_VERSIONS["native"][1]
    assert build_registry().get("native") is V1


def test_prereg_mirror_matches_the_registry_versions():
    mirror = descriptor_versions.BLOCK_VERSIONS
    assert mirror == {name: tuple(sorted(v)) for name, v in BLOCK_VERSIONS.items()}
    for method, defaults in descriptor_versions.METHOD_DEFAULTS.items():
        assert all(v in mirror[b] for b, v in defaults.items()), method


def _toy(**top) -> dict:
    data = tomllib.loads((ROOT / "preregistration/paper-lengths.toml").read_text())
    data.update(top)
    # the held-out list was drawn per checkpoint: say so, or method 3's default
    # (per (checkpoint, layer)) would not match it
    data["held_out"] = {**data["held_out"], "stratify": ["checkpoint"]}
    return data


@pytest.mark.parametrize(
    "versions, name",
    [
        ({"native": 3}, "descriptors.versions.native"),
        ({"intrinsic": 4}, "descriptors.versions.intrinsic"),
        ({"native": True}, "descriptors.versions.native"),
        ({"sinks": 1}, "descriptors.versions"),
        ("2", "descriptors.versions"),
    ],
)
def test_the_design_key_is_validated_by_name(versions, name):
    data = _toy()
    data["descriptors"] = {**data["descriptors"], "versions": versions}
    with pytest.raises(ParameterError) as err:
        validate_design(data)
    assert err.value.name == name


def test_a_design_selects_the_version_and_its_lock_facts_follow(tmp_path):
    from analysis.study.core import block_facts, design_registry
    from analysis.study.plan import plan_study

    def design(data):
        validate_design(data)
        return Design(tmp_path / "d.toml", data, sha256="0" * 64)

    old = design(_toy())  # a locked design: no method, no versions
    facts = block_facts(old)
    assert facts["versions"]["native"] == block_version(V1)
    assert plan_study(old).versions == ()
    v2 = {**_toy()["descriptors"], "versions": {"native": 2}}
    for data in (_toy(method=3), _toy(descriptors=v2)):
        new = design(data)
        assert design_registry(new, root=None).get("native").func is V2.func
        facts = block_facts(new)
        assert facts["versions"]["native"] == block_version(V2)
        assert "q_rank" in facts["features"]["native"]
        assert facts["versions"]["baseline"] == block_version(builtin_registry().get("baseline"))
        assert plan_study(new).versions == (("native", 2),)
    back = {**_toy()["descriptors"], "versions": {"native": 1}}
    assert block_facts(design(_toy(method=3, descriptors=back)))["versions"]["native"] == (
        block_version(V1)
    )


def test_the_describe_stage_writes_the_selected_version(tmp_path):
    from analysis.sources.synthetic import full_ball
    from analysis.store import Store
    from analysis.study.describe import describe_frame

    with Store(tmp_path / "s", create=True) as store:
        key = store.add_synthetic(full_ball(8, 2, 4.0, random_state=0))
        arrays = store.arrays(key)
    one = describe_frame(arrays, (0.1,), (1.0,), ("native",))
    two = describe_frame(arrays, (0.1,), (1.0,), ("native",), (), (("native", 2),))
    assert "native__q_rank" in two and "native__q_rank" not in one
    shared = [c for c in one if c in two and not c.endswith("_cond")]
    np.testing.assert_allclose(two[shared].to_numpy(), one[shared].to_numpy(), rtol=1e-12)


def test_a_method_3_design_locks_version_2_and_opens(tmp_path, monkeypatch):
    from analysis.datasets import write_example_design
    from analysis.prereg import load_design, lock_design
    from analysis.study.core import Study, block_facts

    monkeypatch.chdir(tmp_path)
    path = write_example_design("studies/v3.toml")
    text = path.read_text(encoding="utf-8").replace(
        "seed = 7\n", 'seed = 7\nstratify = ["checkpoint"]\n', 1
    )
    path.write_text("method = 3\n" + text, encoding="utf-8")  # its list: per checkpoint
    lock_design(path, **block_facts(load_design(path)))
    record = json.loads(Path(f"{path}.lock").read_text(encoding="utf-8"))
    assert record["blocks"]["native"]["version"] == block_version(V2)
    assert "qk_rank" in record["blocks"]["native"]["covariates"]
    study = Study.open(path)  # the registry it builds matches the lock: version 2
    assert study.registry.get("native").func is V2.func
    assert study.plan.versions == (("native", 2),)
