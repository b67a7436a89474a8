"""What an extraction runs: a loaded model (:class:`Checkpoint`) and one input (:class:`ModelInput`).

The family loaders (:mod:`analysis.sources.families`) and the loader of transformers
folders (:func:`analysis.sources.checkpoints.load_checkpoint`) both build a
:class:`Checkpoint`; this module sits below both, so neither imports the other.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from analysis.sources.packaged import PackagedCheckpoint

__all__ = [
    "Checkpoint",
    "ModelInput",
    "package_meta",
    "place_weights",
    "prepare_model",
    "state_dict_sha256",
    "weights_sha256",
]

_WEIGHT_SUFFIXES = (".safetensors", ".bin")


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
        prepare_model(model)
        cid = checkpoint_id or f"in-memory:{type(model).__name__}"
        meta = {
            "origin": "in-memory",
            "model_class": type(model).__name__,
            "weights_sha256": state_dict_sha256(model),
        }
        return cls(model, cid, tokenizer, image_processor, meta)


def prepare_model(model: Any) -> None:
    """Eager attention, float32, eval mode: how every loader hands a model to the capture."""
    import torch

    if getattr(model.config, "_attn_implementation", None) != "eager":
        model.set_attn_implementation("eager")
    model.to(dtype=torch.float32)
    model.eval()


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


def place_weights(
    model: Any,
    state_dict: Mapping[str, np.ndarray],
    unexpected: Callable[[str, Any], Exception],
    *,
    buffers: frozenset[str] = frozenset(),
) -> None:
    """Assign ``state_dict`` (as float32 tensors) to ``model``, built on the meta device.

    Every key of the model's state dict must be given, except those in ``buffers``,
    none other, each in the model's shape; ``unexpected(allowed, got)`` makes the
    ``ParameterError`` raised otherwise. Loading is strict when ``buffers`` is empty.
    """
    import torch

    expected = model.state_dict()
    missing = sorted(set(expected) - set(state_dict) - buffers)
    extra = sorted(set(state_dict) - set(expected))
    if missing or extra:
        raise unexpected("no missing or unexpected keys", {"missing": missing, "unexpected": extra})
    tensors = {}
    for key, value in state_dict.items():
        if tuple(value.shape) != tuple(expected[key].shape):
            raise unexpected(f"{key} of shape {tuple(expected[key].shape)}", value.shape)
        tensors[key] = torch.from_numpy(np.array(value, dtype=np.float32))
    model.load_state_dict(tensors, strict=not buffers, assign=True)


def package_meta(spec: PackagedCheckpoint, model: Any, weights_sha256: str) -> dict[str, Any]:
    """The ``meta`` entries every family loader records: ``origin`` (the packages),
    ``revision`` (the first part's version), ``model_type``, ``model_class`` and
    ``weights_sha256``."""
    return {
        "origin": "package:" + ",".join(spec.distributions),
        "revision": spec.parts[0].version,
        "model_type": model.config.model_type,
        "model_class": type(model).__name__,
        "weights_sha256": weights_sha256,
    }
