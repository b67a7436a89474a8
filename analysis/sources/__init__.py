"""Sources of attention matrices: transformer checkpoints, inputs for them, synthetic families.

:func:`extract` is the front door: a checkpoint (a name, an alias such as ``"minilm"`` or a
packaged family such as ``"smollm2"``, a local folder, or an in-memory model) and one input
in, an :class:`Extraction` (per-head ``A``, ``Q``, ``K``, scale, mask and bias) out.
:func:`load_checkpoint` and the input builders (:func:`text_input`, :func:`corpus_text`,
:func:`image_input`, :func:`corpus_image`) are its parts; :func:`save_extraction` and
:func:`load_extraction` write and read the ``.npz`` layout. :mod:`analysis.sources.synthetic`
builds families with known geometry or known rank, and :mod:`analysis.sources.packaged`
lists the checkpoints whose weights ship inside pip packages (:data:`PACKAGED`).

Examples
--------
>>> from analysis.sources import spherical
>>> m = spherical(8, 3, 2.0, random_state=0)
>>> m.A.shape, bool(abs(m.A.sum(axis=1) - 1).max() < 1e-12)
((8, 8), True)
"""

from analysis.sources.checkpoints import extract_from_model, load_checkpoint, resolve_checkpoint
from analysis.sources.extract import extract
from analysis.sources.files import Extraction, load_extraction, save_extraction
from analysis.sources.inputs import (
    corpus_image,
    corpus_text,
    image_input,
    image_lengths,
    read_image,
    read_text,
    text_input,
)
from analysis.sources.models import Checkpoint, ModelInput
from analysis.sources.packaged import PACKAGED, PackagedCheckpoint, packaged_checkpoint
from analysis.sources.synthetic import (
    SyntheticMatrix,
    diagonal_plus_constant,
    full_ball,
    identity,
    mixed_blocks,
    permuted_blocks,
    spherical,
    uniform_rows,
)

__all__ = [
    "PACKAGED",
    "Checkpoint",
    "Extraction",
    "ModelInput",
    "PackagedCheckpoint",
    "SyntheticMatrix",
    "corpus_image",
    "corpus_text",
    "diagonal_plus_constant",
    "extract",
    "extract_from_model",
    "full_ball",
    "identity",
    "image_input",
    "image_lengths",
    "load_checkpoint",
    "load_extraction",
    "mixed_blocks",
    "packaged_checkpoint",
    "permuted_blocks",
    "read_image",
    "read_text",
    "resolve_checkpoint",
    "save_extraction",
    "spherical",
    "text_input",
    "uniform_rows",
]
