"""Descriptor blocks: registry, baseline, native and intrinsic geometry, plugins.

Takes arrays (A, Q, K, scale, mask) and returns named features; never reads outcomes.
"""

from analysis.descriptors.describe import describe_arrays, describe_file, describe_matrix
from analysis.descriptors.registry import (
    Block,
    Cell,
    FeatureInfo,
    MatrixData,
    block_order,
    calibrated_blocks,
    covariate_kwargs,
    descriptor,
    diagnostic_columns,
    feature_info,
    feature_table,
    get_block,
    load_plugin,
    registered,
    unregister,
)
from analysis.descriptors.versions import block_covariates, block_version

__all__ = [
    "Block",
    "Cell",
    "FeatureInfo",
    "MatrixData",
    "block_covariates",
    "block_order",
    "block_version",
    "calibrated_blocks",
    "covariate_kwargs",
    "describe_arrays",
    "describe_file",
    "describe_matrix",
    "descriptor",
    "diagnostic_columns",
    "feature_info",
    "feature_table",
    "get_block",
    "load_plugin",
    "registered",
    "unregister",
]
