"""What a design asks to compute: inputs to extract, synthetic matrices, grids, blocks.

Pure functions of the parsed design (:class:`analysis.prereg.Design`); nothing here reads
or writes a file.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any

from analysis.prereg.corpora import IMAGE_CORPORA, OWN_DOCUMENT, SPEECH_CORPORA, TEXT_CORPORA
from analysis.validation import ParameterError, check_int

__all__ = [
    "SYNTHETIC_FAMILIES",
    "ExtractionTask",
    "StudyPlan",
    "SyntheticTask",
    "missing_checkpoints",
    "plan_study",
]

SYNTHETIC_FAMILIES = ("spherical", "ball")
#: The corpora of every locked study (:func:`analysis.sources.corpus_text`,
#: :func:`analysis.sources.corpus_image`, :func:`analysis.sources.audio.corpus_audio`).
DEFAULT_TEXT_CORPUS = TEXT_CORPORA[0]
DEFAULT_IMAGE_CORPUS = IMAGE_CORPORA[0]
DEFAULT_SPEECH_CORPUS = SPEECH_CORPORA[0]


@dataclasses.dataclass(frozen=True)
class ExtractionTask:
    """One forward pass: a checkpoint on one input of one length.

    Examples
    --------
    Its label keys the input in ``extractions.json``
    (:class:`analysis.study.records.ExtractionIndex`):

    >>> from analysis.study.plan import ExtractionTask
    >>> ExtractionTask("org/tiny", 16, 0, ((0, 0), (1, 2))).label
    'org/tiny|L=16|corpus-seed=0'
    """

    checkpoint: str
    length: int
    corpus_seed: int
    heads: tuple[tuple[int, int], ...]  # (layer, head) pairs the design names
    image_crop: bool = False  # [sampling.inputs] images = "crops": a seeded crop of an image
    # [sampling.inputs] text_corpus / image_corpus / speech_corpus: the corpus each modality
    # reads (analysis.sources.corpora); every task carries all three, the model picks one
    text_corpus: str = DEFAULT_TEXT_CORPUS
    image_corpus: str = DEFAULT_IMAGE_CORPUS
    speech_corpus: str = DEFAULT_SPEECH_CORPUS

    @property
    def label(self) -> str:
        crop = "|crop" if self.image_crop else ""
        corpora = ""  # only a design that names another corpus changes its labels
        for tag, name, default in (
            ("text", self.text_corpus, DEFAULT_TEXT_CORPUS),
            ("image", self.image_corpus, DEFAULT_IMAGE_CORPUS),
            ("speech", self.speech_corpus, DEFAULT_SPEECH_CORPUS),
        ):
            if name != default:
                corpora += f"|{tag}={name}"
        return f"{self.checkpoint}|L={self.length}|corpus-seed={self.corpus_seed}{crop}{corpora}"


@dataclasses.dataclass(frozen=True)
class SyntheticTask:
    """One synthetic matrix of a family (its beta is its temperature).

    Examples
    --------
    >>> from analysis.study.plan import SyntheticTask
    >>> SyntheticTask("ball", n=8, d=2, beta=4.0, seed=1).label
    'ball|n=8|d=2|beta=4.0|seed=1'
    """

    family: str
    n: int
    d: int
    beta: float
    seed: int

    @property
    def label(self) -> str:
        return f"{self.family}|n={self.n}|d={self.d}|beta={self.beta!r}|seed={self.seed}"


@dataclasses.dataclass(frozen=True)
class StudyPlan:
    """Everything a design asks to compute.

    ``blocks`` are the models' blocks, ``plugins`` the design's plugin modules and
    ``versions`` the built-in blocks it uses at a version other than 1, as
    ``(block, version)`` pairs (``(("native", 2),)``; ``[descriptors] versions``).

    Examples
    --------
    Made by :func:`plan_study`; two heads on two inputs, at 2 temperatures x 3 eps:

    >>> from analysis.study.plan import ExtractionTask, StudyPlan
    >>> heads = ((0, 0), (1, 3))
    >>> plan = StudyPlan(
    ...     extractions=tuple(ExtractionTask("org/a", L, 0, heads) for L in (16, 32)),
    ...     synthetic=(), temperatures=(0.5, 1.0), eps=(0.05, 0.1, 0.2), effort="fast",
    ...     blocks=("baseline",), plugins=(),
    ... )
    >>> plan.checkpoints, plan.cells_per_matrix, plan.planned_real_cells  # 4 matrices x 6
    (('org/a',), 6, 24)
    """

    extractions: tuple[ExtractionTask, ...]
    synthetic: tuple[SyntheticTask, ...]
    temperatures: tuple[float, ...]
    eps: tuple[float, ...]
    effort: str
    blocks: tuple[str, ...]
    plugins: tuple[str, ...]
    versions: tuple[tuple[str, int], ...] = ()

    @property
    def checkpoints(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t.checkpoint for t in self.extractions))

    @property
    def cells_per_matrix(self) -> int:
        """Cells of one real matrix: every (temperature, eps) of the design."""
        return len(self.temperatures) * len(self.eps)

    @property
    def planned_real_cells(self) -> int:
        """Cells of every planned real matrix (every named head of every input)."""
        return sum(len(t.heads) for t in self.extractions) * self.cells_per_matrix


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def plan_study(design: Any) -> StudyPlan:
    """What a parsed, validated design (:class:`analysis.prereg.Design`) asks to compute.

    Inputs: ``[sampling.inputs] seed = s, per_length = k`` gives corpus seeds s .. s+k-1 for
    every (checkpoint, length); a source's own ``lengths`` overrides ``sampling.lengths``;
    ``images = "crops"`` makes an image model's input a seeded crop of the sample image
    (:func:`analysis.sources.corpus_image`), ``"whole"`` (the default) the whole image.
    ``text_corpus``, ``image_corpus`` and ``speech_corpus`` name the corpus each modality
    reads (defaults ``pydoc_data.topics``, ``sklearn-sample-images`` and ``generated``, the
    locked studies'; :mod:`analysis.prereg.corpora`, docs/sources.md "Input corpora"); a
    named corpus adds ``|text=...``, ``|image=...`` or ``|speech=...`` to the labels.
    ``windows = "one document per (input, length)"`` gives the j-th length of a source
    seeds s + j k .. s + j k + k - 1 (every modality), so no seed is read at two lengths
    and, in a packaged corpus (item ``seed mod n``), each (input, length) reads its own
    document, image or clip; the default ``"shared"`` reads seeds s .. s+k-1 at every
    length.

    Examples
    --------
    The parts of a design that the plan reads (a real one comes from
    :func:`analysis.prereg.load_design`): 2 x 2 heads on 2 lengths x 2 corpus seeds, and
    two synthetic matrices:

    >>> from pathlib import Path
    >>> from analysis.prereg.design import Design
    >>> from analysis.study.plan import plan_study
    >>> sampling = {
    ...     "temperatures": [1.0], "eps": [0.1, 0.2], "lengths": [16, 32],
    ...     "inputs": {"source": "corpus", "seed": 5, "per_length": 2},
    ...     "sources": [
    ...         {"kind": "checkpoint", "checkpoint": "org/tiny", "layers": 2, "heads": 2},
    ...         {"kind": "synthetic", "family": "ball", "n": 8, "d": 2, "beta": [1.0, 4.0]},
    ...     ],
    ... }
    >>> data = {"sampling": sampling, "models": {"M0": ["baseline"], "M1": ["baseline", "native"]}}
    >>> plan = plan_study(Design(Path("toy.toml"), data, sha256="0" * 64))
    >>> for t in plan.extractions:
    ...     print(t.label)
    org/tiny|L=16|corpus-seed=5
    org/tiny|L=16|corpus-seed=6
    org/tiny|L=32|corpus-seed=5
    org/tiny|L=32|corpus-seed=6
    >>> plan.extractions[0].heads, plan.blocks, plan.effort
    (((0, 0), (0, 1), (1, 0), (1, 1)), ('baseline', 'native'), 'default')
    >>> [t.label for t in plan.synthetic]
    ['ball|n=8|d=2|beta=1.0|seed=0', 'ball|n=8|d=2|beta=4.0|seed=0']
    >>> plan.planned_real_cells  # 4 inputs x 4 heads x 1 temperature x 2 eps
    32
    """
    from analysis.prereg.corpora import (
        check_windows,
        checkpoint_modality,
        input_corpora,
        source_corpus,
    )
    from analysis.prereg.descriptor_versions import design_block_versions
    from analysis.prereg.schema import population

    data = design.data
    sampling = data["sampling"]
    inputs = sampling.get("inputs", {})
    if inputs.get("source", "corpus") != "corpus":
        raise ParameterError("sampling.inputs.source", "corpus", inputs.get("source"))
    seed0 = check_int("sampling.inputs.seed", inputs.get("seed", 0), minimum=0)
    per_length = check_int("sampling.inputs.per_length", inputs.get("per_length", 1), minimum=1)
    images = inputs.get("images", "whole")
    if images not in ("whole", "crops"):
        raise ParameterError("sampling.inputs.images", "whole or crops", images)
    corpora = input_corpora(inputs)
    check_windows(inputs, sampling["sources"], sampling.get("lengths"))
    own = corpora["windows"] == OWN_DOCUMENT
    corpora_of = {k: corpora[k] for k in ("text_corpus", "image_corpus", "speech_corpus")}
    heads_of: dict[str, list[tuple[int, int]]] = {}
    for head_id in population(data):
        ck, layer, head = head_id.rsplit(":", 2)
        heads_of.setdefault(ck, []).append((int(layer), int(head)))
    extractions, synthetic = [], []
    for i, src in enumerate(sampling["sources"]):
        if src["kind"] == "checkpoint":
            kind = f"{checkpoint_modality(str(src['checkpoint']))}_corpus"  # its own may win
            lengths = src.get("lengths", sampling.get("lengths"))
            if lengths is None:
                raise ParameterError(
                    f"sampling.sources[{i}].lengths", "lengths here or in [sampling]", None
                )
            for j, L in enumerate(_as_list(lengths)):
                start = seed0 + j * per_length if own else seed0
                for s in range(start, start + per_length):
                    extractions.append(
                        ExtractionTask(
                            src["checkpoint"],
                            check_int(f"sampling.sources[{i}].lengths", L, minimum=2),
                            s,
                            tuple(heads_of[src["checkpoint"]]),
                            image_crop=images == "crops",
                            **{**corpora_of, kind: source_corpus(inputs, src, i)},
                        )
                    )
        else:
            family = src["family"]
            if family not in SYNTHETIC_FAMILIES:
                raise ParameterError(
                    f"sampling.sources[{i}].family", " or ".join(SYNTHETIC_FAMILIES), family
                )
            for d in _as_list(src["d"]):
                for n in _as_list(src["n"]):
                    for beta in _as_list(src["beta"]):
                        for seed in _as_list(src.get("seeds", [0])):
                            synthetic.append(
                                SyntheticTask(family, int(n), int(d), float(beta), int(seed))
                            )
    blocks = tuple(dict.fromkeys(b for blocks in design.models.values() for b in blocks))
    return StudyPlan(
        extractions=tuple(extractions),
        synthetic=tuple(synthetic),
        temperatures=tuple(float(t) for t in sampling["temperatures"]),
        eps=tuple(float(e) for e in sampling["eps"]),
        effort=str(data.get("effort", "default")),
        blocks=blocks,
        plugins=tuple(data.get("descriptors", {}).get("plugins", [])),
        versions=tuple((b, v) for b, v in design_block_versions(data).items() if v != 1),
    )


def missing_checkpoints(
    plan: StudyPlan, checkpoint_paths: Mapping[str, str | os.PathLike] | None = None
) -> list[tuple[str, str]]:
    """Checkpoints of ``plan`` not available offline, with how to provide each.

    Returns
    -------
    list of (checkpoint id, message)

    Examples
    --------
    The packaged MiniLM checkpoint is on disk; ``org/absent`` is not, here or mapped:

    >>> from analysis.study.plan import ExtractionTask, StudyPlan, missing_checkpoints
    >>> tasks = tuple(
    ...     ExtractionTask(ck, 16, 0, ((0, 0),))
    ...     for ck in ("sentence-transformers/all-MiniLM-L6-v2", "org/absent")
    ... )
    >>> plan = StudyPlan(tasks, (), (1.0,), (0.1,), "fast", ("baseline",), ())
    >>> [ck for ck, _ in missing_checkpoints(plan)]
    ['org/absent']
    >>> [ck for ck, _ in missing_checkpoints(plan, {"org/absent": "no-such-folder"})]
    ['org/absent']
    >>> missing_checkpoints(plan, {"org/absent": "minilm"})  # a stand-in on disk
    []
    """
    from analysis.sources.checkpoints import resolve_checkpoint

    paths = dict(checkpoint_paths or {})
    missing = []
    for ck in plan.checkpoints:
        where = paths.get(ck, ck)
        try:
            resolve_checkpoint(where)
        except ParameterError as exc:
            missing.append((ck, str(exc)))
    return missing
