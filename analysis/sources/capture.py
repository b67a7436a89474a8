"""Capture of a model's own attention: queries, keys, mask, bias and probabilities per call.

How (docs/sources.md, "How Q and K are obtained"): the module-level
``eager_attention_forward`` that BERT, GPT-2, Qwen2, ViT and DeiT call in transformers 5 is
wrapped for one forward pass, and attention modules that compute their logits inline
(MPNet in transformers 5.25) are read through the forward hooks declared in :data:`INLINE_ATTENTION`; a bias
is stored as its own array, ``bias``, never folded into the mask. Nothing is
re-implemented per architecture, so the stored ``Q``, ``K`` are by construction the ones
that produced the stored ``A``.

:func:`analysis.sources.checkpoints.extract_from_model` turns the captured calls into an
``Extraction``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

from analysis.validation import ParameterError

__all__ = ["INLINE_ATTENTION", "InlineAttention", "capture_attention", "mixed_sliding_window"]


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

    Examples
    --------
    MPNet's self-attention computes its logits inline; its entry says where the capture
    finds the queries, keys, mask and relative-position bias:

    >>> from analysis.sources.capture import INLINE_ATTENTION
    >>> spec = INLINE_ATTENTION["MPNetSelfAttention"]
    >>> spec.query, spec.key, spec.bias, spec.weights_index
    ('q', 'k', 'position_bias', 1)
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
    )
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
      GPT-2, Qwen2, ViT, DeiT, ALBERT, T5). The wrapper replaces a module-level function,
      so do not run other models of the same architecture in other threads while it is
      open. T5's function adds the ``position_bias`` keyword it receives to the logits;
      the wrapper keeps it as the record's bias;
    * attention modules listed in :data:`INLINE_ATTENTION` (MPNet), which compute their
      logits inline, are read through forward hooks on the module and on its query and
      key projections (:class:`InlineAttention`).

    Raises
    ------
    ParameterError
        Naming ``checkpoint`` when no module of the model exposes an eager attention
        function and none is a known inline attention module (architecture not supported
        by this transformers version).

    Examples
    --------
    A two-layer BERT built from a config: one record per layer, each with the queries, keys,
    scale and probabilities of its two heads.

    >>> import torch
    >>> from transformers import BertConfig, BertModel
    >>> from analysis.sources.capture import capture_attention
    >>> _ = torch.manual_seed(0)
    >>> config = BertConfig(vocab_size=32, hidden_size=8, num_hidden_layers=2,
    ...                     num_attention_heads=2, intermediate_size=16)
    >>> model = BertModel(config).eval()
    >>> model.set_attn_implementation("eager")
    >>> with capture_attention(model) as calls, torch.no_grad():
    ...     _ = model(input_ids=torch.tensor([[1, 5, 7, 2]]))
    >>> len(calls), tuple(calls[0].query.shape), tuple(calls[0].weights.shape), calls[0].scaling
    (2, (1, 2, 4, 4), (1, 2, 4, 4), 0.5)
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
            # T5's eager function adds a relative-position bias it receives as a keyword.
            bias = kwargs.get("position_bias")
            calls.append(
                _Call(
                    module,
                    query.detach().clone(),
                    key.detach().clone(),
                    float(scaling),
                    None if attention_mask is None else attention_mask.detach().clone(),
                    None if weights is None else weights.detach().clone(),
                    None if bias is None else bias.detach().clone(),
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


def allowed_mask(mask: Any, L: int) -> np.ndarray:
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


def head_bias(bias: Any, n_heads: int, L: int) -> np.ndarray | None:
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

    Examples
    --------
    >>> from transformers import BertConfig, Gemma3TextConfig
    >>> from analysis.sources.capture import mixed_sliding_window
    >>> mixed_sliding_window(Gemma3TextConfig(sliding_window=512, num_hidden_layers=6))
    512
    >>> mixed_sliding_window(BertConfig()) is None  # every layer attends alike
    True
    """
    types = list(getattr(config, "layer_types", None) or ())
    window = getattr(config, "sliding_window", None)
    if isinstance(window, int) and "sliding_attention" in types and len(set(types)) > 1:
        return window
    return None
