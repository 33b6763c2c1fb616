"""Pure text scanning shared by the language and opening contracts: encoding corruption, sentences, weights.

Encoding corruption is checked BEFORE any language detection (docs/design.md, lingua: it reads Cyrillic
mojibake as Turkish with confidence 1.0 and Japanese mojibake as Portuguese). Three signs count:

* U+FFFD REPLACEMENT CHARACTER (a decoder already gave up on some bytes);
* C1 control characters U+0080..U+009F (UTF-8 continuation bytes decoded as Latin-1);
* mojibake: UTF-8 bytes decoded as cp1252/Latin-1, e.g. ``Ã©`` (é), ``â€™`` (’), ``Ð¿`` (п), ``æ—¥`` (日).
  A candidate is a lead char (U+00C2..U+00F4) followed by the right number of chars whose cp1252/Latin-1
  byte is a continuation byte (0x80..0xBF); it counts only if those bytes re-decode as UTF-8 to a character
  of a script a reply plausibly holds, so German ``»Straße«`` (ß + « would be U+07EB, NKo) does not count;
* byte-level BPE symbols left by a broken detokenizer: ``Ġ`` (U+0120) for a space and ``Ċ`` (U+010A) for a
  newline, e.g. ``HelloĠworldĊ``. Maltese writes Ġ and Ċ as letters (``Ġużeppi``, ``il-Ċirkewwa``, all caps
  ``MĠARR``), always at a word's start or inside a word after a hyphen, apostrophe or capital; so a symbol
  counts only *in a space's place*: glued to the end of a lower-case letter, a digit or punctuation (``oĠw``,
  ``.Ċ``), or doubled (``ĊĊ``), and `MIN_BPE_SYMBOLS` of them are needed. None of the 17 languages' corpus
  texts (tests/data/language_corpus.jsonl) has one; a broken detokenizer leaves one per word.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

#: Mojibake sequences needed before a reply is called corrupted (one lone pair can be a coincidence).
MIN_MOJIBAKE_SEQUENCES = 2
#: Replacement characters needed (one is already a decoder's confession).
MIN_REPLACEMENT_CHARS = 1
#: Byte-level BPE symbols in a space's or newline's place needed (a Maltese name can hold one Ġ).
MIN_BPE_SYMBOLS = 3
#: The byte-level BPE symbols of a space and a newline (GPT-2's bytes_to_unicode: 0x20 -> U+0120, 0x0A -> U+010A).
BPE_SYMBOLS = "\u0120\u010a"


def _continuation_map() -> dict[str, int]:
    out: dict[str, int] = {}
    for b in range(0x80, 0xC0):
        out[chr(b)] = b  # Latin-1 view (C1 controls and U+00A0..U+00BF)
        try:
            out[bytes([b]).decode("cp1252")] = b
        except UnicodeDecodeError:
            pass
    return out


_CONT = _continuation_map()
_CONT_CLASS = "".join(re.escape(c) for c in sorted(_CONT))
_MOJIBAKE = re.compile(
    rf"[\u00c2-\u00df][{_CONT_CLASS}]|[\u00e0-\u00ef][{_CONT_CLASS}]{{2}}|[\u00f0-\u00f4][{_CONT_CLASS}]{{3}}"
)
_C1 = re.compile(r"[\u0080-\u009f]")
#: Ġ/Ċ followed by something; it counts when the character before it is in `_is_space_place`.
_BPE = re.compile(r"[\u0120\u010a](?=\S)")
#: Punctuation a space or newline follows; a hyphen and apostrophes are not in it (Maltese `il-Ġnien`, `l-Ċens`).
_BEFORE_SPACE = set(".,;:!?)]}\"”»…")


def _is_space_place(prev: str) -> bool:
    """Whether a Ġ/Ċ after `prev` stands where a space or a newline was (see the module docstring)."""
    return prev.islower() or prev.isdigit() or prev in _BEFORE_SPACE or prev in BPE_SYMBOLS

#: Code point ranges a UTF-8 sequence must decode into to count as mojibake.
_PLAUSIBLE = (
    (0x00A0, 0x024F),  # Latin-1 supplement, Latin extended A/B
    (0x0300, 0x052F),  # combining marks, Greek, Cyrillic
    (0x0590, 0x06FF),  # Hebrew, Arabic
    (0x0900, 0x097F),  # Devanagari
    (0x0E00, 0x0E7F),  # Thai
    (0x1E00, 0x1EFF),  # Latin extended additional (Vietnamese)
    (0x2000, 0x206F),  # general punctuation (’ “ ” — …)
    (0x20A0, 0x20CF),  # currency
    (0x2100, 0x27BF),  # letterlike, arrows, symbols, dingbats
    (0x3000, 0x30FF),  # CJK punctuation, hiragana, katakana
    (0x3400, 0x9FFF),  # CJK ideographs
    (0xAC00, 0xD7AF),  # Hangul
    (0xFF00, 0xFFEF),  # full-width forms
    (0x1F300, 0x1FAFF),  # emoji
)


def _is_plausible(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in _PLAUSIBLE)


@dataclass(frozen=True, slots=True)
class Corruption:
    """What the encoding scan found; `evidence` is one line."""

    mojibake: int
    replacement: int
    c1_controls: int
    sample: str
    bpe_space: int = 0  # Ġ in a space's place
    bpe_newline: int = 0  # Ċ in a newline's place
    bpe_sample: str = ""

    @property
    def is_corrupted(self) -> bool:
        return (
            self.mojibake >= MIN_MOJIBAKE_SEQUENCES
            or self.replacement >= MIN_REPLACEMENT_CHARS
            or self.c1_controls >= 1
            or self.bpe_space + self.bpe_newline >= MIN_BPE_SYMBOLS
        )

    @property
    def evidence(self) -> str:
        parts = []
        if self.mojibake:
            parts.append(f"mojibake ({self.mojibake}) e.g. {self.sample!r}")
        if self.replacement:
            parts.append(f"U+FFFD ({self.replacement})")
        if self.c1_controls:
            parts.append(f"C1 controls ({self.c1_controls})")
        if self.bpe_space + self.bpe_newline:
            parts.append(
                f"BPE symbols Ġ U+0120 ({self.bpe_space}), Ċ U+010A ({self.bpe_newline}) "
                f"in place of spaces/newlines e.g. {self.bpe_sample!r}"
            )
        return ", ".join(parts) or "none"


def scan_encoding(text: str) -> Corruption:
    """Count the signs of encoding corruption in `text` (pure, linear)."""
    mojibake = 0
    sample = ""
    for m in _MOJIBAKE.finditer(text):
        raw = bytes([ord(m.group(0)[0])] + [_CONT[c] for c in m.group(0)[1:]])
        try:
            decoded = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if len(decoded) == 1 and _is_plausible(ord(decoded)):
            mojibake += 1
            sample = sample or m.group(0)
    spaces = newlines = 0
    bpe_sample = ""
    for m in _BPE.finditer(text):
        if m.start() == 0 or not _is_space_place(text[m.start() - 1]):
            continue
        if m.group(0) == "\u0120":
            spaces += 1
        else:
            newlines += 1
        bpe_sample = bpe_sample or text[max(0, m.start() - 8) : m.end() + 8]
    return Corruption(
        mojibake=mojibake,
        replacement=text.count("\ufffd"),
        c1_controls=len(_C1.findall(text)),
        sample=sample,
        bpe_space=spaces,
        bpe_newline=newlines,
        bpe_sample=bpe_sample,
    )


# --- sentences -----------------------------------------------------------------------------------------

_SPLIT = re.compile(
    r"(?<=[.!?…؟।])[\"'»”’」』)\]*_]*\s+"  # Western/Arabic/Devanagari end marks, then closing marks + space
    r"|(?<=[。！？])[\"'»”’」』)\]*_]*"  # CJK end marks need no space
    r"|\n+"
)
_MARKUP = re.compile(r"https?://\S+|`[^`]*`|[*_#>~|`\[\](){}<>]")


def split_sentences(text: str) -> list[str]:
    """Sentences of a reply, markup stripped; empty pieces dropped."""
    out = []
    for piece in _SPLIT.split(text):
        cleaned = _MARKUP.sub(" ", piece).strip(" \t\"'«»“”‘’「」『』—–-")
        if cleaned:
            out.append(cleaned)
    return out


def is_wide(ch: str) -> bool:
    """CJK ideographs, kana and Hangul: one character carries about a word."""
    cp = ord(ch)
    return (
        0x3040 <= cp <= 0x30FF or 0x3400 <= cp <= 0x9FFF or 0xAC00 <= cp <= 0xD7AF or 0xF900 <= cp <= 0xFAFF
    )


def letter_weight(text: str) -> int:
    """Letters in `text`, a wide (CJK/kana/Hangul) character counting 3: a script-neutral length."""
    weight = 0
    for ch in text:
        if ch.isalpha() or unicodedata.category(ch) in ("Mn", "Mc"):
            weight += 3 if is_wide(ch) else 1
    return weight


def has_kana(text: str) -> bool:
    return any(0x3040 <= ord(ch) <= 0x30FF and ch not in "・ー" for ch in text)


def is_han_only(text: str) -> bool:
    """Letters are all CJK ideographs (such a sentence can be Japanese or Chinese)."""
    letters = [ch for ch in text if ch.isalpha()]
    return bool(letters) and all(0x3400 <= ord(ch) <= 0x9FFF or 0xF900 <= ord(ch) <= 0xFAFF for ch in letters)
