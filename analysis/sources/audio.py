"""Audio inputs for speech encoders: a generated clip turned into log-mel frames.

Offline and without any audio file: :func:`generated_clip` synthesizes a deterministic,
speech-like waveform from a seed (voiced syllables with a moving pitch and formant-shaped
harmonics, separated by short pauses, over low noise), and :func:`audio_input` turns a
waveform into Whisper's log-mel features with transformers' ``WhisperFeatureExtractor``
(16 kHz, 25 ms window, 10 ms hop). A Whisper encoder halves the frame rate (its second
convolution has stride 2), so ``L`` encoder positions take ``2 L`` frames, i.e.
``320 L`` samples (20 ms of audio per position): the length grid of an extraction is
the clip's duration.
"""

from __future__ import annotations

import hashlib
import inspect
from typing import Any

import numpy as np

from analysis.sources.models import Checkpoint, ModelInput
from analysis.validation import ParameterError, check_int

__all__ = [
    "HOP_LENGTH",
    "SAMPLING_RATE",
    "audio_input",
    "corpus_audio",
    "generated_clip",
    "is_audio",
]

#: Whisper's sampling rate (Hz) and frame hop (samples).
SAMPLING_RATE = 16_000
HOP_LENGTH = 160


def is_audio(checkpoint: Checkpoint) -> bool:
    """Whether the checkpoint's model takes log-mel ``input_features`` (a speech encoder).

    Examples
    --------
    >>> from analysis.sources import load_checkpoint
    >>> from analysis.sources.audio import is_audio
    >>> is_audio(load_checkpoint("minilm"))
    False
    """
    return "input_features" in inspect.signature(checkpoint.model.forward).parameters


def generated_clip(seed: int, n_samples: int) -> np.ndarray:
    """A deterministic speech-like waveform of ``n_samples`` samples at 16 kHz.

    Parameters
    ----------
    seed : int
        Chooses the clip; the same seed gives the same samples, and a shorter clip of a
        seed is a prefix of a longer one.
    n_samples : int
        Length in samples.

    Returns
    -------
    ndarray, float32, ``[n_samples]``
        Amplitudes below 0.5.

    Notes
    -----
    The clip is a sequence of syllables drawn from ``numpy.random.default_rng(seed)``:
    each lasts 80-250 ms and is either voiced (a fundamental of 90-240 Hz gliding by up
    to 20 %, its harmonics up to 4 kHz weighted by three Gaussian formant bumps drawn near
    a vowel's first three formants, under a Hann envelope) or a 30-120 ms pause; Gaussian
    noise of standard deviation 0.005 is added throughout (each syllable peaks at 0.18 to
    0.45). It is not speech, but it has speech's
    spectro-temporal structure (harmonic stacks, formants, onsets, pauses) at the
    encoder's time scale.

    Examples
    --------
    >>> from analysis.sources.audio import generated_clip
    >>> x = generated_clip(0, 3200)
    >>> x.shape, x.dtype, bool(abs(x).max() < 0.5)
    ((3200,), dtype('float32'), True)
    >>> bool((generated_clip(0, 1000) == generated_clip(0, 40000)[:1000]).all())
    True
    """
    seed = check_int("seed", seed, minimum=0)
    n_samples = check_int("n_samples", n_samples, minimum=1)
    rng = np.random.default_rng(seed)
    sr = SAMPLING_RATE
    pieces: list[np.ndarray] = []
    total = 0
    # Vowel formants (F1, F2, F3) in Hz: /a/, /e/, /i/, /o/, /u/.
    vowels = np.array(
        [
            [730, 1090, 2440],
            [530, 1840, 2480],
            [270, 2290, 3010],
            [570, 840, 2410],
            [300, 870, 2240],
        ]
    )
    while total < n_samples:
        if rng.random() < 0.2:
            n = int(rng.uniform(0.03, 0.12) * sr)
            piece = np.zeros(n)
        else:
            n = int(rng.uniform(0.08, 0.25) * sr)
            t = np.arange(n) / sr
            f0 = rng.uniform(90, 240) * (1 + rng.uniform(-0.2, 0.2) * t / t[-1])
            phase = 2 * np.pi * np.cumsum(f0) / sr
            formants = vowels[rng.integers(len(vowels))] * rng.uniform(0.9, 1.1, 3)
            piece = np.zeros(n)
            for k in range(1, int(4000 / f0.max()) + 1):
                weight = sum(np.exp(-0.5 * ((k * f0 - f) / (0.1 * f + 60)) ** 2) for f in formants)
                piece += weight * np.sin(k * phase) / k**0.5
            piece *= np.hanning(n)
            piece *= 0.45 * rng.uniform(0.4, 1.0) / np.abs(piece).max()
        # Each piece depends only on its own draws, in order: a clip is a prefix of any
        # longer clip of the same seed.
        pieces.append(piece + 0.005 * rng.standard_normal(n))
        total += n
    clip = np.concatenate(pieces)
    return clip[:n_samples].astype(np.float32)


def _check_audio_length(checkpoint: Checkpoint, length: Any) -> int:
    L = check_int("length", length, minimum=1)
    limit = getattr(checkpoint.model.config, "max_source_positions", None)
    if isinstance(limit, int) and L > limit:
        raise ParameterError(
            "length", f"an integer <= {limit} encoder positions for this checkpoint", L
        )
    return L


def audio_input(
    checkpoint: Checkpoint,
    waveform: np.ndarray,
    length: int,
    *,
    input_id: str | None = None,
    meta: dict[str, Any] | None = None,
) -> ModelInput:
    """Log-mel features of the first ``2 L`` frames of a 16 kHz waveform.

    Parameters
    ----------
    checkpoint : Checkpoint
        A speech encoder (:func:`is_audio`); its ``num_mel_bins`` sets the mel bands.
    waveform : array, ``[n]``
        Mono samples at 16 kHz, at least ``320 L`` of them (the first ``320 L`` are used).
    length : int
        L, the number of encoder positions.
    input_id : str, optional
        Defaults to ``"audio:sha256:<first 16 hex of the float32 samples used>"``.
    meta : dict, optional
        Extra entries for the input's ``meta``.

    Returns
    -------
    ModelInput
        ``input_features`` ``[1, mel bins, 2 L]`` float32; tokens ``t0000`` ... labelling
        each position by its 20 ms step.

    Raises
    ------
    ParameterError
        Naming ``length`` (beyond the encoder's positions, or more than the waveform
        holds) or ``checkpoint`` (not a speech encoder).

    Notes
    -----
    The features are ``WhisperFeatureExtractor``'s: a 400-point STFT with a Hann window
    and a 160-sample hop, ``num_mel_bins`` Slaney mel bands, ``log10`` clipped at 8 below
    the clip's maximum and mapped by ``(x + 4) / 4``; the STFT's last frame is dropped, so
    ``320 L`` samples give exactly ``2 L`` frames.

    Examples
    --------
    Half a second of a 440 Hz tone through Whisper tiny.en's front end, 25 positions:

    >>> import numpy as np
    >>> from analysis.sources import load_checkpoint
    >>> from analysis.sources.audio import audio_input
    >>> tone = 0.1 * np.sin(2 * np.pi * 440 * np.arange(8000) / 16000)
    >>> x = audio_input(load_checkpoint("whisper-tiny.en"), tone, 25)
    >>> tuple(x.tensors["input_features"].shape), x.tokens[:2], x.meta["samples"]
    ((1, 80, 50), ['t0000', 't0001'], 8000)
    """
    import torch
    from transformers import WhisperFeatureExtractor

    if not is_audio(checkpoint):
        raise ParameterError(
            "checkpoint", "a speech encoder (input_features)", checkpoint.checkpoint_id
        )
    L = _check_audio_length(checkpoint, length)
    n = 2 * L * HOP_LENGTH
    wave = np.asarray(waveform, dtype=np.float32).reshape(-1)
    if wave.size < n:
        raise ParameterError(
            "length", f"at most {wave.size // (2 * HOP_LENGTH)} (the clip's duration)", L
        )
    wave = wave[:n]
    fe = WhisperFeatureExtractor(
        feature_size=int(checkpoint.model.config.num_mel_bins),
        sampling_rate=SAMPLING_RATE,
        hop_length=HOP_LENGTH,
    )
    feats = fe(
        wave,
        sampling_rate=SAMPLING_RATE,
        padding="max_length",
        max_length=n,
        truncation=True,
        return_tensors="np",
    )["input_features"]
    if feats.shape[-1] != 2 * L:
        raise ParameterError("length", f"{2 * L} mel frames", feats.shape)
    digest = hashlib.sha256(wave.tobytes()).hexdigest()[:16]
    info = {"samples": n, "sampling_rate": SAMPLING_RATE, "mel_frames": 2 * L, **(meta or {})}
    return ModelInput(
        {"input_features": torch.from_numpy(np.ascontiguousarray(feats, dtype=np.float32))},
        [f"t{i:04d}" for i in range(L)],
        input_id or f"audio:sha256:{digest}",
        info,
    )


def corpus_audio(
    checkpoint: Checkpoint, seed: int, length: int, *, corpus: str = "generated"
) -> ModelInput:
    """A corpus clip at ``L`` encoder positions.

    With ``corpus = "generated"`` (the default, and every locked design's input) the
    generated clip of ``seed`` (:func:`generated_clip`). With ``corpus = "kokoro-ja-v1"``
    one of the 24 synthesised speech clips of
    :data:`analysis.sources.corpora.speech.KOKORO_JA_V1`: clip ``seed mod 24`` of the
    corpus's fixed order (:func:`analysis.sources.corpora.speech.clip_for_seed`), so
    distinct seeds within any 24 consecutive ones read distinct clips; its first
    ``320 L`` samples are used, the input
    id is ``"audio:kokoro-ja-v1/<clip id>"`` and ``meta["provenance"]`` holds the
    transcript, voice, phonemes, model hash and licence.

    Raises
    ------
    ParameterError
        Naming ``length`` when the clip is shorter than ``L`` positions (20 ms each);
        ``speech`` for an unknown corpus.

    Examples
    --------
    >>> from analysis.sources import load_checkpoint
    >>> from analysis.sources.audio import corpus_audio
    >>> x = corpus_audio(load_checkpoint("whisper-tiny.en"), 0, 32)
    >>> x.length, tuple(x.tensors["input_features"].shape), x.input_id
    (32, (1, 80, 64), 'audio:generated/seed=0')
    """
    seed = check_int("corpus_seed", seed, minimum=0)
    L = _check_audio_length(checkpoint, length)
    if corpus != "generated":
        from analysis.sources.corpora.speech import clip_for_seed, clip_waveform

        clip = clip_for_seed(corpus, seed)
        return audio_input(
            checkpoint,
            clip_waveform(clip),
            L,
            input_id=f"audio:{corpus}/{clip.clip_id}",
            meta={"corpus": corpus, "corpus_seed": seed, "provenance": clip.provenance()},
        )
    clip = generated_clip(seed, 2 * L * HOP_LENGTH)
    return audio_input(
        checkpoint,
        clip,
        L,
        input_id=f"audio:generated/seed={seed}",
        meta={"corpus": "analysis.sources.audio.generated_clip", "corpus_seed": seed},
    )
