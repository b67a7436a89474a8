"""What the registry tells the comparison: block order, calibrated blocks, diagnostics."""

from __future__ import annotations

import textwrap
import uuid

import pytest

from analysis.descriptors import (
    block_order,
    calibrated_blocks,
    covariate_kwargs,
    descriptor,
    diagnostic_columns,
    load_plugin,
    registered,
    unregister,
)
from analysis.validation import ParameterError

BUILT_IN = ("baseline", "baseline_plus", "native", "intrinsic")


def test_built_in_facts():
    assert block_order()[:4] == BUILT_IN
    assert calibrated_blocks() == ("baseline", "baseline_plus")
    cols = [
        "cell_key",
        "baseline__eps",
        "baseline_plus__svd_proj_error",
        "intrinsic__Pi",
        "intrinsic__q_r3",
        "intrinsic__kappa_r12",
        "intrinsic__rank_C",
    ]
    assert diagnostic_columns(cols) == (
        "baseline_plus__svd_proj_error",
        "intrinsic__q_r3",
        "intrinsic__kappa_r12",
        "intrinsic__rank_C",
    )
    kw = covariate_kwargs(cols)
    assert kw == {
        "block_order": block_order(),
        "calibrate_blocks": ("baseline", "baseline_plus"),
        "diagnostic_columns": diagnostic_columns(cols),
    }
    with pytest.raises(ParameterError, match="nope"):
        diagnostic_columns(["nope__x"])  # a block nobody registered


def test_plugins_follow_the_built_in_blocks_in_registration_order(tmp_path, monkeypatch):
    first, second = (f"plug_{uuid.uuid4().hex[:8]}" for _ in range(2))
    module = f"plugmod_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(
        textwrap.dedent(f"""
        from analysis.descriptors import descriptor

        @descriptor("{first}", diagnostics=("mass_r*",))
        def first(cell):
            return {{"mass": float(cell.A.max())}}

        @descriptor("{second}", calibrated=True)
        def second(cell):
            return {{"mass": float(cell.A.min())}}
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        load_plugin(module)
        order = block_order()
        assert order[:4] == BUILT_IN
        assert order.index(first) < order.index(second)
        assert calibrated_blocks() == ("baseline", "baseline_plus", second)
        assert diagnostic_columns([f"{first}__mass", f"{first}__mass_r2"]) == (f"{first}__mass_r2",)
    finally:
        unregister(first)
        unregister(second)
    assert first not in registered() and first not in block_order()


def test_calibrated_must_be_a_bool():
    with pytest.raises(ParameterError) as info:
        descriptor("never_registered", calibrated="yes")
    assert info.value.name == "calibrated"
    assert "never_registered" not in registered()
