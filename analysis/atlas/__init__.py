"""The certified-bracket atlas: a study's brackets and features, one row per cell.

:func:`build_atlas` gathers, from a study's stored outputs, one row per cell
(checkpoint, layer, head, input, length, temperature, eps): the certified bracket, the
construction behind each end, the engine, the hashes of the matrix it certifies, the
held-out flag, the design and lock, and the descriptor features. :func:`write_atlas`
stores it as Parquet with its schema version and provenance; :func:`load_atlas` reads it
back as a tidy frame. :func:`reverify_rows` re-derives any row from the sources (the
checkpoint's weights, the input seed) with the row's deterministic engine and checks the
matrix hash, the bracket and the witnesses, so the atlas can be trusted without shipping
its witnesses. :func:`lowest_rank_layers` and :func:`layer_depth_heatmap` answer one
worked query (docs/guide/atlas.md).

Modules: :mod:`~analysis.atlas.schema` (the columns), :mod:`~analysis.atlas.build`,
:mod:`~analysis.atlas.io`, :mod:`~analysis.atlas.verify`, :mod:`~analysis.atlas.query`.
"""

from analysis.atlas.build import build_atlas, matrix_sha256
from analysis.atlas.io import atlas_provenance, load_atlas, write_atlas
from analysis.atlas.query import depth_grid, layer_depth_heatmap, lowest_rank_layers
from analysis.atlas.schema import COLUMNS, SCHEMA_VERSION, schema_table
from analysis.atlas.verify import failure_lines, reverify_rows

__all__ = [
    "COLUMNS",
    "SCHEMA_VERSION",
    "atlas_provenance",
    "build_atlas",
    "depth_grid",
    "failure_lines",
    "layer_depth_heatmap",
    "load_atlas",
    "lowest_rank_layers",
    "matrix_sha256",
    "reverify_rows",
    "schema_table",
    "write_atlas",
]
