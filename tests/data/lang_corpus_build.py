"""Build tests/data/language_corpus.jsonl from lang_corpus_source.py (deterministic; rerun after edits).

Each line: {"id", "expected", "kind", "text", "expect", "reason"} where `expect` is the outcome the detector
must give (`reason` too when it is a failure). Kinds: clean, clean_long, tricky, short, light_mix (one stray
sentence: must NOT fail), mixed, switch, mojibake, replacement, c1.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from lang_corpus_source import CLEAN, SHORT, TRICKY  # noqa: E402

OUT = Path(__file__).with_name("language_corpus.jsonl")
_SENT = re.compile(r"(?<=[.!?。！？।])\s*")


def sentences(text: str) -> list[str]:
    return [s for s in _SENT.split(text) if s.strip()]


def cp1252_mojibake(text: str) -> str:
    """UTF-8 bytes read as cp1252 (undefined bytes as Latin-1 C1 controls), like a misconfigured decoder."""
    out = []
    for b in text.encode("utf-8"):
        try:
            out.append(bytes([b]).decode("cp1252"))
        except UnicodeDecodeError:
            out.append(chr(b))
    return "".join(out)


def interleave(a: list[str], b: list[str], every: int) -> list[str]:
    """`a` with every `every`-th sentence replaced by the next one of `b`."""
    out, j = [], 0
    for i, s in enumerate(a):
        if (i + 1) % every == 0 and j < len(b):
            out.append(b[j])
            j += 1
        else:
            out.append(s)
    return out


def build() -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []

    def add(
        kind: str, expected: str, text: str, expect: str, reason: str | None = None, tag: str = ""
    ) -> None:
        n = sum(1 for it in items if it["kind"] == kind and it["expected"] == expected)
        items.append(
            {
                "id": f"{kind}-{expected}{tag}-{n}",
                "expected": expected,
                "kind": kind,
                "text": text,
                "expect": expect,
                "reason": reason,
            }
        )

    for lang, paras in CLEAN.items():
        for p in paras:
            add("clean", lang, p, "pass", "ok")
        add("clean_long", lang, "\n\n".join(paras), "pass", "ok")
    for lang, text in TRICKY:
        add("tricky", lang, text, "pass", "ok")
    for lang, text in SHORT:
        add("short", lang, text, "inconclusive", "too_short")
    for expected, other in [
        ("pt", "es"),
        ("es", "pt"),
        ("en", "fr"),
        ("ja", "zh"),
        ("zh", "ja"),
        ("ru", "uk"),
        ("uk", "ru"),
        ("it", "es"),
        ("de", "en"),
        ("fr", "it"),
        ("pl", "ru"),
        ("id", "en"),
        ("tr", "de"),
        ("vi", "en"),
        ("hi", "en"),
        ("ar", "en"),
        ("ko", "ja"),
    ]:
        add("switch", expected, CLEAN[other][1], "fail", "language_switch", tag=f"-{other}")
    pairs = [
        ("pt", "es"),
        ("es", "pt"),
        ("es", "it"),
        ("it", "es"),
        ("ru", "uk"),
        ("uk", "ru"),
        ("fr", "it"),
        ("it", "fr"),
    ]
    for expected, other in pairs:
        base = sentences(CLEAN[expected][0]) + sentences(CLEAN[expected][1])
        foreign = sentences(CLEAN[other][2]) + sentences(CLEAN[other][0])
        add(
            "mixed", expected, " ".join(interleave(base, foreign, 2)), "fail", "language_mix", tag=f"-{other}"
        )
        add(
            "mixed", expected, " ".join(interleave(base, foreign, 3)), "fail", "language_mix", tag=f"-{other}"
        )
        long_base = base + sentences(CLEAN[expected][2])
        add(
            "light_mix",
            expected,
            " ".join(interleave(long_base, foreign[:1], 7)),
            "pass",
            "ok",
            tag=f"-{other}",
        )
    for lang in ("pt", "es", "fr", "de", "it", "ru", "uk", "pl", "tr", "ja", "ko", "zh", "hi", "ar", "vi"):
        para = max(CLEAN[lang], key=lambda p: sum(ord(c) > 127 for c in p))
        add("mojibake", lang, cp1252_mojibake(para), "fail", "encoding_corruption")
        sents = sentences(CLEAN[lang][1])
        k = max(range(len(sents)), key=lambda i: sum(ord(c) > 127 for c in sents[i]))
        sents[k] = cp1252_mojibake(sents[k])
        add("mojibake", lang, " ".join(sents), "fail", "encoding_corruption", tag="-partial")
    curly = (
        CLEAN["en"][0].replace('"', "\u201c", 1).replace("n't", "n\u2019t")
        + " It\u2019s late, isn\u2019t it?"
    )
    add("mojibake", "en", cp1252_mojibake(curly), "fail", "encoding_corruption")
    for lang in ("en", "pt", "ru", "ja"):
        text = CLEAN[lang][2]
        add("replacement", lang, text[:40] + "\ufffd\ufffd" + text[42:], "fail", "encoding_corruption")
        add(
            "c1",
            lang,
            text.encode("utf-8").decode("latin-1") if lang != "en" else text + "\u0085",
            "fail",
            "encoding_corruption",
        )
    return items


if __name__ == "__main__":
    rows = build()
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"wrote {len(rows)} items to {OUT}")
