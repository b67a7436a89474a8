"""Inputs for extraction: texts of a chosen token length and images of a chosen patch count.

Offline sources only: the text corpus is :mod:`pydoc_data.topics` (the help texts every
CPython install carries) and the images are scikit-learn's ``load_sample_images``.
"""

from __future__ import annotations

import hashlib
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from analysis.sources.capture import mixed_sliding_window
from analysis.sources.models import Checkpoint, ModelInput
from analysis.validation import ParameterError, check_int

__all__ = [
    "corpus_image",
    "corpus_text",
    "corpus_topic",
    "image_input",
    "image_lengths",
    "pick_image",
    "read_image",
    "read_text",
    "text_input",
]


# --------------------------------------------------------------------------------------
# Text
# --------------------------------------------------------------------------------------


def _max_positions(config: Any) -> int | None:
    for name in ("max_position_embeddings", "n_positions"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _check_length(checkpoint: Checkpoint, length: Any) -> int:
    L = check_int("length", length, minimum=1)
    config = checkpoint.model.config
    limit = _max_positions(config)
    if limit is not None and L > limit:
        raise ParameterError("length", f"an integer <= {limit} for this checkpoint", L)
    window = mixed_sliding_window(config)
    if window is not None and L > window:
        n = sum(t == "sliding_attention" for t in config.layer_types)
        raise ParameterError(
            "length",
            f"an integer <= {window}: {n} of {len(config.layer_types)} layers attend within "
            f"a sliding window of {window} positions, so beyond it the layers' masks differ "
            "and one [L, L] mask no longer describes them",
            L,
        )
    return L


def text_input(
    checkpoint: Checkpoint,
    text: str,
    length: int,
    *,
    input_id: str | None = None,
    meta: dict[str, Any] | None = None,
) -> ModelInput:
    """Tokenize the first ``length`` tokens of ``text`` (special tokens included).

    Parameters
    ----------
    checkpoint : Checkpoint
        Must carry a tokenizer.
    text : str
    length : int
        L, the number of positions, special tokens counted
        (``tokenizer(text, truncation=True, max_length=L)``).
    input_id : str, optional
        Defaults to ``"text:sha256:<first 16 hex of the UTF-8 bytes>"``.
    meta : dict, optional
        Extra entries for the input's ``meta``.

    Raises
    ------
    ParameterError
        Naming ``length`` when the text yields fewer than L tokens.

    Examples
    --------
    >>> from analysis.sources import load_checkpoint, text_input
    >>> ckpt = load_checkpoint("minilm")
    >>> x = text_input(ckpt, "The quick brown fox jumps over the lazy dog.", 6)
    >>> x.tokens
    ['[CLS]', 'the', 'quick', 'brown', 'fox', '[SEP]']
    >>> text_input(ckpt, "Too short.", 16)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: length: expected at most 5 (the text has only 5 tokens); ...
    """
    L = _check_length(checkpoint, length)
    tok = checkpoint.tokenizer
    if tok is None:
        raise ParameterError(
            "checkpoint", "a text checkpoint with a tokenizer", checkpoint.checkpoint_id
        )
    enc = tok(text, truncation=True, max_length=L, return_tensors="pt")
    n = int(enc["input_ids"].shape[-1])
    if n < L:
        raise ParameterError(
            "length", f"at most {n} (the text has only {n} tokens); pass a longer text", L
        )
    ids = enc["input_ids"]
    tensors = {"input_ids": ids, "attention_mask": enc.get("attention_mask")}
    if "token_type_ids" in enc:
        tensors["token_type_ids"] = enc["token_type_ids"]
    tensors = {k: v for k, v in tensors.items() if v is not None}
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return ModelInput(
        tensors,
        [str(t) for t in tok.convert_ids_to_tokens(ids[0].tolist())],
        input_id or f"text:sha256:{digest}",
        dict(meta or {}),
    )


def read_text(path: str | os.PathLike[str], *, name: str = "path") -> str:
    """Read a UTF-8 text file; errors name ``name`` (a caller's parameter, e.g. ``text``).

    Examples
    --------
    >>> from pathlib import Path
    >>> from analysis.sources import read_text
    >>> _ = Path("note.txt").write_text("caf\u00e9", encoding="utf-8")
    >>> read_text("note.txt")
    'café'
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{name}: no such file: {p}")
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ParameterError(name, "a UTF-8 text file", str(p)) from None


def corpus_text(checkpoint: Checkpoint, seed: int, length: int) -> ModelInput:
    """A deterministic corpus text of exactly ``length`` tokens.

    The topics of :mod:`pydoc_data.topics` are sorted by name and shuffled with
    ``numpy.random.default_rng(seed)``; the first topic with at least L tokens is used from
    its start. The input id is ``"corpus:pydoc_data.topics/<topic>"``, so the same topic at
    the same length is the same matrix whichever seed picked it.

    Raises
    ------
    ParameterError
        Naming ``length`` when no topic is that long; ``seed`` for a bad seed.

    Examples
    --------
    >>> from analysis.sources import corpus_text, load_checkpoint
    >>> x = corpus_text(load_checkpoint("minilm"), 0, 8)
    >>> x.length, x.input_id
    (8, 'corpus:pydoc_data.topics/numbers')
    """
    from pydoc_data.topics import topics

    seed = check_int("seed", seed, minimum=0)
    L = _check_length(checkpoint, length)
    tok = checkpoint.tokenizer
    if tok is None:
        raise ParameterError(
            "checkpoint", "a text checkpoint with a tokenizer", checkpoint.checkpoint_id
        )
    name = corpus_topic(tok, seed, L)
    return text_input(
        checkpoint,
        topics[name],
        L,
        input_id=f"corpus:pydoc_data.topics/{name}",
        meta={"corpus": "pydoc_data.topics", "topic": name, "corpus_seed": seed},
    )


def corpus_topic(tokenizer: Any, seed: int, length: int) -> str:
    """The :mod:`pydoc_data.topics` topic :func:`corpus_text` reads for ``seed`` and L.

    Needs only the tokenizer (``attnrank inputs list`` reports picks without a model).

    Examples
    --------
    >>> from analysis.sources.corpora.tokenizers import text_tokenizer
    >>> from analysis.sources.inputs import corpus_topic
    >>> corpus_topic(text_tokenizer("minilm"), 0, 8)
    'numbers'
    """
    from pydoc_data.topics import topics

    names = sorted(topics)
    order = np.random.default_rng(seed).permutation(len(names))
    longest = 0
    for i in order:
        name = names[int(i)]
        n = len(tokenizer(topics[name], truncation=True, max_length=length)["input_ids"])
        if n < length:
            longest = max(longest, n)
            continue
        return name
    raise ParameterError("length", f"at most {longest} (the longest corpus text)", length)


# --------------------------------------------------------------------------------------
# Images
# --------------------------------------------------------------------------------------


def _vision_geometry(checkpoint: Checkpoint) -> tuple[int, int, int]:
    """(patch size in pixels, native patches per side, prefix tokens) of a vision model."""
    cfg = checkpoint.model.config
    patch = cfg.patch_size if isinstance(cfg.patch_size, int) else cfg.patch_size[0]
    size = cfg.image_size if isinstance(cfg.image_size, int) else cfg.image_size[0]
    side = size // patch
    pos = _find_position_embeddings(checkpoint.model)
    prefix = int(pos.shape[1]) - side * side if pos is not None else 1
    return int(patch), int(side), prefix


def _find_position_embeddings(model: Any) -> Any:
    for name, param in model.named_parameters():
        if name.endswith("embeddings.position_embeddings"):
            return param
    return None


def image_lengths(checkpoint: Checkpoint, around: int | None = None, n: int = 4) -> list[int]:
    """Valid ``length`` values (prefix + s^2) nearest ``around`` (native when None).

    Examples
    --------
    A tiny ViT built from a config (32 x 32 pixels in 8 x 8 patches: 16 patches and a CLS
    token natively):

    >>> from transformers import ViTConfig, ViTModel
    >>> from analysis.sources import Checkpoint, image_lengths
    >>> config = ViTConfig(image_size=32, patch_size=8, hidden_size=8, num_hidden_layers=1,
    ...                    num_attention_heads=2, intermediate_size=16)
    >>> vit = Checkpoint.from_model(ViTModel(config), checkpoint_id="tiny-vit")
    >>> image_lengths(vit)  # 1 + s^2 around the native s = 4
    [2, 5, 10, 17, 26, 37, 50, 65]
    """
    _, side, prefix = _vision_geometry(checkpoint)
    centre = side if around is None else max(1, round(math.sqrt(max(around - prefix, 1))))
    sides = range(max(1, centre - n), centre + n + 1)
    return [prefix + s * s for s in sides]


def read_image(path: str | os.PathLike[str], *, name: str = "path") -> np.ndarray:
    """Read an image file as an RGB uint8 array ``[height, width, 3]``; errors name ``name``.

    Examples
    --------
    >>> import numpy as np
    >>> from PIL import Image
    >>> from analysis.sources import read_image
    >>> Image.fromarray(np.zeros((4, 6), np.uint8)).save("grey.png")  # one channel
    >>> read_image("grey.png").shape  # always RGB
    (4, 6, 3)
    """
    from PIL import Image, UnidentifiedImageError

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{name}: no such file: {p}")
    try:
        with Image.open(p) as im:
            return np.asarray(im.convert("RGB"))
    except UnidentifiedImageError:
        raise ParameterError(name, "an image file PIL can read", str(p)) from None


def image_input(
    checkpoint: Checkpoint,
    image: np.ndarray,
    length: int | None = None,
    *,
    input_id: str | None = None,
    meta: dict[str, Any] | None = None,
) -> ModelInput:
    """Resize an RGB image so the model sees ``length = prefix + P`` positions, P square.

    Parameters
    ----------
    checkpoint : Checkpoint
        A ViT / DeiT model; its image processor (or ViT's defaults: bilinear resize, mean
        and std 0.5) does the resizing and normalization.
    image : ndarray, uint8, ``[height, width, 3]``
    length : int, optional
        ``1 + P`` for ViT (``2 + P`` for distilled DeiT, which adds a distillation token);
        the native size when None. Position embeddings are interpolated when the size
        differs from the native one (``interpolate_pos_encoding=True``).
    input_id : str, optional
        Defaults to ``"image:sha256:<first 16 hex of the pixel bytes>"``.
    meta : dict, optional
        Extra entries for the input's ``meta``.

    Raises
    ------
    ParameterError
        Naming ``length`` and listing the valid lengths near it.

    Examples
    --------
    >>> import numpy as np
    >>> from transformers import ViTConfig, ViTModel
    >>> from analysis.sources import Checkpoint, image_input
    >>> config = ViTConfig(image_size=32, patch_size=8, hidden_size=8, num_hidden_layers=1,
    ...                    num_attention_heads=2, intermediate_size=16)
    >>> vit = Checkpoint.from_model(ViTModel(config), checkpoint_id="tiny-vit")
    >>> x = image_input(vit, np.zeros((40, 60, 3), np.uint8), 10)  # CLS + 3 x 3 patches
    >>> x.tokens[:3], x.meta["pixels"]
    (['[CLS]', 'patch_0_0', 'patch_0_1'], 24)
    """
    import torch

    patch, side, prefix = _vision_geometry(checkpoint)
    if length is None:
        s = side
    else:
        L = check_int("length", length, minimum=prefix + 1)
        s = math.isqrt(max(L - prefix, 0))
        if s < 1 or prefix + s * s != L:
            near = ", ".join(map(str, image_lengths(checkpoint, L)))
            raise ParameterError(
                "length", f"{prefix} + a square number of patches (near {L}: {near})", L
            )
    px = s * patch
    proc = checkpoint.image_processor
    if proc is None:
        from transformers import ViTImageProcessorPil

        proc = ViTImageProcessorPil()
    kwargs: dict[str, Any] = {"size": {"height": px, "width": px}, "return_tensors": "pt"}
    if getattr(proc, "do_center_crop", False):
        kwargs["do_center_crop"] = False
    pixel_values = proc(np.asarray(image), **kwargs)["pixel_values"].to(torch.float32)
    if tuple(pixel_values.shape[-2:]) != (px, px):
        raise ParameterError("image", f"a processed image of {px}x{px} pixels", pixel_values.shape)
    tensors: dict[str, Any] = {"pixel_values": pixel_values}
    if s != side:
        tensors["interpolate_pos_encoding"] = True
    names = ["[CLS]", "[DIST]"][:prefix] + [f"[PREFIX{i}]" for i in range(2, prefix)]
    tokens = names + [f"patch_{r}_{c}" for r in range(s) for c in range(s)]
    digest = hashlib.sha256(np.ascontiguousarray(image).tobytes()).hexdigest()[:16]
    info = {"pixels": px, "patches_per_side": s, "prefix_tokens": prefix, **(meta or {})}
    return ModelInput(tensors, tokens, input_id or f"image:sha256:{digest}", info)


def corpus_image(
    checkpoint: Checkpoint,
    seed: int,
    length: int | None = None,
    *,
    crop: bool = False,
    corpus: str = "sklearn-sample-images",
) -> ModelInput:
    """A corpus image picked by ``numpy.random.default_rng(seed)``.

    With ``corpus = "sklearn-sample-images"`` (the default, and every locked design's
    input) the image is one of scikit-learn's two sample images, as below. With
    ``corpus = "packaged-images-v1"`` it is one of the 39 natural images of
    :data:`analysis.sources.corpora.images.PACKAGED_IMAGES_V1` (each hash-checked): image
    ``seed mod 39`` of the corpus's fixed order
    (:func:`analysis.sources.corpora.images.image_for_seed`), so distinct seeds within any
    39 consecutive ones read distinct images; the input id is
    ``"corpus:packaged-images-v1/<image id>"`` and ``meta["provenance"]`` holds the
    image's package, file, hash, source and licence. ``"packaged-images-v2"`` is the same
    with v1's 39 images and 14 more (53, ``seed mod 53``). ``crop`` works the same on any
    (:func:`pick_image` makes the pick without a model).

    The images (``china.jpg``, ``flower.jpg``) are sorted by file name; the input id is
    ``"corpus:sklearn.sample_images/<name>"``. With ``crop`` (keyword-only), a square crop
    of it drawn by the same generator after the image: side ``floor(f * min(height,
    width))`` with ``f ~ Uniform(0.5, 0.8)``, then its left and top edges uniform over the
    positions that keep it inside; the input id ends ``#crop=<left>,<top>,<side>``. Two
    images alone cannot give a study several distinct inputs per length, and crops of
    them are new inputs (other content, other patch statistics) whose identity is in their
    id; without ``crop`` the image is whole, as before.

    Examples
    --------
    >>> from transformers import ViTConfig, ViTModel
    >>> from analysis.sources import Checkpoint, corpus_image
    >>> config = ViTConfig(image_size=32, patch_size=8, hidden_size=8, num_hidden_layers=1,
    ...                    num_attention_heads=2, intermediate_size=16)
    >>> vit = Checkpoint.from_model(ViTModel(config), checkpoint_id="tiny-vit")
    >>> x = corpus_image(vit, 0)  # the native size: 1 + 16 positions
    >>> x.length, x.input_id
    (17, 'corpus:sklearn.sample_images/flower.jpg')
    >>> y = corpus_image(vit, 0, corpus="packaged-images-v1")
    >>> y.input_id, y.meta["provenance"]["distribution"]
    ('corpus:packaged-images-v1/skimage/rocket', 'scikit-image')
    """
    image, input_id, meta = pick_image(seed, crop=crop, corpus=corpus)
    return image_input(checkpoint, image, length, input_id=input_id, meta=meta)


def pick_image(
    seed: int, *, crop: bool = False, corpus: str = "sklearn-sample-images"
) -> tuple[np.ndarray, str, dict[str, Any]]:
    """The pixels, input id and ``meta`` :func:`corpus_image` uses for ``seed`` (no model).

    Examples
    --------
    >>> from analysis.sources.inputs import pick_image
    >>> image, input_id, meta = pick_image(0, crop=True)
    >>> input_id.startswith("corpus:sklearn.sample_images/flower.jpg#crop="), image.ndim
    (True, 3)
    """
    seed = check_int("seed", seed, minimum=0)
    rng = np.random.default_rng(seed)
    if corpus == "sklearn-sample-images":
        from sklearn.datasets import load_sample_images

        bunch = load_sample_images()
        pairs = sorted(zip((Path(f).name for f in bunch.filenames), bunch.images, strict=True))
        i = int(rng.integers(len(pairs)))
        name, image = pairs[i]
        input_id = f"corpus:sklearn.sample_images/{name}"
        meta: dict[str, Any] = {
            "corpus": "sklearn.sample_images",
            "image": name,
            "corpus_seed": seed,
        }
    else:
        from analysis.sources.corpora.images import image_for_seed, load_corpus_image

        item = image_for_seed(corpus, seed)
        image = load_corpus_image(item)
        input_id = f"corpus:{corpus}/{item.image_id}"
        meta = {
            "corpus": corpus,
            "image": item.image_id,
            "corpus_seed": seed,
            "provenance": item.provenance(),
        }
    if crop:
        h, w = image.shape[:2]
        side = int(np.floor(rng.uniform(0.5, 0.8) * min(h, w)))
        left = int(rng.integers(0, w - side + 1))
        top = int(rng.integers(0, h - side + 1))
        image = np.ascontiguousarray(image[top : top + side, left : left + side])
        input_id += f"#crop={left},{top},{side}"
        meta["crop"] = {"left": left, "top": top, "side": side}
    return image, input_id, meta
