"""Descriptor blocks: registry, baseline, native and intrinsic geometry, plugins.

Takes arrays (A, Q, K, scale, mask) and returns named features; never reads outcomes.
A :class:`Registry` holds the blocks a study uses, built explicitly: the built-in blocks
(:func:`builtin_registry`), then the design's plugin modules in order
(:func:`build_registry`), each declaring its blocks in a module-level ``BLOCKS`` list.
"""

from analysis.descriptors.builtin import BUILTIN_BLOCKS, build_registry, builtin_registry
from analysis.descriptors.check import check_block
from analysis.descriptors.describe import describe_arrays, describe_file, describe_matrix
from analysis.descriptors.registry import (
    Block,
    Cell,
    FeatureInfo,
    MatrixData,
    Registry,
    descriptor,
    plugin_blocks,
)
from analysis.descriptors.versions import block_covariates, block_version

__all__ = [
    "BUILTIN_BLOCKS",
    "Block",
    "Cell",
    "FeatureInfo",
    "MatrixData",
    "Registry",
    "block_covariates",
    "block_version",
    "build_registry",
    "builtin_registry",
    "check_block",
    "describe_arrays",
    "describe_file",
    "describe_matrix",
    "descriptor",
    "plugin_blocks",
]
