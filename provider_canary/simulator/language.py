"""A small, dependency-free language guess for the simulator: script first, then Latin stopwords.

Good enough to answer a prompt in its own language; the canary's real judge is lingua (tasks/contracts).
"""

from __future__ import annotations

import functools
import re
from collections import Counter

from tasks.config import ALL_LANGUAGES

LANGUAGES = ALL_LANGUAGES

_STOPWORDS: dict[str, frozenset[str]] = {
    lang: frozenset(words.split())
    for lang, words in {
        "en": "the and you to of is are i that it in what this for with was my me be have not will "
        "there your do we before at on they he she his her would can just so if",
        "es": "el la los las de que y en un una es por con para no se del lo mi tu te pero más como qué "
        "está hay muy antes ya todavía también ella él al sus esto eso",
        "pt": "o a os as de que e em um uma é não do da dos das no na você com para mas se ao eu meu "
        "minha está tem isso ainda só também ela ele pelo pela seu sua vai",
        "fr": "le la les de des du et est un une que qui pas je tu il elle nous vous dans pour sur avec "
        "ce mais ne au c'est j'ai se sont cette mon ton",
        "de": "der die das und ist nicht ich du er sie es wir ein eine zu den dem mit auf für von auch "
        "noch dass aber wenn bist hat sich mir dich uns",
        "it": "il lo la gli le di che e è un una per non con mi ti si del della sono ma come ci anche "
        "questo sei ho al nel alla cosa",
        "pl": "i w się nie na z że do to jest jak ale co czy mnie ci tak już jeszcze przy od po być dla "
        "go jego",
        "tr": "ve bir bu da de için ile ne çok ama mı mi mu mü değil gibi daha sen ben o var yok olarak "
        "kadar",
        "id": "yang dan di ke dari ini itu aku kamu tidak dengan untuk ada akan sudah saya kita dia "
        "bisa juga apa lebih karena atau",
        "vi": "và là của không có tôi anh em một những các được cho người này đã sẽ với chúng ta rất đi",
    }.items()
}

_SPECIAL: dict[str, tuple[str, float]] = {
    "vi": ("ăđơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ", 3.0),
    "pl": ("ąćęłńśźż", 2.0),
    "tr": ("ğış", 2.0),
    "de": ("äß", 1.5),
    "es": ("ñ¿¡", 2.0),
    "pt": ("ãõ", 2.0),
    "fr": ("èêëœâîûù", 1.0),
    "it": ("ìò", 1.0),
}

_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)


def _script(ch: str) -> str | None:
    o = ord(ch)
    if 0x3040 <= o <= 0x30FF or 0x31F0 <= o <= 0x31FF:
        return "kana"
    if 0xAC00 <= o <= 0xD7AF or 0x1100 <= o <= 0x11FF or 0x3130 <= o <= 0x318F:
        return "hangul"
    if 0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF:
        return "han"
    if 0x0400 <= o <= 0x04FF:
        return "cyrillic"
    if 0x0600 <= o <= 0x06FF or 0x0750 <= o <= 0x077F:
        return "arabic"
    if 0x0900 <= o <= 0x097F:
        return "devanagari"
    if ch.isalpha():
        return "latin"
    return None


@functools.lru_cache(maxsize=1024)
def detect_language(text: str, default: str = "en") -> str:
    """Best guess among the 17 languages; `default` when there is no letter at all. Remembered: the
    canary's prompts are a fixed set, and this was a tenth of the simulator's CPU under load."""
    scripts = Counter(s for s in map(_script, text) if s)
    if not scripts:
        return default
    if scripts["kana"]:
        return "ja"
    top = max(("hangul", "han", "cyrillic", "arabic", "devanagari", "latin"), key=lambda s: scripts[s])
    if top == "hangul":
        return "ko"
    if top == "han":
        return "zh"
    if top == "cyrillic":
        return _cyrillic(text)
    if top == "arabic":
        return "ar"
    if top == "devanagari":
        return "hi"
    return _latin(text, default)


_UK_WORDS = frozenset("але цю що це та як мене тебе ти він вона вони було буде".split())
_RU_WORDS = frozenset("но эту что это как меня тебя ты он она они было будет".split())


def _cyrillic(text: str) -> str:
    if re.search(r"[іїєґІЇЄҐ]", text):
        return "uk"
    if re.search(r"[ыэъёЫЭЪЁ]", text):
        return "ru"
    words = _WORD.findall(text.lower())
    return "uk" if sum(w in _UK_WORDS for w in words) > sum(w in _RU_WORDS for w in words) else "ru"


def _latin(text: str, default: str) -> str:
    lower = text.lower()
    words = _WORD.findall(lower)
    scores: dict[str, float] = dict.fromkeys(_STOPWORDS, 0.0)
    for word in words:
        for lang, stop in _STOPWORDS.items():
            if word in stop:
                scores[lang] += 1.0
    for lang, (chars, weight) in _SPECIAL.items():
        scores[lang] += weight * sum(lower.count(c) for c in chars)
    best = max(scores, key=lambda lang: (scores[lang], lang == default))
    return best if scores[best] > 0 else default
