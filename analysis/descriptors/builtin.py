"""The built-in descriptor blocks, in their fixed order, and registries built from them.

``baseline``, ``baseline_plus`` (:mod:`analysis.descriptors.baseline`), ``native``
(:mod:`analysis.descriptors.native`) and ``intrinsic``
(:mod:`analysis.descriptors.intrinsic`), in this order: the comparison screens collinear
columns in a registry's order, built-in blocks first. A study's registry adds the plugin
modules of its design after them, in the design's order (:func:`build_registry`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

from analysis.descriptors.baseline import baseline, baseline_plus
from analysis.descriptors.intrinsic import PER_R, intrinsic
from analysis.descriptors.native import native
from analysis.descriptors.registry import Block, Registry, as_block

__all__ = ["BUILTIN_BLOCKS", "build_registry", "builtin_registry"]

#: The built-in blocks' features that may be NaN or infinite (``nonfinite``), declared
#: here rather than in their ``@descriptor`` calls because the block modules' text is in
#: the block versions that locked designs pin: ``entropy_norm_mean`` (no row with two
#: allowed keys), native stable ranks (a zero Q or K) and condition numbers (inf for a
#: singular one) and the bias share (no within-row variation), intrinsic's per-r columns.
_NONFINITE = {
    "baseline": ("entropy_norm_mean",),
    "native": ("q_stable_rank", "k_stable_rank", "q_cond", "k_cond", "bias_logit_share"),
    "intrinsic": tuple(f"{name}_r*" for name in PER_R),
}

#: The built-in blocks, in the comparison's order.
BUILTIN_BLOCKS: tuple[Block, ...] = tuple(
    dataclasses.replace(b, nonfinite=_NONFINITE.get(b.name, ()))
    for b in map(as_block, (baseline, baseline_plus, native, intrinsic))
)


@functools.cache
def builtin_registry() -> Registry:
    """The registry of the built-in blocks only (immutable, so built once and shared).

    Examples
    --------
    >>> list(builtin_registry())
    ['baseline', 'baseline_plus', 'native', 'intrinsic']
    """
    return Registry(BUILTIN_BLOCKS)


def build_registry(plugins: Sequence[str] = ()) -> Registry:
    """The built-in blocks, then each plugin module's ``BLOCKS``, in the order given.

    Parameters
    ----------
    plugins : sequence of str
        Importable module paths (a design's ``[descriptors] plugins``), each with a
        module-level ``BLOCKS`` list of its :func:`~analysis.descriptors.descriptor`
        blocks. The caller makes them importable (a study puts its root on ``sys.path``).

    Returns
    -------
    Registry

    Raises
    ------
    ParameterError
        Naming ``module`` when a plugin cannot be imported, has no ``BLOCKS`` list, or
        declares a block name already taken.

    Examples
    --------
    >>> build_registry().block_order() == builtin_registry().block_order()
    True
    """
    return builtin_registry().with_plugins(plugins)
