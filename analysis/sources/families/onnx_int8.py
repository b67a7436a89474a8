"""Reading ONNX graphs quantized by ONNX Runtime's dynamic int8 quantizer.

Two packaged families (the flan-t5-small encoder of ``traceforge-title-model`` and the
ALBERT text encoder of Kokoro-82M) ship graphs that ``onnxruntime.quantization`` rewrote:

* every ``MatMul`` by a weight became ``DynamicQuantizeLinear(x) -> MatMulInteger(x_q, W_q,
  x_zp, W_zp) -> Cast -> Mul(., x_scale * W_scale)``: the activations are quantized to
  uint8 at run time, the weight ``W_q`` is stored as int8 with a zero point and a scale
  (one per tensor, or one per output column);
* every embedding table became ``Gather(T_q, ids) -> DequantizeLinear(., scale, zp)``.

The float model this package extracts is the **dequantized** one: ``W = (W_q - W_zp) *
W_scale`` in float32 for every weight, every other operation in float32 as the graph
describes it. :func:`matmul_weights` and :func:`gather_tables` recover those float32
weights together with the node each came from (the node names carry the exporting
module's path, e.g. ``/enc/block.0/layer.0/SelfAttention/q/MatMul_quant``), and
:func:`float_graph` rewrites the graph into that float model (each quantized product
replaced by a float ``MatMul`` with the dequantized weight), so ONNX Runtime can check a
rebuilt transformers model against the graph itself, without the activation quantization
the shipped runtime adds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from analysis.validation import ParameterError

__all__ = [
    "Graph",
    "Int8CrossCheck",
    "QuantizedWeight",
    "attention_differences",
    "first_output",
    "float_graph",
    "gather_tables",
    "keep_first_output",
    "load_graph",
    "loader_meta",
    "matmul_weights",
    "require_onnxruntime",
    "require_passed",
    "run_graph",
    "sequence_ids",
    "unexpected",
    "weight_collector",
]


def _require_onnx(family: str) -> Any:
    try:
        import onnx
    except ImportError:
        raise ParameterError(
            "checkpoint",
            f"the `onnx` package to read the {family} graph; add it with: "
            'pip install "onnx>=1.16" (or the `families` extra: pip install -e ".[families]")',
            "onnx not installed",
        ) from None
    return onnx


def require_onnxruntime() -> Any:
    """``onnxruntime``, or a ParameterError naming ``checkpoint`` that says how to add it."""
    try:
        import onnxruntime
    except ImportError:
        raise ParameterError(
            "checkpoint",
            "onnxruntime to run the shipped graph; add it with: pip install onnxruntime",
            "onnxruntime not installed",
        ) from None
    return onnxruntime


def load_graph(path: str | Path, family: str) -> Any:
    """The ``onnx.ModelProto`` at ``path`` (errors name the family)."""
    onnx = _require_onnx(family)
    return onnx.load(str(path))


@dataclasses.dataclass(frozen=True)
class QuantizedWeight:
    """One dequantized weight and where the graph keeps it.

    Attributes
    ----------
    node : str
        The name of the node that uses it (``MatMulInteger`` or ``Gather``).
    initializer : str
        The int8 / uint8 initializer.
    weight : ndarray, float32
        ``(W_q - zero_point) * scale``: ``[in, out]`` for a product (as ONNX multiplies
        ``x @ W``), ``[rows, dim]`` for an embedding table.
    per_channel : bool
        True when the scale has one value per output column.
    """

    node: str
    initializer: str
    weight: np.ndarray
    per_channel: bool


_LAYOUT = ("Transpose", "Reshape", "Unsqueeze", "Squeeze")


class Graph:
    """Initializers, constants, producers and consumers of one ONNX graph (errors name
    ``family``)."""

    def __init__(self, model: Any, family: str) -> None:
        from onnx import numpy_helper

        graph = model.graph
        self.model, self.family = model, family
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
        return self.init.get(name, self.const.get(name))

    def only_consumer(self, name: str, op_type: str) -> Any:
        nodes = [n for n in self.consumers.get(name, []) if n.op_type == op_type]
        if len(nodes) != 1:
            raise unexpected(self.family, f"{name} feeding exactly one {op_type} node", len(nodes))
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


def _dequantize(q: np.ndarray, zero: np.ndarray, scale: np.ndarray) -> np.ndarray:
    return ((q.astype(np.float32) - zero.astype(np.float32)) * scale.astype(np.float32)).astype(
        np.float32
    )


def unexpected(family: str, allowed: str, got: Any) -> ParameterError:
    """The error of a graph that is not what ``family``'s mapping reads."""
    return ParameterError("checkpoint", f"a {family} graph with {allowed}", got)


def _product_chain(g: Graph, node: Any) -> tuple[str, str, str]:
    """(float input, weight scale initializer, float output) of one ``MatMulInteger``.

    Follows ``MatMulInteger -> Cast -> Mul(., scales)`` with ``scales = Mul(x_scale,
    W_scale)`` and ``x_q, x_scale, x_zp = DynamicQuantizeLinear(x)``.
    """
    family, producer = g.family, g.producer
    quant = producer.get(node.input[0])
    if quant is None or quant.op_type != "DynamicQuantizeLinear":
        raise unexpected(family, "MatMulInteger fed by DynamicQuantizeLinear", node.name)
    cast = g.only_consumer(node.output[0], "Cast")
    mul = g.only_consumer(cast.output[0], "Mul")
    other = [i for i in mul.input if i != cast.output[0]]
    scales = producer.get(other[0]) if len(other) == 1 else None
    if scales is None or scales.op_type != "Mul" or quant.output[1] not in scales.input:
        raise unexpected(family, "the product rescaled by x_scale * W_scale", node.name)
    w_scale = [i for i in scales.input if i != quant.output[1]]
    if len(w_scale) != 1:
        raise unexpected(family, "one weight scale per product", node.name)
    return quant.input[0], w_scale[0], mul.output[0]


def matmul_weights(model: Any, prefix: str, family: str) -> dict[str, QuantizedWeight]:
    """Every ``MatMulInteger`` whose node name starts with ``prefix``, dequantized.

    Returns a dict from node name to :class:`QuantizedWeight` (``weight`` is ``[in, out]``).

    Raises
    ------
    ParameterError
        Naming ``checkpoint`` when a product is not of the dynamic-quantization form, its
        weight is not an initializer, or a scale / zero point has an unexpected shape.
    """
    g = Graph(model, family)
    init = g.init
    out: dict[str, QuantizedWeight] = {}
    for node in g.nodes:
        if node.op_type != "MatMulInteger" or not node.name.startswith(prefix):
            continue
        w_name, zp_name = node.input[1], node.input[3] if len(node.input) > 3 else ""
        if w_name not in init or zp_name not in init:
            raise unexpected(family, "constant int8 weights with a zero point", node.name)
        _, scale_name, _ = _product_chain(g, node)
        q, zero, scale = init[w_name], init[zp_name], init.get(scale_name)
        cols = q.shape[1]
        if scale is None or scale.size not in (1, cols) or zero.size not in (1, cols):
            raise unexpected(family, f"per-tensor or per-column quantization of {w_name}", node)
        out[node.name] = QuantizedWeight(
            node.name, w_name, _dequantize(q, zero, scale.reshape(-1)), scale.size == cols
        )
    return out


def gather_tables(model: Any, prefix: str, family: str) -> dict[str, QuantizedWeight]:
    """Every quantized embedding table (``Gather`` then ``DequantizeLinear``) under ``prefix``.

    Returns a dict from the ``Gather`` node's name to :class:`QuantizedWeight`.
    """
    g = Graph(model, family)
    init, consumers = g.init, g.consumers
    out: dict[str, QuantizedWeight] = {}
    for node in g.nodes:
        if node.op_type != "Gather" or not node.name.startswith(prefix):
            continue
        if node.input[0] not in init or init[node.input[0]].dtype not in (np.int8, np.uint8):
            continue
        # The quantized rows may be moved (transposed, reshaped) before they are dequantized;
        # those operations do not change the values.
        tensor = node.output[0]
        while True:
            nxt = consumers.get(tensor, [])
            if len(nxt) == 1 and nxt[0].op_type in _LAYOUT:
                tensor = nxt[0].output[0]
                continue
            break
        deq = [n for n in consumers.get(tensor, []) if n.op_type == "DequantizeLinear"]
        if len(deq) != 1 or deq[0].input[1] not in init or deq[0].input[2] not in init:
            raise unexpected(family, "each quantized table dequantized once", node.name)
        scale, zero = init[deq[0].input[1]], init[deq[0].input[2]]
        if scale.size != 1 or zero.size != 1:
            raise unexpected(family, "per-tensor quantized embedding tables", node.name)
        q = init[node.input[0]]
        out[node.name] = QuantizedWeight(
            node.name, node.input[0], _dequantize(q, zero, scale), False
        )
    return out


def float_graph(model: Any, family: str) -> Any:
    """A copy of ``model`` in which every quantized product is a float ``MatMul``.

    Each ``MatMulInteger`` chain (see :func:`matmul_weights`) is replaced by ``MatMul(x,
    W)`` with ``W`` the dequantized weight, writing the chain's float output; the now
    unused quantization nodes are removed. Embedding tables keep their ``Gather`` and
    ``DequantizeLinear``, which already give the dequantized rows exactly. The result is
    the float model the extraction rebuilds, in the graph's own operations.
    """
    import copy

    from onnx import helper, numpy_helper

    model = copy.deepcopy(model)
    weights = matmul_weights(model, "", family)
    g = Graph(model, family)
    producer, consumers = g.producer, g.consumers
    chains = {n.name: _product_chain(g, n) for n in g.nodes if n.name in weights}
    drop: set[int] = set()
    added: dict[str, str] = {}
    new_nodes = []
    for node in model.graph.node:
        if node.name not in chains:
            continue
        x, _, y = chains[node.name]
        cast = next(n for n in consumers[node.output[0]] if n.op_type == "Cast")
        mul = producer[y]
        drop.update({id(node), id(cast), id(mul)})
        init_name = weights[node.name].initializer
        if init_name not in added:
            added[init_name] = init_name + "_dequantized"
            model.graph.initializer.append(
                numpy_helper.from_array(weights[node.name].weight, added[init_name])
            )
        new_nodes.append(
            (
                id(mul),
                helper.make_node(
                    "MatMul", [x, added[init_name]], [y], name=node.name.replace("_quant", "_float")
                ),
            )
        )
    replacement = dict(new_nodes)
    kept = []
    for node in model.graph.node:
        if id(node) in replacement:
            kept.append(replacement[id(node)])
        elif id(node) not in drop:
            kept.append(node)
    # Quantizers and scale products whose outputs nothing reads any more.
    while True:
        read = {i for n in kept for i in n.input} | {o.name for o in model.graph.output}
        unused = [
            n
            for n in kept
            if n.op_type in ("DynamicQuantizeLinear", "Mul")
            and not any(o in read for o in n.output)
        ]
        if not unused:
            break
        kept = [n for n in kept if all(n is not u for u in unused)]
    del model.graph.node[:]
    model.graph.node.extend(kept)
    read = {i for n in kept for i in n.input}
    unused = [t for t in model.graph.initializer if t.name not in read]
    for t in unused:
        model.graph.initializer.remove(t)
    return model


def run_graph(
    model: Any, feeds: dict[str, np.ndarray], outputs: list[str], *, threads: int | None = None
) -> list[np.ndarray]:
    """Run ``model`` in ONNX Runtime (CPU) and return the named tensors, intermediate or not.

    Intermediate tensors are added to the graph's outputs (in a copy) so the session
    returns them.
    """
    import copy

    import onnx

    ort = require_onnxruntime()
    model = copy.deepcopy(model)
    present = {o.name for o in model.graph.output}
    for name in outputs:
        if name not in present:
            model.graph.output.append(
                onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None)
            )
    options = ort.SessionOptions()
    options.log_severity_level = 3  # errors only
    if threads is not None:
        options.intra_op_num_threads = threads
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(outputs, feeds)


def keep_first_output(seen: dict[str, Any], key: str = "q") -> Any:
    """A forward hook that keeps a module's first output in ``seen[key]``.

    It returns None, so the module's output is left as it is (a hook that returned a
    value would replace it, e.g. in every later application of a shared layer).

    Examples
    --------
    >>> import torch
    >>> from analysis.sources.families.onnx_int8 import keep_first_output
    >>> layer, seen = torch.nn.Linear(2, 2), {}
    >>> handle = layer.register_forward_hook(keep_first_output(seen))
    >>> with torch.no_grad():
    ...     first, second = layer(torch.ones(1, 2)), layer(torch.zeros(1, 2))
    >>> handle.remove()
    >>> torch.equal(seen["q"], first), torch.equal(second, layer.bias.detach()[None])
    (True, True)
    """

    def hook(_module: Any, _args: Any, output: Any) -> None:
        seen.setdefault(key, output.detach().clone())

    return hook


@contextmanager
def first_output(module: Any) -> Iterator[dict[str, Any]]:
    """Keep ``module``'s first output in the yielded dict (key ``"q"``) while inside.

    The hook (:func:`keep_first_output`) is removed on leaving, also on an error.
    """
    seen: dict[str, Any] = {}
    handle = module.register_forward_hook(keep_first_output(seen))
    try:
        yield seen
    finally:
        handle.remove()


def sequence_ids(checkpoint: Any, input_ids: np.ndarray | None, length: int = 32) -> np.ndarray:
    """``input_ids`` as int64 ``[1, L]``; by default the corpus text of seed 0 at ``length``."""
    if input_ids is None:
        from analysis.sources.inputs import corpus_text

        input_ids = corpus_text(checkpoint, 0, length).tensors["input_ids"][0].numpy()
    return np.asarray(input_ids, dtype=np.int64).reshape(1, -1)


def attention_differences(
    ours: list[np.ndarray], dequantized: list[np.ndarray], shipped: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Per layer, largest |difference| of ``ours`` against each graph's probabilities.

    ``ours`` holds ``[heads, L, L]`` arrays, the graphs' ``[1, heads, L, L]`` ones, one
    per layer in the same order (a different count raises ``ValueError``).
    """
    float_diff = np.array([np.abs(a - b[0]).max() for a, b in zip(ours, dequantized, strict=True)])
    runtime = np.array([np.abs(a - b[0]).max() for a, b in zip(ours, shipped, strict=True)])
    return float_diff, runtime


def weight_collector(
    unexpected: Callable[[str, Any], ParameterError], allowed: str
) -> tuple[dict[str, np.ndarray], dict[str, str], Callable[[str, np.ndarray, str], None]]:
    """``(state, sources, put)``: ``put(key, value, source)`` fills both dicts once per key.

    ``value`` is stored as contiguous float32; a key put twice raises
    ``unexpected(allowed, key)``.
    """
    state: dict[str, np.ndarray] = {}
    sources: dict[str, str] = {}

    def put(key: str, value: np.ndarray, source: str) -> None:
        if key in state:
            raise unexpected(allowed, key)
        state[key] = np.ascontiguousarray(value, dtype=np.float32)
        sources[key] = source

    return state, sources, put


def loader_meta(spec: Any, path: str | Path, config: Any, model: Any) -> dict[str, Any]:
    """The ``meta`` entries every packaged ONNX loader starts with: those of
    :func:`~analysis.sources.models.package_meta` (the parameters' hash as weights hash),
    then ``path``; each loader adds its own after them."""
    from analysis.sources.models import package_meta, state_dict_sha256

    return {**package_meta(spec, model, state_dict_sha256(model)), "path": str(path)}


def require_passed(check: Any, allowed: str) -> None:
    """Raise ``ParameterError`` naming ``checkpoint`` when ``check`` did not pass.

    The message says ``{allowed} within {check.tolerance}`` and gives ``check.summary()``.
    """
    if not check.passed:
        raise ParameterError("checkpoint", f"{allowed} within {check.tolerance}", check.summary())


@dataclasses.dataclass(frozen=True)
class Int8CrossCheck:
    """What the int8 families' cross-checks share: the per-layer attention differences.

    Subclasses add, in this order, one more largest |difference| (named by
    ``_other``), ``query_rel_error`` and ``tolerance``; ``_other_checked`` says whether
    the tolerance applies to it too, ``_other_label`` and ``_query_label`` name it and
    the query projection in :meth:`summary`.
    """

    length: int
    float_per_layer: np.ndarray
    runtime_per_layer: np.ndarray

    _other: ClassVar[str] = ""
    _other_label: ClassVar[str] = ""
    _query_label: ClassVar[str] = ""
    _other_checked: ClassVar[bool] = False

    @property
    def passed(self) -> bool:
        worst = float(self.float_per_layer.max())
        if self._other_checked:
            worst = max(worst, getattr(self, self._other))
        return worst <= self.tolerance

    def summary(self) -> str:
        return (
            f"L = {self.length}: dequantized graph max |dA| = {self.float_per_layer.max():.2e} "
            f"(tolerance {self.tolerance:.0e}), {self._other_label} = "
            f"{getattr(self, self._other):.2e}; shipped int8 runtime max |dA| = "
            f"{self.runtime_per_layer.max():.2e}, {self._query_label} query relative error "
            f"{self.query_rel_error:.1e}"
        )
