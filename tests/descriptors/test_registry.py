"""The registry is an object built explicitly: built-in blocks, then plugins in order."""

from __future__ import annotations

import sys
import textwrap
import uuid

import pytest

from analysis.descriptors import (
    BUILTIN_BLOCKS,
    Registry,
    build_registry,
    builtin_registry,
    descriptor,
    plugin_blocks,
)
from analysis.validation import ParameterError

BUILT_IN = ("baseline", "baseline_plus", "native", "intrinsic")


def test_built_in_facts():
    reg = builtin_registry()
    assert reg.block_order() == BUILT_IN
    assert tuple(b.name for b in BUILTIN_BLOCKS) == BUILT_IN
    assert reg.calibrated_blocks() == ("baseline", "baseline_plus")
    cols = [
        "cell_key",
        "baseline__eps",
        "baseline_plus__svd_proj_error",
        "intrinsic__Pi",
        "intrinsic__q_r3",
        "intrinsic__kappa_r12",
        "intrinsic__rank_C",
    ]
    assert reg.diagnostic_columns(cols) == (
        "baseline_plus__svd_proj_error",
        "intrinsic__q_r3",
        "intrinsic__kappa_r12",
        "intrinsic__rank_C",
    )
    kw = reg.covariate_kwargs(cols)
    assert kw == {
        "block_order": BUILT_IN,
        "calibrate_blocks": ("baseline", "baseline_plus"),
        "diagnostic_columns": reg.diagnostic_columns(cols),
    }
    with pytest.raises(ParameterError, match="nope"):
        reg.diagnostic_columns(["nope__x"])  # a block nobody registered


def _plugin(tmp_path, monkeypatch, body: str) -> str:
    module = f"plugmod_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)
    return module


def _one_block_plugin(tmp_path, monkeypatch, name: str, *, listed: bool = True) -> str:
    """A plugin module with one block ``name``; ``listed=False`` leaves out ``BLOCKS``."""
    blocks = "BLOCKS = [block]" if listed else ""
    return _plugin(
        tmp_path,
        monkeypatch,
        f"""
        from analysis.descriptors import descriptor

        @descriptor("{name}")
        def block(cell):
            return {{"x": 1.0}}

        {blocks}
        """,
    )


def test_plugins_follow_the_built_in_blocks_in_their_declared_order(tmp_path, monkeypatch):
    tag = uuid.uuid4().hex[:8]
    first, second = f"plug_a_{tag}", f"plug_z_{tag}"
    # defined in one order, declared in the other (not by name either): BLOCKS decides
    module = _plugin(
        tmp_path,
        monkeypatch,
        f"""
        from analysis.descriptors import descriptor

        @descriptor("{first}", diagnostics=("mass_r*",))
        def first(cell):
            return {{"mass": float(cell.A.max())}}

        @descriptor("{second}", calibrated=True)
        def second(cell):
            return {{"mass": float(cell.A.min())}}

        BLOCKS = [second, first]
        """,
    )
    reg = build_registry([module])
    assert reg.block_order() == (*BUILT_IN, second, first)
    assert reg.calibrated_blocks() == ("baseline", "baseline_plus", second)
    assert reg.diagnostic_columns([f"{first}__mass", f"{first}__mass_r2"]) == (f"{first}__mass_r2",)
    assert [b.name for b in plugin_blocks(module)] == [second, first]
    # importing the module and building a registry changed no other registry
    assert builtin_registry().block_order() == BUILT_IN
    assert first not in builtin_registry() and first not in build_registry()


def test_plugin_modules_keep_the_design_order(tmp_path, monkeypatch):
    a, b = (f"plug_{uuid.uuid4().hex[:8]}" for _ in range(2))
    mods = [_one_block_plugin(tmp_path, monkeypatch, name) for name in (a, b)]
    assert build_registry(mods).block_order()[4:] == (a, b)
    assert build_registry(mods[::-1]).block_order()[4:] == (b, a)


def test_a_module_without_blocks_list_or_with_a_taken_name_is_named(tmp_path, monkeypatch):
    unlisted = _one_block_plugin(tmp_path, monkeypatch, "unlisted_block", listed=False)
    with pytest.raises(ParameterError, match="BLOCKS") as info:
        build_registry([unlisted])
    assert info.value.name == "module"
    clash = _one_block_plugin(tmp_path, monkeypatch, "native")  # a built-in block's name
    with pytest.raises(ParameterError, match="native") as info:
        build_registry([clash])
    assert info.value.name == "module"
    with pytest.raises(ParameterError) as info:
        build_registry(["no_such_module_xyz"])
    assert info.value.name == "module"
    with pytest.raises(ParameterError) as info:
        build_registry("no_such_module_xyz")  # a string, not a list of modules
    assert info.value.name == "plugins"


def test_a_registry_is_read_only_and_refuses_duplicates():
    reg = builtin_registry()
    with pytest.raises(TypeError):
        reg.blocks["mine"] = reg.get("native")  # type: ignore[index]
    with pytest.raises(ParameterError, match="distinct") as info:
        Registry([*BUILTIN_BLOCKS, BUILTIN_BLOCKS[0]])
    assert info.value.name == "blocks"
    with pytest.raises(ParameterError) as info:
        Registry(["baseline"])  # a name, not a block
    assert info.value.name == "blocks"


def test_the_decorator_registers_nothing():
    name = f"plug_{uuid.uuid4().hex[:8]}"

    @descriptor(name, log_scale=("m",))
    def block(cell):
        return {"m": 1.0}

    assert block.descriptor_block.name == name
    assert block.descriptor_block.func is block
    assert name not in builtin_registry() and name not in build_registry()
    assert Registry([block]).get(name).info("m").log_scale


def test_calibrated_must_be_a_bool():
    with pytest.raises(ParameterError) as info:
        descriptor("never_registered", calibrated="yes")
    assert info.value.name == "calibrated"
