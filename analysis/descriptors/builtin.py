"""The built-in descriptor blocks, in their fixed order, and registries built from them.

``baseline``, ``baseline_plus`` (:mod:`analysis.descriptors.baseline`), ``native``
(:mod:`analysis.descriptors.native`) and ``intrinsic``
(:mod:`analysis.descriptors.intrinsic`), in this order: the comparison screens collinear
columns in a registry's order, built-in blocks first. A study's registry adds the plugin
modules of its design after them, in the design's order (:func:`build_registry`).

A built-in block may have several numbered versions (:data:`BLOCK_VERSIONS`): ``native``
has version 1 and version 2 (:mod:`analysis.descriptors.native2`, over the numerical
ranks of Q and K), ``intrinsic`` version 1, version 2
(:mod:`analysis.descriptors.intrinsic2`, the same features from a faster kappa solve) and
version 3 (:mod:`analysis.descriptors.intrinsic3`, version 2's solver with the ranks
solved best first instead of screened). A registry holds one version of each, under the
block's name, version 1 unless asked otherwise (``build_registry(versions={"native":
2})``; a design's ``[descriptors] versions``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from analysis.descriptors.baseline import baseline, baseline_plus
from analysis.descriptors.intrinsic import PER_R, intrinsic
from analysis.descriptors.intrinsic2 import intrinsic_v2
from analysis.descriptors.intrinsic3 import intrinsic_v3
from analysis.descriptors.native import native
from analysis.descriptors.native2 import native_v2
from analysis.descriptors.registry import Block, Registry, as_block
from analysis.validation import ParameterError

__all__ = ["BLOCK_VERSIONS", "BUILTIN_BLOCKS", "build_registry", "builtin_registry"]

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


# The versions after 1, per block.
_LATER_VERSIONS = {
    "native": {2: as_block(native_v2)},
    # Version 2 of intrinsic writes version 1's columns, so the same ones may be NaN.
    "intrinsic": {
        2: dataclasses.replace(as_block(intrinsic_v2), nonfinite=_NONFINITE["intrinsic"]),
        3: dataclasses.replace(as_block(intrinsic_v3), nonfinite=_NONFINITE["intrinsic"]),
    },
}

#: Every version of each built-in block: name -> {version: Block}, version 1 the one of
#: :data:`BUILTIN_BLOCKS`. Every version of a block has the block's name (its columns are
#: ``native__...`` whichever version wrote them) and its own
#: :func:`~analysis.descriptors.block_version`, which the lock pins. Mirrored, as numbers
#: only, by ``analysis.prereg.descriptor_versions.BLOCK_VERSIONS`` (which validates a
#: design without importing the blocks).
BLOCK_VERSIONS: Mapping[str, Mapping[int, Block]] = MappingProxyType(
    {b.name: MappingProxyType({1: b, **_LATER_VERSIONS.get(b.name, {})}) for b in BUILTIN_BLOCKS}
)


def _chosen_versions(versions: Mapping[str, int] | None) -> tuple[tuple[str, int], ...]:
    """``versions`` checked, as sorted (block, version) pairs other than version 1."""
    if versions is None:
        return ()
    if not isinstance(versions, Mapping):
        raise ParameterError("versions", "a mapping of built-in block names to versions", versions)
    chosen = []
    for name, version in versions.items():
        if name not in BLOCK_VERSIONS:
            raise ParameterError(
                "versions", "built-in block names: " + ", ".join(BLOCK_VERSIONS), name
            )
        known = BLOCK_VERSIONS[name]
        if isinstance(version, bool) or version not in known:
            allowed = " or ".join(map(str, known))
            raise ParameterError("versions", f"a version of {name}: {allowed}", version)
        if version != 1:
            chosen.append((name, int(version)))
    return tuple(sorted(chosen))


@functools.cache
def _versioned_registry(chosen: tuple[tuple[str, int], ...]) -> Registry:
    pick = dict(chosen)
    return Registry(BLOCK_VERSIONS[b.name][pick.get(b.name, 1)] for b in BUILTIN_BLOCKS)


def build_registry(
    plugins: Sequence[str] = (), versions: Mapping[str, int] | None = None
) -> Registry:
    """The built-in blocks, then each plugin module's ``BLOCKS``, in the order given.

    Parameters
    ----------
    plugins : sequence of str
        Importable module paths (a design's ``[descriptors] plugins``), each with a
        module-level ``BLOCKS`` list of its :func:`~analysis.descriptors.descriptor`
        blocks. The caller makes them importable (a study puts its root on ``sys.path``).
    versions : mapping of str to int, optional
        Built-in block name -> the version of it the registry holds (:data:`BLOCK_VERSIONS`;
        a design's ``[descriptors] versions`` as resolved by
        ``analysis.prereg.descriptor_versions.design_block_versions``). Blocks not named,
        and every block when None, are at version 1.

    Returns
    -------
    Registry

    Raises
    ------
    ParameterError
        Naming ``module`` when a plugin cannot be imported, has no ``BLOCKS`` list, or
        declares a block name already taken; naming ``versions`` for a name that is
        not a built-in block or a version it does not have.

    Examples
    --------
    >>> build_registry().block_order() == builtin_registry().block_order()
    True
    >>> registry = build_registry(versions={"native": 2})
    >>> registry.block_order() == builtin_registry().block_order()  # same names, same order
    True
    >>> registry.get("native").func.__name__, builtin_registry().get("native").func.__name__
    ('native_v2', 'native')
    >>> build_registry(versions={"native": 3})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: versions: expected a version of native: 1 or 2, got 3
    """
    chosen = _chosen_versions(versions)
    base = _versioned_registry(chosen) if chosen else builtin_registry()
    return base.with_plugins(plugins)
