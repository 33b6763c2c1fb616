"""The language-integrity detector: local, deterministic, built on lingua (pure apart from one cached model).

`judge_text(text, expected)` answers, for one reply, in this order:

1. **encoding_corruption** (`fail`): U+FFFD, C1 controls or mojibake (tasks/core/contracts/textscan.py). Checked
   first: lingua reads Cyrillic mojibake as Turkish with confidence 1.0.
2. **too_short** (`inconclusive`): fewer than `MIN_REPLY_WEIGHT` letters (a CJK/kana/Hangul char counts 3).
3. Per sentence (a whole mixed paragraph looks pure to lingua: pt = 1.0 on a pt/es mix), each sentence with at
   least `MIN_SENTENCE_WEIGHT` letters is labelled *expected*, *other* (another language with confidence
   >= `SENTENCE_CONFIDENCE`) or *unsure*. Short sentences (names, "*nods*", "OK!") are never labelled.
   Script care: in a Japanese reply, a kanji-only sentence is never counted as Chinese.
4. **language_switch** (`fail`): the whole reply is confidently (>= `SWITCH_CONFIDENCE`) another language and
   fewer than `MIX_SHARE` of the labelled sentences are in the expected one (else it is a mix).
5. **language_mix** (`fail`): at least `MIX_MIN_SENTENCES` labelled sentences, at least `MIX_MIN_OTHER` of
   them in one and the same other language, and that language's share >= `MIX_SHARE` (stray misreadings
   scatter over languages; real mixing, like the pt/es incident, sticks to one).
6. **ok** (`pass`) when the whole reply's top language is the expected one.
7. **sentences_disagree** (`inconclusive`): the whole reply reads confidently (>= `SWITCH_CONFIDENCE`) as
   another language, yet at least `MIX_SHARE` of its labelled sentences are in the expected one (or, expecting
   Japanese, it reads as Chinese but has kana) and too few sentences are in one other language for the mix
   rule: the reply's reading and its sentences' disagree (a short pt/es mix: "detected (es 1.00)" while one of
   two sentences is pt). Not a switch, not a proven mix.
8. **low_confidence** (`inconclusive`) otherwise: no language reaches `SWITCH_CONFIDENCE` for the whole reply.
   So the reason and the confidence agree: `low_confidence` always comes with a confidence below
   `SWITCH_CONFIDENCE`. One or two stray sentences below the mix rule are reported as `mixed_share`, not failed.

The detector is built once per process (thread-safe lazy singleton) over the 17 interface languages only:
the product supports those, and a wider set invites Galician/Catalan confusions on pt/es text. Its models are
loaded lazily: lingua's rule filter (the text's script and its unique letters) picks the candidate languages of
each text and only their models are loaded, the first time a reply needs them. So a process judging the languages
in use holds theirs (a Latin-script rotation: the 10 Latin-script models, ~260 MB, not the 17 languages' ~380
MB) and the judgements are the same as with every model preloaded: the candidates and their models are. Accuracy
mode, measured by benchmarks/bench_langdetect.py on tests/data/language_corpus.jsonl: see `DEFAULT_MODE` below.
"""

from __future__ import annotations

import functools
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from lingua import IsoCode639_1, Language, LanguageDetector, LanguageDetectorBuilder

from tasks.config import ALL_LANGUAGES
from tasks.core.contracts.textscan import (
    has_kana,
    is_han_only,
    letter_weight,
    scan_encoding,
    split_sentences,
)
from tasks.core.types import Outcome

DetectorMode = Literal["high", "low"]

#: High accuracy, loaded lazily: the low-accuracy mode reports confidence 1.0 for most sentences (no graded
#: signal to threshold) and is weaker under ~120 characters, which is exactly a sentence. Measured costs are
#: in benchmarks/bench_langdetect.py's docstring.
DEFAULT_MODE: DetectorMode = "high"
#: Letters below which a reply is too short to judge (CJK/kana/Hangul count 3 each).
MIN_REPLY_WEIGHT = 40
#: Letters below which a sentence is not labelled at all (names, short actions, interjections).
MIN_SENTENCE_WEIGHT = 24
#: Confidence a sentence's top language needs to count as *other*.
SENTENCE_CONFIDENCE = 0.80
#: Confidence the whole reply's top language needs for a switch.
SWITCH_CONFIDENCE = 0.80
#: Mixing: labelled sentences needed, other sentences needed, and their share.
MIX_MIN_SENTENCES = 4
MIX_MIN_OTHER = 2
MIX_SHARE = 0.25

SUPPORTED_LANGUAGES: tuple[str, ...] = ALL_LANGUAGES

_LOCK = threading.Lock()
_DETECTORS: dict[str, LanguageDetector] = {}


def to_lingua(code: str) -> Language:
    return Language.from_iso_code_639_1(getattr(IsoCode639_1, code.upper()))


def _iso(language: Language) -> str:
    return str(language.iso_code_639_1.name).lower()


def build_detector(mode: DetectorMode = DEFAULT_MODE, *, preload: bool = False) -> LanguageDetector:
    """A fresh detector over the 17 languages (use `get_detector` to share one): its models loaded when a text
    first needs them (module docstring), or all of them now (`preload`)."""
    builder = LanguageDetectorBuilder.from_languages(*(to_lingua(c) for c in SUPPORTED_LANGUAGES))
    if mode == "low":
        builder = builder.with_low_accuracy_mode()
    if preload:
        builder = builder.with_preloaded_language_models()
    return builder.build()


def is_built(mode: DetectorMode = DEFAULT_MODE) -> bool:
    return mode in _DETECTORS


def get_detector(mode: DetectorMode = DEFAULT_MODE) -> LanguageDetector:
    """The process-wide detector for `mode`, built on first use (lingua detectors are thread-safe, lazy loading
    included)."""
    detector = _DETECTORS.get(mode)
    if detector is None:
        with _LOCK:
            detector = _DETECTORS.get(mode)
            if detector is None:
                detector = build_detector(mode)
                _DETECTORS[mode] = detector
    return detector


@dataclass(frozen=True, slots=True)
class SentenceLabel:
    text: str
    label: Literal["expected", "other", "unsure"]
    language: str | None
    confidence: float


@dataclass(frozen=True, slots=True)
class LanguageJudgement:
    """The judgement of one reply. `detected`/`confidence` are the whole reply's top language."""

    outcome: Outcome
    reason: str
    expected: str
    detected: str | None = None
    confidence: float = 0.0
    mixed_share: float = 0.0
    sentences: int = 0  # labelled sentences (expected + other)
    other_sentences: int = 0
    other_language: str | None = None  # the most common *other* language among sentences
    evidence: str = ""

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["outcome"] = str(self.outcome)
        out["confidence"] = round(self.confidence, 3)
        out["mixed_share"] = round(self.mixed_share, 3)
        return out


def _top(detector: LanguageDetector, text: str) -> tuple[str | None, float, dict[str, float]]:
    values = detector.compute_language_confidence_values(text)
    scores = {_iso(v.language): float(v.value) for v in values}
    if not values or values[0].value <= 0.0:
        return None, 0.0, scores
    return _iso(values[0].language), float(values[0].value), scores


def label_sentence(
    detector: LanguageDetector, sentence: str, expected: str, reply_has_kana: bool
) -> SentenceLabel:
    top, conf, _ = _top(detector, sentence)
    if top is None:
        return SentenceLabel(sentence, "unsure", None, 0.0)
    if top == expected:
        return SentenceLabel(sentence, "expected", top, conf)
    if expected == "ja" and top == "zh" and reply_has_kana and is_han_only(sentence):
        return SentenceLabel(sentence, "unsure", top, conf)  # kanji-only Japanese sentence
    if conf >= SENTENCE_CONFIDENCE:
        return SentenceLabel(sentence, "other", top, conf)
    return SentenceLabel(sentence, "unsure", top, conf)


def label_sentences(
    text: str, expected: str, detector: LanguageDetector | None = None
) -> list[SentenceLabel]:
    """Labels for every sentence long enough to judge (exposed for tests and the CLI's details)."""
    detector = detector or get_detector()
    kana = has_kana(text)
    return [
        label_sentence(detector, s, expected, kana)
        for s in split_sentences(text)
        if letter_weight(s) >= MIN_SENTENCE_WEIGHT
    ]


def judge_text(text: str, expected: str, *, detector: LanguageDetector | None = None) -> LanguageJudgement:
    """Judge one reply against the expected language (an ISO 639-1 code among SUPPORTED_LANGUAGES).

    With the process's own detector the judgement is remembered for the last JUDGED_CACHE replies: a round judges
    a first language reply in its probe task (does it need confirmations?) and again when it settles, and the
    detector is the round process's largest CPU cost (~30 % of its GIL time in a 40-model cycle)."""
    if detector is None:
        return _judge_with_default(text, expected)
    return _judge_text(text, expected, detector)


#: How many (reply, language) judgements the process keeps: more than the language replies of the rounds in flight.
JUDGED_CACHE = 4096


@functools.lru_cache(maxsize=JUDGED_CACHE)
def _judge_with_default(text: str, expected: str) -> LanguageJudgement:
    return _judge_text(text, expected, None)


def _judge_text(text: str, expected: str, detector: LanguageDetector | None) -> LanguageJudgement:
    expected = expected.lower()
    if expected not in SUPPORTED_LANGUAGES:
        raise ValueError(f"unsupported language {expected!r} (known: {', '.join(SUPPORTED_LANGUAGES)})")
    corruption = scan_encoding(text)
    if corruption.is_corrupted:
        return LanguageJudgement(Outcome.FAIL, "encoding_corruption", expected, evidence=corruption.evidence)
    weight = letter_weight(text)
    if weight < MIN_REPLY_WEIGHT:
        return LanguageJudgement(
            Outcome.INCONCLUSIVE, "too_short", expected, evidence=f"letters ({weight}) < {MIN_REPLY_WEIGHT}"
        )
    detector = detector or get_detector()
    top, conf, scores = _top(detector, " ".join(split_sentences(text)))
    s = _Sentences.of(label_sentences(text, expected, detector))
    base: dict[str, Any] = dict(
        expected=expected,
        detected=top,
        confidence=conf,
        mixed_share=s.other_share,
        sentences=s.labelled,
        other_sentences=s.n_other,
        other_language=s.other_language,
    )
    found = _switch_or_mix(text, expected, top, conf, s, base)
    if found is not None:
        return found
    if top == expected:
        return LanguageJudgement(
            Outcome.PASS,
            "ok",
            evidence=f"detected ({top} {conf:.2f}); other sentences {s.n_other}/{s.labelled}",
            **base,
        )
    return _undecided(text, expected, top, conf, scores.get(expected, 0.0), s, base)


@dataclass(frozen=True, slots=True)
class _Sentences:
    """A reply's sentences labelled: in the expected language, in others (the most frequent other one apart)."""

    n_expected: int
    n_other: int
    other_language: str | None
    n_top_other: int

    @classmethod
    def of(cls, labels: Sequence[SentenceLabel]) -> _Sentences:
        n_expected = sum(1 for lab in labels if lab.label == "expected")
        others = Counter(lab.language for lab in labels if lab.label == "other")
        other_lang, n_top_other = others.most_common(1)[0] if others else (None, 0)
        return cls(n_expected, sum(others.values()), other_lang, n_top_other)

    @property
    def labelled(self) -> int:
        return self.n_expected + self.n_other

    def _share(self, n: int) -> float:
        return n / self.labelled if self.labelled else 0.0

    @property
    def other_share(self) -> float:
        return self._share(self.n_other)

    @property
    def expected_share(self) -> float:
        return self._share(self.n_expected)

    @property
    def top_other_share(self) -> float:
        return self._share(self.n_top_other)


def _switch_or_mix(text: str, expected: str, top: str | None, conf: float, s: _Sentences,
                   base: dict[str, Any]) -> LanguageJudgement | None:
    """`language_switch` (the whole reply confidently in another language, few sentences in the expected one;
    Japanese with kana is never Chinese), else `language_mix` (enough sentences in one other language)."""
    if top is not None and top != expected and conf >= SWITCH_CONFIDENCE and s.expected_share < MIX_SHARE:
        if not (expected == "ja" and top == "zh" and has_kana(text)):
            return LanguageJudgement(
                Outcome.FAIL,
                "language_switch",
                evidence=f"detected ({top} {conf:.2f}) != expected ({expected}); "
                f"sentences {s.n_other}/{s.labelled} other",
                **base,
            )
    if s.labelled >= MIX_MIN_SENTENCES and s.n_top_other >= MIX_MIN_OTHER and s.top_other_share >= MIX_SHARE:
        return LanguageJudgement(
            Outcome.FAIL,
            "language_mix",
            evidence=f"sentences in {s.other_language} ({s.n_top_other}/{s.labelled} = {s.top_other_share:.0%}) "
            f">= {MIX_SHARE:.0%} of a {expected} reply",
            **base,
        )
    return None


def _undecided(text: str, expected: str, top: str | None, conf: float, exp_conf: float, s: _Sentences,
               base: dict[str, Any]) -> LanguageJudgement:
    """Neither passed nor failed: the sentences disagree with a confident detection (rule 7), or it is not
    confident."""
    if top is not None and conf >= SWITCH_CONFIDENCE:  # confident, but not a switch: rule 7
        script = "; kana in the reply (Japanese script)" if expected == "ja" and has_kana(text) else ""
        return LanguageJudgement(
            Outcome.INCONCLUSIVE,
            "sentences_disagree",
            evidence=f"detected ({top} {conf:.2f}) for the whole reply, but sentences in {expected} "
            f"{s.n_expected}/{s.labelled} = {s.expected_share:.0%} (a switch needs < {MIX_SHARE:.0%}){script}; "
            f"in {s.other_language or '-'} {s.n_top_other}/{s.labelled} (a mix needs {MIX_MIN_OTHER} of >= "
            f"{MIX_MIN_SENTENCES})",
            **base,
        )
    return LanguageJudgement(
        Outcome.INCONCLUSIVE,
        "low_confidence",
        evidence=f"detected ({top} {conf:.2f}), {expected} ({exp_conf:.2f}); "
        f"other sentences {s.n_other}/{s.labelled}",
        **base,
    )
