"""Whisper encoders rebuilt as transformers ``WhisperEncoder`` from CTranslate2 ``model.bin`` files.

This module reads the CTranslate2 binary layout itself (:func:`read_ctranslate2`), widens
the encoder's float16 weights to float32 and loads them into a transformers
``WhisperEncoder`` with eager attention; the decoder's weights are not loaded. The
packages, the reading, the scale, the any-length encoder
(:class:`WhisperEncoderAnyLength`: transformers' ``forward`` refuses anything but 3000
frames) and the parity: docs/sources.md, "Whisper base and tiny.en: CTranslate2 float16
encoders".

The mapping, per encoder layer ``i`` (CTranslate2 name -> transformers name):

* ``self_attention/linear_0`` (Q, K and V fused, rows ``[q; k; v]``) ->
  ``self_attn.{q,k,v}_proj``; Whisper's key projection has no bias, and the fused bias's
  key rows must be zero (checked);
* ``self_attention/linear_1`` -> ``self_attn.out_proj``; ``self_attention/layer_norm``
  -> ``self_attn_layer_norm``;
* ``ffn/linear_0``, ``ffn/linear_1``, ``ffn/layer_norm`` -> ``fc1``, ``fc2``,
  ``final_layer_norm``;

and ``conv1``, ``conv2``, ``position_encodings/encodings`` -> ``embed_positions``,
``layer_norm`` -> ``layer_norm`` for the encoder as a whole.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from transformers.modeling_outputs import BaseModelOutput
from transformers.models.whisper.modeling_whisper import WhisperEncoder
from transformers.utils.generic import merge_with_config_defaults
from transformers.utils.output_capturing import capture_outputs

from analysis.sources.models import (
    Checkpoint,
    package_meta,
    place_weights,
    prepare_model,
    state_dict_sha256,
)
from analysis.sources.packaged import PackagedCheckpoint, assemble
from analysis.validation import ParameterError

__all__ = [
    "CT2_BINARY_VERSION",
    "Ct2Model",
    "WhisperEncoderAnyLength",
    "build_whisper_encoder",
    "load_whisper_ct2_checkpoint",
    "read_ctranslate2",
    "whisper_encoder_state_dict",
]

#: The CTranslate2 binary layout version this reader understands (CTranslate2 >= 3.0).
CT2_BINARY_VERSION = 6

# DataType enum of CTranslate2 (include/ctranslate2/types.h), in order; bfloat16 is not
# read here (no numpy dtype).
_DTYPES: tuple[Any, ...] = (np.float32, np.int8, np.int16, np.int32, np.float16, None)


@dataclasses.dataclass(frozen=True)
class Ct2Model:
    """The variables of a CTranslate2 ``model.bin``.

    Attributes
    ----------
    spec : str
        The model specification's name (``"WhisperSpec"``).
    revision : int
        The specification's revision.
    variables : dict of str to ndarray
        Every stored variable, by its CTranslate2 name, in its stored dtype.
    aliases : dict of str to str
        Names that refer to another variable (``decoder/projection/weight`` ->
        ``decoder/embeddings/weight`` when the two are tied).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.sources.families.whisper_ct2 import Ct2Model
    >>> m = Ct2Model("WhisperSpec", 3, {"encoder/num_heads": np.array(6, np.int16)}, {})
    >>> m.spec, int(m.variables["encoder/num_heads"])
    ('WhisperSpec', 6)
    """

    spec: str
    revision: int
    variables: dict[str, np.ndarray]
    aliases: dict[str, str]


def read_ctranslate2(path: str | Path) -> Ct2Model:
    """Read a CTranslate2 ``model.bin`` (binary layout version 6) without CTranslate2.

    Parameters
    ----------
    path : path
        The ``model.bin`` file.

    Returns
    -------
    Ct2Model

    Raises
    ------
    ParameterError
        Naming ``checkpoint`` when the file is not of layout version 6, is truncated, has
        trailing bytes, or holds a variable of an unsupported dtype or inconsistent size.

    Notes
    -----
    The layout (``ctranslate2/specs/model_spec.py``, ``_serialize``), little-endian:
    ``uint32`` version; a string (``uint16`` length including a final NUL, the bytes, the
    NUL) naming the spec; ``uint32`` revision; ``uint32`` count, then per variable its name
    string, ``uint8`` rank, ``rank`` x ``uint32`` dimensions, ``uint8`` dtype id
    (float32, int8, int16, int32, float16, bfloat16), ``uint32`` byte count and the raw
    row-major data; finally a ``uint32`` count of aliases, each two strings
    (alias, target).

    Examples
    --------
    >>> from analysis.sources.families.whisper_ct2 import read_ctranslate2
    >>> from analysis.sources.packaged import locate, packaged_checkpoint
    >>> spec = packaged_checkpoint("whisper-tiny.en")
    >>> ct2 = read_ctranslate2(locate(spec, spec.parts[0]))
    >>> ct2.spec, ct2.variables["encoder/conv1/weight"].shape, ct2.variables["encoder/num_heads"]
    ('WhisperSpec', (384, 80, 3), array(6, dtype=int16))
    """
    data = memoryview(Path(path).read_bytes())
    pos = 0

    def bad(what: str) -> ParameterError:
        return ParameterError("checkpoint", "a CTranslate2 model.bin of layout version 6", what)

    def take(fmt: str) -> Any:
        nonlocal pos
        size = struct.calcsize(fmt)
        if pos + size > len(data):
            raise bad(f"{path}: truncated at byte {pos}")
        value = struct.unpack_from(fmt, data, pos)[0]
        pos += size
        return value

    def text() -> str:
        nonlocal pos
        n = take("<H")
        if n < 1 or pos + n > len(data) or data[pos + n - 1] != 0:
            raise bad(f"{path}: bad string at byte {pos}")
        out = bytes(data[pos : pos + n - 1]).decode("utf-8")
        pos += n
        return out

    version = take("<I")
    if version != CT2_BINARY_VERSION:
        raise bad(f"{path}: layout version {version}")
    spec = text()
    revision = take("<I")
    variables: dict[str, np.ndarray] = {}
    for _ in range(take("<I")):
        name = text()
        shape = tuple(take("<I") for _ in range(take("<B")))
        dtype_id = take("<B")
        dtype = _DTYPES[dtype_id] if dtype_id < len(_DTYPES) else None
        if dtype is None:
            raise bad(f"{path}: variable {name} of dtype id {dtype_id}")
        nbytes = take("<I")
        count = int(np.prod(shape, dtype=np.int64))
        if nbytes != count * np.dtype(dtype).itemsize or pos + nbytes > len(data):
            raise bad(f"{path}: variable {name} {shape} with {nbytes} bytes")
        variables[name] = np.frombuffer(data, dtype=dtype, count=count, offset=pos).reshape(shape)
        pos += nbytes
    aliases = {}
    for _ in range(take("<I")):
        alias = text()
        aliases[alias] = text()
    if pos != len(data):
        raise bad(f"{path}: {len(data) - pos} trailing bytes")
    return Ct2Model(spec, revision, variables, aliases)


def whisper_encoder_state_dict(ct2: Ct2Model) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Map a ``WhisperSpec``'s encoder variables to a transformers config and state dict.

    Parameters
    ----------
    ct2 : Ct2Model
        As :func:`read_ctranslate2` returns it.

    Returns
    -------
    config : dict
        ``WhisperConfig`` keyword arguments taken from the shapes (width, layers, heads,
        feed-forward width, mel bins, positions).
    state : dict of str to ndarray
        float32 arrays under ``WhisperEncoder``'s parameter names.

    Raises
    ------
    ParameterError
        Naming ``checkpoint`` when the spec is not a Whisper model, a variable is missing
        or of an unexpected shape, or the fused key bias is not zero.

    Examples
    --------
    >>> from analysis.sources.families.whisper_ct2 import read_ctranslate2, whisper_encoder_state_dict
    >>> from analysis.sources.packaged import locate, packaged_checkpoint
    >>> spec = packaged_checkpoint("whisper-tiny.en")
    >>> config, state = whisper_encoder_state_dict(read_ctranslate2(locate(spec, spec.parts[0])))
    >>> config["encoder_layers"], config["d_model"], state["layers.3.self_attn.k_proj.weight"].shape
    (4, 384, (384, 384))
    """
    v = ct2.variables
    if ct2.spec != "WhisperSpec":
        raise ParameterError("checkpoint", "a CTranslate2 WhisperSpec model", ct2.spec)

    def get(name: str, shape: tuple[int, ...]) -> np.ndarray:
        full = f"encoder/{name}"
        if full not in v:
            raise ParameterError("checkpoint", f"a variable {full}", "missing")
        arr = v[full]
        if arr.shape != shape:
            raise ParameterError("checkpoint", f"{full} of shape {shape}", arr.shape)
        return np.asarray(arr, dtype=np.float32)

    if "encoder/conv1/weight" not in v or "encoder/num_heads" not in v:
        raise ParameterError("checkpoint", "a Whisper encoder (conv1, num_heads)", "missing")
    d, n_mels, _ = v["encoder/conv1/weight"].shape
    heads = int(v["encoder/num_heads"])
    positions = v["encoder/position_encodings/encodings"].shape[0]
    layers = 0
    while f"encoder/layer_{layers}/ffn/linear_0/weight" in v:
        layers += 1
    ffn = v["encoder/layer_0/ffn/linear_0/weight"].shape[0]
    config = {
        "d_model": int(d),
        "encoder_layers": layers,
        "encoder_attention_heads": heads,
        "encoder_ffn_dim": int(ffn),
        "num_mel_bins": int(n_mels),
        "max_source_positions": int(positions),
    }
    state = {
        "conv1.weight": get("conv1/weight", (d, n_mels, 3)),
        "conv1.bias": get("conv1/bias", (d,)),
        "conv2.weight": get("conv2/weight", (d, d, 3)),
        "conv2.bias": get("conv2/bias", (d,)),
        "embed_positions.weight": get("position_encodings/encodings", (positions, d)),
        "layer_norm.weight": get("layer_norm/gamma", (d,)),
        "layer_norm.bias": get("layer_norm/beta", (d,)),
    }
    for i in range(layers):
        src, dst = f"layer_{i}/", f"layers.{i}."
        qkv_w = get(src + "self_attention/linear_0/weight", (3 * d, d))
        qkv_b = get(src + "self_attention/linear_0/bias", (3 * d,))
        if np.any(qkv_b[d : 2 * d] != 0):
            raise ParameterError(
                "checkpoint", f"a zero key bias in layer {i} (Whisper's key has none)", "nonzero"
            )
        state |= {
            dst + "self_attn.q_proj.weight": qkv_w[:d],
            dst + "self_attn.q_proj.bias": qkv_b[:d],
            dst + "self_attn.k_proj.weight": qkv_w[d : 2 * d],
            dst + "self_attn.v_proj.weight": qkv_w[2 * d :],
            dst + "self_attn.v_proj.bias": qkv_b[2 * d :],
            dst + "self_attn.out_proj.weight": get(src + "self_attention/linear_1/weight", (d, d)),
            dst + "self_attn.out_proj.bias": get(src + "self_attention/linear_1/bias", (d,)),
            dst + "self_attn_layer_norm.weight": get(src + "self_attention/layer_norm/gamma", (d,)),
            dst + "self_attn_layer_norm.bias": get(src + "self_attention/layer_norm/beta", (d,)),
            dst + "fc1.weight": get(src + "ffn/linear_0/weight", (ffn, d)),
            dst + "fc1.bias": get(src + "ffn/linear_0/bias", (ffn,)),
            dst + "fc2.weight": get(src + "ffn/linear_1/weight", (d, ffn)),
            dst + "fc2.bias": get(src + "ffn/linear_1/bias", (d,)),
            dst + "final_layer_norm.weight": get(src + "ffn/layer_norm/gamma", (d,)),
            dst + "final_layer_norm.bias": get(src + "ffn/layer_norm/beta", (d,)),
        }
    return config, state


class WhisperEncoderAnyLength(WhisperEncoder):
    """``WhisperEncoder`` on ``2 L`` mel frames (``1 <= L <= max_source_positions``).

    The computation of transformers' ``WhisperEncoder.forward`` (two convolutions with
    GELU, the second of stride 2, position embeddings added, the pre-norm layers, a final
    layer norm), with the first ``L`` position embeddings instead of a fixed input of
    ``2 * max_source_positions`` frames. Its attention modules are transformers' own
    ``WhisperAttention`` (eager), untouched.

    Examples
    --------
    A two-head encoder built from a config: 12 mel frames give 6 positions.

    >>> import torch
    >>> from transformers import WhisperConfig
    >>> from analysis.sources.families.whisper_ct2 import WhisperEncoderAnyLength
    >>> _ = torch.manual_seed(0)
    >>> cfg = WhisperConfig(d_model=8, encoder_layers=1, encoder_attention_heads=2,
    ...                     encoder_ffn_dim=16, num_mel_bins=4, max_source_positions=10)
    >>> model = WhisperEncoderAnyLength(cfg).eval()
    >>> tuple(model(input_features=torch.randn(1, 4, 12)).last_hidden_state.shape)
    (1, 6, 8)
    """

    @merge_with_config_defaults
    @capture_outputs
    def forward(self, input_features: Any, attention_mask: Any = None, **kwargs: Any) -> Any:
        frames = int(input_features.shape[-1])
        L = frames // 2
        if frames % 2 or not 1 <= L <= self.embed_positions.num_embeddings:
            raise ParameterError(
                "input",
                f"an even number of mel frames, at most {2 * self.embed_positions.num_embeddings}",
                frames,
            )
        x = nn.functional.gelu(self.conv1(input_features))
        x = nn.functional.gelu(self.conv2(x)).permute(0, 2, 1)
        hidden = x + self.embed_positions(torch.arange(L, device=x.device))
        hidden = nn.functional.dropout(hidden, p=self.dropout, training=self.training)
        for layer in self.layers:
            hidden = layer(hidden, None, **kwargs)
        return BaseModelOutput(last_hidden_state=self.layer_norm(hidden))


def build_whisper_encoder(config: Mapping[str, Any], state: Mapping[str, np.ndarray]) -> Any:
    """A ``WhisperEncoderAnyLength`` in float32, eager attention, eval mode, from a state dict.

    Every parameter must be given, in its shape (a ``ParameterError`` naming ``checkpoint``).

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.sources.families.whisper_ct2 import build_whisper_encoder
    >>> from transformers import WhisperConfig
    >>> from transformers.models.whisper.modeling_whisper import WhisperEncoder
    >>> cfg = dict(d_model=8, encoder_layers=1, encoder_attention_heads=2, encoder_ffn_dim=16,
    ...            num_mel_bins=4, max_source_positions=6)
    >>> ref = WhisperEncoder(WhisperConfig(**cfg))
    >>> state = {k: t.numpy() for k, t in ref.state_dict().items()}
    >>> model = build_whisper_encoder(cfg, state)
    >>> type(model).__name__, model.config._attn_implementation, model.training
    ('WhisperEncoderAnyLength', 'eager', False)
    """
    from transformers import WhisperConfig

    cfg = WhisperConfig(
        **config,
        activation_function="gelu",
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        encoder_layerdrop=0.0,
    )
    cfg._attn_implementation = "eager"
    with torch.device("meta"):
        model = WhisperEncoderAnyLength(cfg)
    place_weights(model, state, functools.partial(ParameterError, "checkpoint"))
    prepare_model(model)
    return model


def load_whisper_ct2_checkpoint(spec: PackagedCheckpoint) -> Checkpoint:
    """Load the encoder of a packaged CTranslate2 Whisper model as a ``Checkpoint``.

    Parameters
    ----------
    spec : PackagedCheckpoint
        An entry of :data:`analysis.sources.packaged.PACKAGED` naming this loader.

    Returns
    -------
    Checkpoint
        :class:`WhisperEncoderAnyLength` (float32, eager attention, eval mode), no
        tokenizer or image processor (its inputs are log-mel frames,
        :func:`analysis.sources.audio.corpus_audio`); ``meta`` holds the provenance
        (packages, versions, file hashes), the stored dtype and the parameters' hash.

    Raises
    ------
    ParameterError
        Naming ``checkpoint`` when a package is missing or altered, or the file is not a
        CTranslate2 Whisper model.

    Examples
    --------
    >>> from analysis.sources.families.whisper_ct2 import load_whisper_ct2_checkpoint
    >>> from analysis.sources.packaged import packaged_checkpoint
    >>> ckpt = load_whisper_ct2_checkpoint(packaged_checkpoint("whisper-tiny.en"))
    >>> ckpt.checkpoint_id, ckpt.model.config.encoder_layers, ckpt.model.config.encoder_attention_heads
    ('openai/whisper-tiny.en', 4, 6)
    """
    path = assemble(spec)
    ct2 = read_ctranslate2(path)
    config, state = whisper_encoder_state_dict(ct2)
    stored = sorted(
        {str(a.dtype) for k, a in ct2.variables.items() if k.startswith("encoder/") and a.ndim}
    )
    model = build_whisper_encoder(config, state)
    meta: dict[str, Any] = {
        **spec.provenance(path),
        **package_meta(spec, model, state_dict_sha256(model)),
        "rebuilt_from": f"ctranslate2 {ct2.spec} (binary layout {CT2_BINARY_VERSION})",
        "stored_dtype": ",".join(stored),
        "weights_note": (
            "the encoder only (the decoder's weights are in the file, not loaded); "
            f"float32 converted exactly from the stored {','.join(stored)}; run on 2 L "
            "log-mel frames with the first L position embeddings"
        ),
        "config": json.loads(json.dumps(config)),
    }
    return Checkpoint(model, spec.checkpoint_id, None, None, meta)
