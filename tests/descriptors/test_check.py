"""The block kit: every built-in block passes it; each kind of bad plugin fails the right check."""

from __future__ import annotations

import re
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from analysis.descriptors import BUILTIN_BLOCKS, check_block, plugin_blocks
from analysis.validation import ParameterError

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("block", BUILTIN_BLOCKS, ids=[b.name for b in BUILTIN_BLOCKS])
def test_every_built_in_block_passes_the_kit(block):
    assert check_block(block) is None


def _plugin_block(tmp_path, monkeypatch, body: str):
    """The one block of a plugin module written from ``body`` (importable, so picklable)."""
    module = f"kitplug_{uuid.uuid4().hex[:8]}"
    header = (
        "import itertools\n\nimport numpy as np\n\nfrom analysis.descriptors import descriptor\n"
    )
    (tmp_path / f"{module}.py").write_text(header + textwrap.dedent(body), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)
    (block,) = plugin_blocks(module)
    return block


BAD = {
    "runs": (
        """
        @descriptor("fails")
        def fails(cell):
            return {"x": 1.0 / (cell.temperature - 2.0)}  # ZeroDivisionError at t = 2

        BLOCKS = [fails]
        """,
        "matrix probe (t=2.0, eps=0.05): ZeroDivisionError",
    ),
    "names": (
        """
        @descriptor("dunder")
        def dunder(cell):
            return {"row__max": float(cell.A.max())}

        BLOCKS = [dunder]
        """,
        "features ['row__max']",
    ),
    "same_names": (
        """
        @descriptor("per_cell")
        def per_cell(cell):
            return {f"x_{int(cell.temperature)}": 1.0}  # x_1 at t = 1, x_2 at t = 2

        BLOCKS = [per_cell]
        """,
        "covariates ['x_2'] (probe cell: ['x_1'])",
    ),
    "finite": (
        """
        @descriptor("infinite")
        def infinite(cell):
            return {"x": np.inf if cell.mask is not None else 0.0}

        BLOCKS = [infinite]
        """,
        "matrix causal (t=1.0, eps=0.05): x=inf",
    ),
    "deterministic": (
        """
        COUNT = itertools.count()

        @descriptor("drifting")
        def drifting(cell):
            return {"x": float(next(COUNT))}

        BLOCKS = [drifting]
        """,
        "matrix probe (t=1.0, eps=0.05): x: 0.0 then ",
    ),
    "picklable": (
        """
        def make():
            @descriptor("local")
            def local(cell):
                return {"x": 1.0}
            return local

        BLOCKS = [make()]
        """,
        "Can't pickle local object",
    ),
}


@pytest.mark.parametrize("check", list(BAD))
def test_a_bad_plugin_fails_the_check_it_breaks(check, tmp_path, monkeypatch):
    body, where = BAD[check]
    block = _plugin_block(tmp_path, monkeypatch, body)
    with pytest.raises(ParameterError) as err:
        check_block(block)
    message = str(err.value)
    assert err.value.name == "blocks"
    assert message.startswith(f"blocks: expected block {block.name!r} to pass check {check!r}")
    assert where in message, message


def test_diagnostics_may_vary_across_matrices_but_not_across_one_matrix_cells(
    tmp_path, monkeypatch
):
    by_matrix = _plugin_block(
        tmp_path,
        monkeypatch,
        """
        @descriptor("by_matrix", diagnostics=("extra",))
        def by_matrix(cell):
            return {"x": 1.0, **({"extra": 1.0} if cell.bias is not None else {})}

        BLOCKS = [by_matrix]
        """,
    )
    check_block(by_matrix)  # as native's bias_* columns: only where a head has a bias
    by_eps = _plugin_block(
        tmp_path,
        monkeypatch,
        """
        @descriptor("by_eps", diagnostics=("extra",))
        def by_eps(cell):
            return {"x": 1.0, **({"extra": 1.0} if cell.eps > 0.1 else {})}

        BLOCKS = [by_eps]
        """,
    )
    with pytest.raises(ParameterError, match=re.escape("check 'same_names'")):
        check_block(by_eps)


def test_declared_nonfinite_features_may_be_nan_or_inf(tmp_path, monkeypatch):
    body = """
        @descriptor("keys", needs=("K",){declared})
        def keys(cell):
            return {{"cond": np.linalg.cond(cell.K), "share": np.nan}}

        BLOCKS = [keys]
        """
    check_block(
        _plugin_block(tmp_path, monkeypatch, body.format(declared=", nonfinite=('cond', 'sh*')"))
    )
    undeclared = _plugin_block(tmp_path, monkeypatch, body.format(declared=", nonfinite=('cond',)"))
    with pytest.raises(
        ParameterError, match=r"check 'finite'.*matrix probe \(t=1.0, eps=0.05\): share=nan"
    ):
        check_block(undeclared)


def test_the_recipe_in_the_docs_passes_the_kit(tmp_path, monkeypatch):
    text = (ROOT / "docs" / "descriptors.md").read_text(encoding="utf-8")
    recipe = re.search(r"```python\n(# my_descriptors\.py.*?)```", text, re.DOTALL)
    assert recipe is not None, "docs/descriptors.md: the plugin recipe block"
    (tmp_path / "my_descriptors.py").write_text(recipe[1], encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_descriptors", raising=False)
    kit = re.search(
        r"```python\n(from analysis.descriptors import build_registry, check_block.*?)```",
        text,
        re.DOTALL,
    )
    assert kit is not None and "check_block(" in kit[1], "docs/descriptors.md: the kit block"
    exec(compile(kit[1], "docs/descriptors.md", "exec"), {})
