"""flan-t5-small's encoder rebuilt as a transformers ``T5EncoderModel`` from an int8 ONNX graph.

The ``traceforge-title-model`` package ships the span titler of ``traceforge``: a
flan-t5-small fine-tuned by sequence-level distillation, exported to ONNX (an encoder and a
decoder graph plus a ``tokenizer.json``) and quantized by ONNX Runtime's dynamic int8
quantizer. Only the encoder (``data/span/encoder.onnx``, 8 layers x 6 heads, d_model 512)
is used here. What the extraction represents (the dequantized float model), T5's bias and
scale: docs/sources.md, "int8 ONNX graphs"; :func:`verify_against_onnx` measures both gaps
(``float_max_abs``, ``runtime_max_abs``).

How the graph maps onto the model:

* every quantized product is a ``MatMulInteger`` node named after the module that was
  exported (``/enc/block.3/layer.0/SelfAttention/k/MatMul_quant`` is layer 3's key
  projection); its dequantized ``[in, out]`` weight is transposed into ``nn.Linear``'s
  ``[out, in]``;
* the token table and the relative-position bias table (``[32 buckets, 6 heads]``, in
  layer 0 only, shared by all layers as in T5) are quantized ``Gather`` tables; RMS norm
  weights are float initializers with their module names;
* the configuration is read from the graph: widths from the weights, heads from the bias
  table, the RMS norm epsilon from the norm's ``Add`` constant, the bucket ``max_distance``
  from the constant that divides ``log(|i - j| / max_exact)``, and the gated-GELU feed
  forward (tanh approximation) from its ``Tanh`` nodes.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from analysis.sources.families import onnx_int8
from analysis.sources.models import Checkpoint, place_weights
from analysis.sources.packaged import PackagedCheckpoint, locate

__all__ = [
    "T5OnnxCrossCheck",
    "build_t5_encoder",
    "load_t5_onnx_checkpoint",
    "map_t5_encoder",
    "t5_tokenizer",
    "verify_against_onnx",
]

_FAMILY = "traceforge flan-t5-small encoder"
_unexpected = functools.partial(onnx_int8.unexpected, _FAMILY)
_PRODUCT = re.compile(
    r"^/enc/block\.(\d+)/layer\.([01])/(SelfAttention/[qkvo]|DenseReluDense/(?:wi_0|wi_1|wo))"
    r"/MatMul_quant$"
)
_NORM = re.compile(r"^enc\.(block\.\d+\.layer\.[01]\.layer_norm|final_layer_norm)\.weight$")
_SOFTMAX = re.compile(r"^/enc/block\.(\d+)/layer\.0/SelfAttention/Softmax$")
#: The tensor layer 0 adds to Q K^T: the relative-position bias plus the padding mask.
BIAS_TENSOR = "/enc/block.0/layer.0/SelfAttention/Add_3_output_0"


def _scalar_input(node: Any, values: dict[str, np.ndarray]) -> float:
    found = [float(values[i]) for i in node.input if i in values and values[i].size == 1]
    if len(found) != 1:
        raise _unexpected(f"one constant operand of {node.name}", len(found))
    return found[0]


@dataclasses.dataclass(frozen=True)
class T5Encoder:
    """The encoder read from the graph: config, float32 weights, and where each came from."""

    config: Any
    state_dict: dict[str, np.ndarray]
    sources: dict[str, str]


def map_t5_encoder(path: str | Path) -> T5Encoder:
    """Read the int8 encoder graph into a ``T5Config`` and a dequantized state dict.

    Raises
    ------
    ParameterError
        Naming ``checkpoint`` when ``onnx`` is missing or the graph is not the expected
        quantized T5 encoder (a product, table or norm missing or unexplained).

    Examples
    --------
    >>> from analysis.sources.families.t5_onnx import map_t5_encoder
    >>> from analysis.sources.packaged import assemble, packaged_checkpoint
    >>> enc = map_t5_encoder(assemble(packaged_checkpoint("flan-t5-small-span")))
    >>> c = enc.config
    >>> c.num_layers, c.num_heads, c.d_model, c.d_kv, c.relative_attention_max_distance
    (8, 6, 512, 64, 128)
    """
    from transformers import T5Config

    model = onnx_int8.load_graph(path, _FAMILY)
    g = onnx_int8.Graph(model, _FAMILY)
    arrays, values = g.init, dict(g.const)
    values.update({k: v for k, v in arrays.items() if v.size == 1})

    products = onnx_int8.matmul_weights(model, "/enc/", _FAMILY)
    tables = onnx_int8.gather_tables(model, "/enc/", _FAMILY)
    state, sources, put = onnx_int8.weight_collector(_unexpected, "each model tensor in one place")

    for name, w in products.items():
        m = _PRODUCT.match(name)
        if m is None:
            raise _unexpected("products named after T5 modules", name)
        block, sub, module = m.groups()
        put(
            f"encoder.block.{block}.layer.{sub}.{module.replace('/', '.')}.weight",
            w.weight.T,
            f"{w.initializer} (int8, dequantized) via {name}",
        )
    for name, t in tables.items():
        if name == "/enc/embed_tokens/Gather":
            put("shared.weight", t.weight, f"{t.initializer} (uint8, dequantized)")
        elif name.startswith("/enc/block.0/layer.0/SelfAttention/relative_attention_bias/"):
            put(
                "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
                t.weight,
                f"{t.initializer} (uint8, dequantized)",
            )
        else:
            raise _unexpected("only the token and relative-bias tables", name)
    for name in sorted(arrays):
        if _NORM.match(name):
            put("encoder." + name[len("enc.") :], arrays[name], name)
    if "shared.weight" not in state:
        raise _unexpected("a token table", sorted(tables))
    state["encoder.embed_tokens.weight"] = state["shared.weight"]
    sources["encoder.embed_tokens.weight"] = "tied to shared.weight"

    layers = 1 + max(int(_PRODUCT.match(n).group(1)) for n in products)
    bias_key = "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"
    if bias_key not in state:
        raise _unexpected("a relative-position bias table in layer 0", sorted(tables))
    buckets, heads = state[bias_key].shape
    d_model = state["encoder.final_layer_norm.weight"].shape[0]
    inner = state["encoder.block.0.layer.0.SelfAttention.q.weight"].shape[0]
    d_ff = state["encoder.block.0.layer.1.DenseReluDense.wi_0.weight"].shape[0]
    if inner % heads:
        raise _unexpected("heads dividing the attention width", (inner, heads))
    eps = set()
    logs = []
    for node in model.graph.node:
        if node.op_type == "Sqrt" and "layer_norm" in node.name:
            add = next(n for n in model.graph.node if node.input[0] in n.output)
            eps.add(np.float32(_scalar_input(add, values)))
        if node.op_type == "Log":
            logs.append(node)
    if len(eps) != 1:
        raise _unexpected("one RMS norm epsilon", sorted(eps))
    if len(logs) != 1:
        raise _unexpected("one bucket logarithm", len(logs))
    div = [n for n in model.graph.node if logs[0].output[0] in n.input]
    if len(div) != 1 or div[0].op_type != "Div":
        raise _unexpected("log(|i - j| / max_exact) divided by a constant", logs[0].name)
    max_exact = buckets // 4  # bidirectional: half the buckets per direction, half exact
    max_distance = max_exact * math.exp(_scalar_input(div[0], values))
    if abs(max_distance - round(max_distance)) > 1e-3:
        raise _unexpected("an integer bucket max_distance", max_distance)
    tanh = sum(n.op_type == "Tanh" for n in model.graph.node)
    if tanh != layers:
        raise _unexpected("one tanh-GELU gate per layer (gated-gelu)", f"{tanh} Tanh nodes")
    config = T5Config(
        vocab_size=state["shared.weight"].shape[0],
        d_model=d_model,
        d_kv=inner // heads,
        d_ff=d_ff,
        num_layers=layers,
        num_decoder_layers=layers,
        num_heads=heads,
        relative_attention_num_buckets=buckets,
        relative_attention_max_distance=round(max_distance),
        dropout_rate=0.0,
        layer_norm_epsilon=float(str(eps.pop())),
        feed_forward_proj="gated-gelu",
        is_encoder_decoder=False,
        use_cache=False,
        tie_word_embeddings=False,
    )
    config._attn_implementation = "eager"
    return T5Encoder(config, state, sources)


def build_t5_encoder(config: Any, state_dict: dict[str, np.ndarray]) -> Any:
    """A float32, eager-attention ``T5EncoderModel`` holding exactly ``state_dict``.

    Raises
    ------
    ParameterError
        Naming ``checkpoint`` when a key is missing or unexpected or a shape differs.
    """
    import torch
    from transformers import T5EncoderModel

    with torch.device("meta"):
        model = T5EncoderModel(config)
    place_weights(model, state_dict, _unexpected)
    model.tie_weights()
    model.set_attn_implementation("eager")
    return model.to(dtype=torch.float32).eval()


def t5_tokenizer(path: str | Path) -> Any:
    """The package's ``tokenizer.json`` (T5's SentencePiece unigram, ``</s>`` appended)."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_file=str(path), eos_token="</s>", unk_token="<unk>", pad_token="<pad>"
    )


def load_t5_onnx_checkpoint(
    spec: PackagedCheckpoint, *, verify: bool = False, cache: Path | None = None
) -> Checkpoint:
    """Load the traceforge flan-t5-small encoder as a ``Checkpoint`` (dequantized, float32).

    Parameters
    ----------
    spec : PackagedCheckpoint
        The ``traceforge/flan-t5-small-span-encoder`` entry of
        :data:`analysis.sources.packaged.PACKAGED` (parts: the encoder graph, then the
        tokenizer).
    verify : bool, default False
        Also run :func:`verify_against_onnx` and refuse the model when the dequantized
        graph's attention differs from the rebuilt model's by more than 1e-4.
    cache : path, optional
        Unused (the files are used in place); accepted like the other loaders.

    Returns
    -------
    Checkpoint
        ``T5EncoderModel`` (float32, eager attention) with the package's tokenizer; ``meta``
        holds the provenance and says the weights are dequantized from int8.

    Examples
    --------
    >>> from analysis.sources.families.t5_onnx import load_t5_onnx_checkpoint
    >>> from analysis.sources.packaged import packaged_checkpoint
    >>> ckpt = load_t5_onnx_checkpoint(packaged_checkpoint("flan-t5-small-span"))
    >>> type(ckpt.model).__name__, ckpt.meta["rebuilt_from"]
    ('T5EncoderModel', 'onnx-int8')
    """
    graph_path = locate(spec, spec.parts[0])
    tokenizer_path = locate(spec, spec.parts[1])
    encoder = map_t5_encoder(graph_path)
    model = build_t5_encoder(encoder.config, encoder.state_dict)
    meta = {
        **onnx_int8.loader_meta(spec, graph_path, encoder.config, model),
        "onnx_sha256": spec.parts[0].sha256,
        "provenance": spec.provenance(graph_path),
        "rebuilt_from": "onnx-int8",
        "dequantized_from": spec.quantization,
        "weights_note": (
            "the encoder of traceforge's span titler (flan-t5-small fine-tuned by sequence-"
            "level distillation), weights dequantized from ONNX Runtime int8 (per-tensor "
            "scale and zero point); the shipped runtime also quantizes activations, which "
            "this float model does not"
        ),
    }
    ckpt = Checkpoint(model, spec.checkpoint_id, t5_tokenizer(tokenizer_path), None, meta)
    if verify:
        onnx_int8.require_passed(
            verify_against_onnx(ckpt), "a rebuilt model matching the dequantized graph"
        )
    return ckpt


@dataclasses.dataclass(frozen=True)
class T5OnnxCrossCheck(onnx_int8.Int8CrossCheck):
    """The rebuilt model's attention against ONNX Runtime's on the same token ids.

    Attributes
    ----------
    length : int
    float_per_layer : ndarray, ``[layer]``
        Largest |difference| of the probabilities against the dequantized graph.
    runtime_per_layer : ndarray, ``[layer]``
        The same against the shipped int8 graph (activations quantized at run time).
    bias_max_abs : float
        Largest |difference| of layer 0's relative-position bias (the graph's, mask 0,
        against ``compute_bias``).
    query_rel_error : float
        ``||q_int8 - q|| / ||q||`` of layer 0's query projection, shipped graph against
        the model: the one product where only the activation quantization separates them
        (a few percent), an independent check of the dequantized weights (a wrong scale
        or zero point moves it by far more).
    tolerance : float
        Applies to ``float_per_layer`` and ``bias_max_abs`` only.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.sources.families.t5_onnx import T5OnnxCrossCheck
    >>> c = T5OnnxCrossCheck(16, np.array([2e-7, 5e-7]), np.array([0.01, 0.03]), 0.0)
    >>> c.passed
    True
    >>> c.summary()  # doctest: +ELLIPSIS
    'L = 16: dequantized graph max |dA| = 5.00e-07 (tolerance 1e-04), ... = 3.00e-02, ...'
    """

    bias_max_abs: float
    query_rel_error: float = float("nan")
    tolerance: float = 1e-4

    _other: ClassVar[str] = "bias_max_abs"
    _other_label: ClassVar[str] = "position bias max |d|"
    _query_label: ClassVar[str] = "layer-0"
    _other_checked: ClassVar[bool] = True


def verify_against_onnx(
    checkpoint: Checkpoint, input_ids: np.ndarray | None = None, *, tolerance: float = 1e-4
) -> T5OnnxCrossCheck:
    """Compare the rebuilt encoder's attention with ONNX Runtime's, float and int8.

    The graph's ``Softmax`` outputs (one per layer) are exposed and the same token ids go
    to the dequantized graph (:func:`~analysis.sources.families.onnx_int8.float_graph`),
    to the shipped int8 graph, and to the model.

    Parameters
    ----------
    checkpoint : Checkpoint
        From :func:`load_t5_onnx_checkpoint`.
    input_ids : array of int, optional
        One sequence; defaults to the first 32 tokens of the corpus text of seed 0.
    tolerance : float, default 1e-4

    Examples
    --------
    >>> from analysis.sources import load_checkpoint
    >>> from analysis.sources.families.t5_onnx import verify_against_onnx
    >>> check = verify_against_onnx(load_checkpoint("flan-t5-small-span"))
    >>> check.passed, check.length
    (True, 32)
    """
    import torch

    graph = onnx_int8.load_graph(checkpoint.meta["path"], _FAMILY)
    ids = onnx_int8.sequence_ids(checkpoint, input_ids)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    names = sorted(
        (n.output[0] for n in graph.graph.node if _SOFTMAX.match(n.name)),
        key=lambda s: int(re.search(r"block\.(\d+)", s).group(1)),
    )
    threads = max(1, torch.get_num_threads())
    dequantized = onnx_int8.run_graph(
        onnx_int8.float_graph(graph, _FAMILY), feeds, [*names, BIAS_TENSOR], threads=threads
    )
    query = "/enc/block.0/layer.0/SelfAttention/q/MatMul_output_0"
    *shipped, q_int8 = onnx_int8.run_graph(graph, feeds, [*names, query], threads=threads)
    attention = checkpoint.model.encoder.block[0].layer[0].SelfAttention
    with onnx_int8.first_output(attention.q) as seen, torch.no_grad():
        out = checkpoint.model(
            input_ids=torch.from_numpy(ids),
            attention_mask=torch.ones_like(torch.from_numpy(ids)),
            output_attentions=True,
        )
        bias = attention.compute_bias(ids.shape[1], ids.shape[1])
    q = seen["q"].numpy()
    query_rel = float(np.linalg.norm(q_int8 - q) / np.linalg.norm(q))
    ours = [a[0].numpy() for a in out.attentions]
    float_diff, runtime = onnx_int8.attention_differences(ours, dequantized[:-1], shipped)
    bias_diff = float(np.abs(bias.numpy() - dequantized[-1]).max())
    return T5OnnxCrossCheck(ids.shape[1], float_diff, runtime, bias_diff, query_rel, tolerance)
