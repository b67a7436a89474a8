"""A toy design file, a locked study and power inputs: the fixtures of :mod:`analysis.prereg`
and :mod:`analysis.study`.

They are toys: eight heads of one made-up checkpoint ``org/tiny`` (2 layers x 4 heads), a
handful of bracket widths; nothing here is a result.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.power.error_rates import validate_comparison
from analysis.power.inputs import PowerAssumptions, StudySizes
from analysis.power.result import ValidationResult
from analysis.power.spec import PowerSpec
from analysis.prereg import load_design, lock_design
from analysis.study.core import Study, block_facts, engine_versions
from analysis.validation import ParameterError

__all__ = [
    "EXAMPLE_HELD_OUT",
    "example_sizes",
    "example_validation",
    "example_widths",
    "open_example_study",
    "write_example_design",
]

EXAMPLE_HELD_OUT: tuple[str, ...] = ("org/tiny:1:1", "org/tiny:1:2")
"""The held-out heads of the example design (two of the eight heads of ``org/tiny``)."""

_HEAD = """\
title = "toy"
effort = "fast"
hypotheses = [{id = "H1", kind = "confirmatory", pair = ["M0", "M1"], statement = "s"}]
outcome = {quantity = "r_eps", transform = "log2", observed_as = "interval"}
models = {M0 = ["baseline"], M1 = ["baseline", "native"]}
descriptors = {plugins = []}
metrics = {primary = "interval_sq_loss"}
inference = {bootstrap_replicates = 199, seed = 1, alpha = 0.05, family = [["M0", "M1"]]}
exclusions = {rules = ["none"]}
exploratory = {analyses = []}
[sampling]
checkpoints_preexist = true
"""

_CHECKPOINT = '{{kind = "checkpoint", checkpoint = "{}", layers = 2, heads = 4}}'
_SYNTHETIC = (
    '{kind = "synthetic", family = "ball", n = 8, d = 2, beta = [1.0, 4.0], exploratory = true}'
)


def _floats(name: str, values: Sequence[float]) -> str:
    values = tuple(values)
    if not values or not all(isinstance(v, (int, float)) for v in values):
        raise ParameterError(name, "a non-empty sequence of numbers", values)
    return "[" + ", ".join(repr(float(v)) for v in values) + "]"


def write_example_design(
    path: str | Path,
    *,
    temperatures: Sequence[float] = (1.0,),
    eps: Sequence[float] = (0.1,),
    held_out: Sequence[str] | None = EXAMPLE_HELD_OUT,
    synthetic: bool = False,
    checkpoints: Sequence[str] = ("org/tiny",),
) -> Path:
    """Write the toy design file used by the examples, and return its path.

    The design has one confirmatory hypothesis (``M0 = [baseline]`` against
    ``M1 = [baseline, native]``), one sequence length (16), one corpus input per length
    and one checkpoint, ``org/tiny``, with 2 layers x 4 heads (8 heads), so it plans
    ``8 * len(temperatures) * len(eps)`` real cells.

    Parameters
    ----------
    path : str or Path
        Where to write the TOML file; missing parent folders are made.
    temperatures, eps : sequence of float, default (1.0,) and (0.1,)
        The sampling grid.
    held_out : sequence of str or None, default EXAMPLE_HELD_OUT
        The drawn held-out heads; None writes only the draw's seed (7) and fraction
        (0.25), as a design looks before :func:`analysis.prereg.write_held_out`.
    synthetic : bool, default False
        Also list an exploratory synthetic source (family ``ball``, n = 8, d = 2,
        beta = 1 and 4).
    checkpoints : sequence of str, default ("org/tiny",)
        The checkpoint sources, each with 2 layers x 4 heads (made-up names; nothing is
        downloaded when the design is written).

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ParameterError
        When ``temperatures`` or ``eps`` is empty or not numbers, or ``checkpoints`` is
        empty or not strings.

    Examples
    --------
    >>> from analysis.prereg import load_design
    >>> from analysis.datasets import write_example_design
    >>> path = write_example_design("toy/design.toml", temperatures=(0.5, 1.0))
    >>> design = load_design(path)
    >>> design.models, design.held_out
    ({'M0': ('baseline',), 'M1': ('baseline', 'native')}, ('org/tiny:1:1', 'org/tiny:1:2'))
    >>> write_example_design("toy/bad.toml", eps=())
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: eps: expected a non-empty sequence of numbers, got ()
    >>> two = write_example_design("toy/two.toml", checkpoints=("org/a", "org/b"),
    ...                            held_out=("org/a:1:1", "org/b:0:1"))
    >>> [s["checkpoint"] for s in load_design(two).data["sampling"]["sources"]]
    ['org/a', 'org/b']
    """
    lines = [
        _HEAD,
        f"temperatures = {_floats('temperatures', temperatures)}\n",
        f"eps = {_floats('eps', eps)}\n",
        "lengths = [16]\n",
        'inputs = {source = "corpus", seed = 0, per_length = 1}\n',
    ]
    checkpoints = tuple(checkpoints)
    if not checkpoints or not all(isinstance(c, str) for c in checkpoints):
        raise ParameterError("checkpoints", "a non-empty sequence of names", checkpoints)
    sources = [_CHECKPOINT.format(c) for c in checkpoints]
    if synthetic:
        sources.append(_SYNTHETIC)
    lines.append("sources = [\n" + "".join(f"  {s},\n" for s in sources) + "]\n")
    lines.append("[held_out]\n")
    if held_out is not None:
        lines.append("heads = [" + ", ".join(f'"{h}"' for h in held_out) + "]\n")
    lines.append("seed = 7\nfraction = 0.25\n")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines), encoding="utf-8")
    return path


def open_example_study(path: str | Path, *, synthetic: bool = False) -> Study:
    """Write the example design, lock it with the code's block facts and open it.

    The design is :func:`write_example_design` with
    temperatures 0.5 and 1.0 and eps 0.1 and 0.2: 8 heads of ``org/tiny`` x 2 x 2 = 32
    planned real cells, two of the heads held out.

    Parameters
    ----------
    path : str or Path
        The design file to write (its study root is the current folder when it lies in
        ``studies/``).
    synthetic : bool, default False
        Also plan the exploratory synthetic source (two ``ball`` matrices).

    Returns
    -------
    Study
        Locked with the code's block versions and opened; nothing is stored yet.

    Examples
    --------
    >>> from analysis.datasets import open_example_study
    >>> study = open_example_study("studies/toy.toml", synthetic=True)
    >>> study.plan.planned_real_cells, len(study.plan.synthetic), study.lock.held_out
    (32, 2, ('org/tiny:1:1', 'org/tiny:1:2'))
    """
    path = write_example_design(path, temperatures=(0.5, 1.0), eps=(0.1, 0.2), synthetic=synthetic)
    lock_design(path, engines=engine_versions(), **block_facts(load_design(path)))
    return Study.open(path)


def example_sizes() -> StudySizes:
    """The sizes of a small simulated study, for the power examples.

    16 heads (6 of them held out), one length, 2 temperatures x 1 eps (2 cells a head),
    99 bootstrap replicates and one confirmatory pair, ``M0 = [baseline]`` against
    ``M1 = [baseline, native]``.

    Returns
    -------
    StudySizes
        What :func:`analysis.power.inputs.sizes_from_design` would read from a
        design of that size.

    Examples
    --------
    >>> from analysis.datasets import example_sizes
    >>> sizes = example_sizes()
    >>> sizes.n_heads, sizes.n_held_out, len(sizes.temperatures) * len(sizes.eps)
    (16, 6, 2)
    """
    return StudySizes(
        n_heads=16,
        n_held_out=6,
        lengths=(64,),
        temperatures=(1.0, 2.0),
        eps=(0.1,),
        n_boot=99,
        models=(("M0", ("baseline",)), ("M1", ("baseline", "native"))),
        family=(("M0", "M1"),),
    )


def example_widths() -> pd.DataFrame:
    """Five made-up integer brackets at eps = 0.1, with their log2 widths.

    The columns are those :func:`analysis.power.widths.load_widths` reads
    (``eps``, ``lower``, ``upper``) plus ``width = log2(upper / lower)``, as it adds.

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> from analysis.datasets import example_widths
    >>> print(example_widths().to_string(index=False))
     eps  lower  upper  width
     0.1      2      4    1.0
     0.1      4      8    1.0
     0.1      8      8    0.0
     0.1      8     16    1.0
     0.1     16     32    1.0
    """
    widths = pd.DataFrame({"eps": 0.1, "lower": [2, 4, 8, 8, 16], "upper": [4, 8, 8, 16, 32]})
    widths["width"] = np.log2(widths["upper"] / widths["lower"])
    return widths


def example_validation() -> ValidationResult:
    """A power validation of the example study: two simulated studies per share.

    :func:`analysis.power.error_rates.validate_comparison` of :func:`example_widths`
    with :func:`example_sizes`, an assumed effect of 0.9, no MDE bisection and no
    calibration (far too few studies for real use; it shows the result's form).

    Returns
    -------
    ValidationResult
        One hypothesis, ``M0<M1`` (its signal block is ``native``).

    Examples
    --------
    >>> from analysis.datasets import example_validation
    >>> result = example_validation()
    >>> result.simulations, [h.hypothesis for h in result.hypotheses]
    (2, ['M0<M1'])
    """
    spec = PowerSpec(
        simulations=2,
        sizes=example_sizes(),
        assumptions=PowerAssumptions(effect=0.9),
        mde_steps=0,
        calibration_iterations=0,
        random_state=0,
    )
    return validate_comparison(example_widths(), spec)
