"""The packaged text corpora (issue 50, parts 1, 2 and 6): size, provenance, distinct
documents per (seed, length), windows that never nest, and the locked studies' inputs
unchanged by the new options."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from analysis.prereg import schema
from analysis.prereg.design import load_design
from analysis.sources.corpora import TEXT_CORPORA, corpus_document, text_corpus
from analysis.sources.corpora.dedup import near_duplicates
from analysis.sources.corpora.tokenizers import text_tokenizer
from analysis.study.inputs import design_inputs
from analysis.study.plan import plan_study
from analysis.validation import ParameterError
from tests.study.conftest import pre_corpora_designs

ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT / "preregistration" / "paper-lengths.toml"
ATLAS = ROOT / "docs" / "results" / "paper-lengths" / "atlas.parquet"
LOCKED = pre_corpora_designs(ROOT)
OWN = 'text_corpus = "packaged-text-v1"\nwindows = "one document per (input, length)"\n'


@pytest.fixture(scope="module")
def corpus():
    return text_corpus("packaged-text-v1")


def _design(tmp_path: Path, extra: str):
    text = PAPER.read_text(encoding="utf-8").replace(
        'images = "crops"\n', 'images = "crops"\n' + extra
    )
    path = tmp_path / "design.toml"
    path.write_text(text, encoding="utf-8")
    return load_design(path, require_held_out=False)


def test_the_corpus_has_300_distinct_documents_each_with_source_and_licence(corpus):
    assert len(corpus) >= 300
    assert len(corpus.genres) >= 5 and max(corpus.genres.values()) < 0.5 * len(corpus)
    keys = [d.key for d in corpus.documents]
    assert len(set(keys)) == len(keys)
    assert len({d.sha256 for d in corpus.documents}) == len(corpus)
    for d in corpus.documents:
        assert d.source.strip() and d.licence.strip() and d.licence != "unknown"
        assert d.genre and d.language == "en" and d.version
    # near-duplicates were removed: none is left among the kept documents
    assert near_duplicates([d.text for d in corpus.documents]) == []
    assert corpus.dropped_near_duplicates > 0
    assert set(corpus.versions) >= {"python", "numpy", "scipy", "pandas"}


def test_the_order_and_ids_do_not_depend_on_the_build(corpus):
    text_corpus.cache_clear()
    again = text_corpus("packaged-text-v1")
    assert again is not corpus and again.digest == corpus.digest
    assert [again.input_id(d) for d in again.documents[:5]] == [
        corpus.input_id(d) for d in corpus.documents[:5]
    ]


def test_prereg_and_sources_name_the_same_corpora():
    from analysis.sources.corpora.images import IMAGE_CORPORA
    from analysis.sources.corpora.speech import SPEECH_CORPORA

    assert schema.TEXT_CORPORA == TEXT_CORPORA
    assert tuple(schema.IMAGE_CORPORA) == tuple(IMAGE_CORPORA)
    assert tuple(schema.SPEECH_CORPORA) == tuple(SPEECH_CORPORA)


def test_near_duplicates_are_caught_and_distinct_texts_kept():
    base = "The licence grants permission to copy, modify and distribute the software. " * 30
    other = "A numerical routine returns the singular values of a matrix in order. " * 30
    changed = base.replace("copy", "use", 2)  # a near-copy with a few words changed
    assert near_duplicates([base, other, changed]) == [2]
    assert near_duplicates([base, other]) == []


def test_distinct_documents_for_distinct_seeds_and_lengths(tmp_path):
    design = _design(tmp_path, OWN)
    tasks = plan_study(design).extractions
    text_checkpoints = {t.checkpoint for t in tasks if t.text_corpus == "packaged-text-v1"}
    assert len(text_checkpoints) == 9  # every source of the design carries the option
    for ck in text_checkpoints:
        mine = [t for t in tasks if t.checkpoint == ck]
        assert len(mine) == 9  # 3 lengths x 3 inputs
        seeds = [t.corpus_seed for t in mine]
        assert len(set(seeds)) == 9
        docs = {corpus_document("packaged-text-v1", s).key for s in seeds}
        assert len(docs) == 9
    # the default (shared) reads one seed at every length
    shared = plan_study(_design(tmp_path, 'text_corpus = "packaged-text-v1"\n')).extractions
    assert len({t.corpus_seed for t in shared if t.checkpoint == tasks[0].checkpoint}) == 3


@pytest.mark.parametrize("checkpoint", ["minilm", "flan-t5-small-span", "kokoro-albert"])
def test_no_input_of_length_64_is_a_prefix_of_one_of_128(tmp_path, checkpoint):
    tok = text_tokenizer(checkpoint)
    tasks = plan_study(_design(tmp_path, OWN)).extractions
    ck = tasks[0].checkpoint
    ids = {}
    for t in (t for t in tasks if t.checkpoint == ck):
        doc = corpus_document(t.text_corpus, t.corpus_seed)
        enc = tok(doc.text, truncation=True, max_length=t.length)["input_ids"]
        assert len(enc) == t.length  # every document holds L = 256 tokens
        ids.setdefault(t.length, []).append(list(enc))
    for short in ids[64]:
        for long in ids[128]:
            # special tokens at the end (</s>, [SEP]) aside, the texts differ
            assert long[: len(short) - 1] != short[:-1]


def test_windows_need_a_packaged_corpus(tmp_path):
    with pytest.raises(ParameterError, match="sampling.inputs.windows"):
        _design(tmp_path, 'windows = "one document per (input, length)"\n')
    with pytest.raises(ParameterError, match="sampling.inputs.text_corpus"):
        _design(tmp_path, 'text_corpus = "my-corpus"\n')


def test_the_locked_designs_plans_are_unchanged():
    for path in LOCKED:
        plan = plan_study(load_design(path, require_held_out=False))
        for t in plan.extractions:
            assert t.text_corpus == "pydoc_data.topics"
            assert "|text=" not in t.label


@pytest.mark.slow
def test_the_default_keeps_the_locked_study_input_ids():
    """Every text input of the shipped paper-lengths atlas, re-picked by the tokenizers."""
    atlas = pd.read_parquet(ATLAS, columns=["checkpoint", "corpus_seed", "length", "input_id"])
    shipped = {
        (r.checkpoint, int(r.corpus_seed), int(r.length)): r.input_id
        for r in atlas.drop_duplicates().itertuples()
        if str(r.input_id).startswith("corpus:pydoc_data.topics/")
    }
    assert len(shipped) == 6 * 9  # six text checkpoints, 3 lengths x 3 seeds
    rows = design_inputs(load_design(PAPER, require_held_out=False))
    picked = {
        (r["checkpoint"], r["seed"], r["length"]): r["input_id"]
        for r in rows
        if r["modality"] == "text"
    }
    assert picked == shipped


def test_shared_windows_do_nest(tmp_path):
    """The control: without the option a seed's 64 tokens are the start of its 128."""
    tok = text_tokenizer("minilm")
    tasks = plan_study(_design(tmp_path, 'text_corpus = "packaged-text-v1"\n')).extractions
    ck = tasks[0].checkpoint
    by = {(t.length, t.corpus_seed): t for t in tasks if t.checkpoint == ck}
    seed = tasks[0].corpus_seed
    short, long = (
        tok(corpus_document("packaged-text-v1", seed).text, truncation=True, max_length=L)[
            "input_ids"
        ]
        for L in (64, 128)
    )
    assert (64, seed) in by and (128, seed) in by
    assert long[:63] == short[:63]
