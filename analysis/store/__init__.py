"""The cell store: matrix records with their arrays, bracket profiles, and cells.

See :mod:`analysis.store.store` for the layout and the atomicity argument, and
:mod:`analysis.store.run` for the resumable bracket profiles (:func:`run_brackets`,
``attnrank store bracket``), :mod:`analysis.store.engine` for what it needs of the bracket
engine it is given (:class:`BracketEngine`).
"""

from analysis.store.engine import BracketEngine, StoredProfile
from analysis.store.keys import MATRIX_FIELDS, cell_key, matrix_key
from analysis.store.run import BracketsSummary, RunSpec, run_brackets
from analysis.store.store import MatrixArrays, MatrixRecord, ProfileRecord, Store

__all__ = [
    "MATRIX_FIELDS",
    "BracketEngine",
    "BracketsSummary",
    "MatrixArrays",
    "MatrixRecord",
    "ProfileRecord",
    "RunSpec",
    "Store",
    "StoredProfile",
    "cell_key",
    "matrix_key",
    "run_brackets",
]
