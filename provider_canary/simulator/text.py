"""Reply text: roleplay sentences from the shipped corpus in the prompt's language, and how faults bend it."""

from __future__ import annotations

import json
import random
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

CORPUS_PATH = Path(__file__).parent / "corpus" / "roleplay.json"
MIN_SENTENCES, MAX_SENTENCES, MIN_CHARS = 5, 8, 400
_UNSPACED = frozenset({"ja", "zh"})


@lru_cache(maxsize=1)
def corpus() -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = json.loads(CORPUS_PATH.read_text(encoding="utf-8"))
    return data


def _sentences(lang: str) -> list[str]:
    return list(corpus().get(lang, corpus()["en"])["sentences"])


def _pick_order(lang: str, rng: random.Random) -> list[int]:
    """Sentence indices: sometimes an action opener (`*She smiles.*`) first, then the rest shuffled."""
    sentences = _sentences(lang)
    order = list(range(len(sentences)))
    rng.shuffle(order)
    if rng.random() < 0.5:
        actions = [i for i in order if sentences[i].startswith("*")]
        if actions:
            order.remove(actions[0])
            order.insert(0, actions[0])
    return order


def _assemble(parts: list[str], lang: str) -> str:
    joiner = "" if lang in _UNSPACED else " "
    return joiner.join(parts)


def _take(order: list[int], pick: Any, lang: str, rng: random.Random) -> list[str]:
    target = rng.randint(MIN_SENTENCES, MAX_SENTENCES)
    parts: list[str] = []
    for i, idx in enumerate(order):
        parts.append(pick(i, idx))
        long_enough = lang in _UNSPACED or len(_assemble(parts, lang)) >= MIN_CHARS
        if len(parts) >= MAX_SENTENCES or (len(parts) >= target and long_enough):
            break
    return parts


def reply_text(lang: str, seed: int) -> str:
    """A healthy 5-8 sentence reply in `lang` (>= 400 chars for spaced scripts), deterministic per seed."""
    rng = random.Random(seed)
    sentences = _sentences(lang)
    order = _pick_order(lang, rng)
    return _assemble(_take(order, lambda _i, idx: sentences[idx], lang, rng), lang)


def action_opening_reply(lang: str, seed: int) -> str:
    """Like reply_text, but always opening with a Markdown emphasis action (what corruption breaks)."""
    rng = random.Random(seed)
    sentences = _sentences(lang)
    order = _pick_order(lang, rng)
    actions = [i for i in order if sentences[i].startswith("*")]
    if actions:
        order.remove(actions[0])
        order.insert(0, actions[0])
    return _assemble(_take(order, lambda _i, idx: sentences[idx], lang, rng), lang)


def mixed_reply(lang: str, other: str, seed: int) -> str:
    """Sentences alternate between `lang` (even positions) and `other` (odd positions)."""
    rng = random.Random(seed)
    ours, theirs = _sentences(lang), _sentences(other)
    order = _pick_order(lang, rng)
    parts = _take(order, lambda i, idx: ours[idx] if i % 2 == 0 else theirs[idx % len(theirs)], lang, rng)
    return " ".join(parts)


def refusal_text(lang: str) -> str:
    return str(corpus().get(lang, corpus()["en"])["refusal"])


def mojibake(text: str, codec: str = "cp1252") -> str:
    """UTF-8 bytes read as cp1252 (bytes cp1252 leaves undefined fall back to latin-1): `é` -> `Ã©`."""
    out = []
    for b in text.encode("utf-8"):
        try:
            out.append(bytes([b]).decode(codec))
        except UnicodeDecodeError:
            out.append(chr(b))
    return "".join(out)


def first_words(text: str, n: int) -> str:
    return "".join(re.findall(r"\S+\s*", text)[:n]).rstrip()


def split_pieces(text: str, seed: int, *, unspaced: bool = False) -> list[str]:
    """Stream pieces of a few words each (2-4 characters for ja/zh); joined they give `text` back exactly."""
    rng = random.Random(seed ^ 0x5EED)
    if not text:
        return []
    if unspaced:
        pieces, i = [], 0
        while i < len(text):
            n = rng.randint(2, 4)
            pieces.append(text[i : i + n])
            i += n
        return pieces
    lead = re.match(r"\s*", text)
    head = lead.group(0) if lead else ""
    words = re.findall(r"\S+\s*", text[len(head) :])
    pieces, i = [], 0
    while i < len(words):
        n = rng.randint(1, 3)
        pieces.append("".join(words[i : i + n]))
        i += n
    if head:
        pieces[0] = head + pieces[0] if pieces else head
    return pieces


def split_json(text: str, seed: int) -> list[str]:
    """Structured replies stream in pieces of 4-12 characters."""
    rng = random.Random(seed ^ 0x715)
    pieces, i = [], 0
    while i < len(text):
        n = rng.randint(4, 12)
        pieces.append(text[i : i + n])
        i += n
    return pieces


def estimate_tokens(text: str) -> int:
    """About four characters per token (one per CJK character), at least 1 for non-empty text."""
    if not text:
        return 0
    wide = sum(1 for ch in text if ord(ch) > 0x2E80)
    return max(1, wide + (len(text) - wide + 3) // 4)


def is_unspaced(lang: str) -> bool:
    return lang in _UNSPACED
