"""A packaged corpus's digest is in the lock: ``prereg check`` lists a changed one as drift,
``attnrank run`` refuses to extract under it, ``prereg amend`` records it; locks of designs
that read only the default corpora (every shipped one) are unchanged (issue 50)."""

from __future__ import annotations

import json
from pathlib import Path
from unittest import mock

import pytest

from analysis.cli import main
from analysis.prereg.amend import amend_design
from analysis.prereg.design import draw_held_out, load_design, write_held_out
from analysis.prereg.lock import PreregistrationError, check_design, lock_design, lock_path
from analysis.sources.corpora.digest import corpus_digest
from analysis.study.inputs import design_corpora
from tests.study.conftest import locked_designs, small_design_text

ROOT = Path(__file__).resolve().parents[2]
PACKAGED = 'source = "corpus"\ntext_corpus = "packaged-text-v1"\n'
WRONG = "0" * 64


def _design(tmp_path: Path, text: str) -> Path:
    (tmp_path / "preregistration").mkdir()
    path = tmp_path / "preregistration" / "corpus.toml"
    path.write_text(text, encoding="utf-8")
    write_held_out(path, draw_held_out(load_design(path, require_held_out=False).data))
    return path


@pytest.fixture
def packaged(tmp_path):
    text = small_design_text()
    assert text.count('source = "corpus"') == 1
    return _design(tmp_path, text.replace('source = "corpus"', PACKAGED.strip()))


def test_the_digest_covers_each_corpus_and_skips_the_defaults():
    from analysis.sources.corpora import text_corpus

    assert corpus_digest("packaged-text-v1") == text_corpus("packaged-text-v1").digest
    digests = {n: corpus_digest(n) for n in ("packaged-images-v1", "kokoro-ja-v1")}
    assert all(len(d) == 64 for d in digests.values())
    assert len(set(digests.values())) == 2
    for default in ("pydoc_data.topics", "sklearn-sample-images", "generated"):
        assert corpus_digest(default) is None


def test_an_image_digest_changes_with_a_pinned_file_hash():
    from analysis.sources.corpora import images

    before = corpus_digest("packaged-images-v1")
    first = images.PACKAGED_IMAGES_V1[0]
    changed = (first.__class__(**{**first.provenance(), "sha256": WRONG}),)
    table = {**images.IMAGE_CORPORA, "packaged-images-v1": changed + images.PACKAGED_IMAGES_V1[1:]}
    images._seed_order.cache_clear()
    try:
        with mock.patch.object(images, "IMAGE_CORPORA", table):
            assert corpus_digest("packaged-images-v1") != before
    finally:
        images._seed_order.cache_clear()
    assert corpus_digest("packaged-images-v1") == before


def test_shipped_designs_lock_the_digest_of_every_corpus_they_read():
    """The designs locked before the corpora read none and record none; the replication
    and its pilot record the digest of each corpus they read, as it is now."""
    seen = set()
    for path in locked_designs(ROOT):  # an unlocked draft's corpora are locked with it
        read = design_corpora(load_design(path))
        record = json.loads(lock_path(path).read_text(encoding="utf-8"))
        if not read:
            assert "corpora" not in record, path.name
            continue
        seen.add(path.stem)
        assert record["corpora"] == read, path.name  # name -> digest as built now
    assert seen >= {"replication", "replication-pilot"}


def test_the_cli_lock_records_the_digest_and_check_and_run_refuse_a_change(packaged, capsys):
    assert main(["prereg", "lock", str(packaged)]) == 0
    record = json.loads(lock_path(packaged).read_text(encoding="utf-8"))
    assert record["corpora"] == {"packaged-text-v1": corpus_digest("packaged-text-v1")}
    assert main(["prereg", "check", str(packaged)]) == 0

    capsys.readouterr()
    with mock.patch("analysis.sources.corpora.digest.corpus_digest", return_value=WRONG):
        assert main(["prereg", "check", str(packaged)]) == 1
        err = capsys.readouterr().err
        assert "corpus packaged-text-v1: contents changed" in err and "-> 000000000000" in err

        from analysis.study import StudyOptions, run_study, study_paths

        with pytest.raises(PreregistrationError, match="corpus packaged-text-v1: contents"):
            run_study(packaged, say=lambda _: None, options=StudyOptions(progress=False))
        assert not study_paths(packaged).store.exists() or not any(
            study_paths(packaged).store.rglob("*.npz")
        )
        # the amendment records the new digest, and the design matches its lock again
        new = amend_design(
            packaged, reason="other package versions", corpora={"packaged-text-v1": WRONG}
        )
        assert new["corpora"] == {"packaged-text-v1": WRONG}
        assert "corpus packaged-text-v1" in " ".join(new["amendments"][-1]["changes"])
        assert main(["prereg", "check", str(packaged)]) == 0


def test_an_amendment_without_corpora_keeps_the_locked_ones(packaged):
    lock_design(packaged, corpora={"packaged-text-v1": "a" * 64})
    text = packaged.read_text(encoding="utf-8").replace("alpha = 0.05", "alpha = 0.04", 1)
    packaged.write_text(text, encoding="utf-8")
    record = amend_design(packaged, reason="a smaller alpha")
    assert record["corpora"] == {"packaged-text-v1": "a" * 64}
    assert check_design(packaged, corpora={"packaged-text-v1": "a" * 64}) == []
    assert check_design(packaged, corpora={}) == [
        "corpus packaged-text-v1: in the lock, not read now"
    ]
