"""Counting prompt tokens on the request body actually sent (the savings are measured, not claimed).

Tokenizer: `o200k_base` from the `bpe-openai` package (a Rust BPE with the o200k vocabulary embedded in the
wheel: nothing is downloaded at run time; same ids as tiktoken's o200k_base). When that package is not
installed, a deterministic regex approximation is used instead and `TOKENIZER` says so: each pre-token of
the GPT-4o pre-tokenizer shape (letters, 1-3 digits, punctuation runs, whitespace) counts as one token,
plus one more per further 8 UTF-8 bytes. Both are deterministic; only the first is exact for OpenAI models,
and neither is exact for other model families (the upstream's billed `usage.prompt_tokens` is recorded
beside the measurement for that reason).

Message counting follows OpenAI's published chat formula: 3 tokens per message, plus the tokens of its
role, text content (string content or the `text` of content parts), `name` (+1) and tool-call arguments,
plus 3 for the reply priming. Non-text parts (images, audio) are not counted: no saver touches them.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections.abc import Callable, Sequence
from typing import Any

_TOKENS_PER_MESSAGE = 3
_TOKENS_PER_NAME = 1
_REPLY_PRIMING = 3

_PRETOKEN = re.compile(
    r"""'(?:[sdmt]|ll|ve|re)|[^\r\n\W\d_]+|\d{1,3}| ?[^\s\w]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    re.UNICODE,
)


def approx_count(text: str) -> int:
    """The documented fallback: pre-tokens, plus one per further 8 bytes of a long pre-token."""
    total = 0
    for piece in _PRETOKEN.findall(text):
        size = len(piece.encode("utf-8"))
        total += 1 + max(0, math.ceil(size / 8) - 1)
    return total


def _load_counter() -> tuple[str, Callable[[str], int]]:
    try:
        with warnings.catch_warnings():  # bpe-openai 0.1.4 uses a deprecated importlib.resources call
            warnings.simplefilter("ignore", DeprecationWarning)
            import bpe_openai

            encoding = bpe_openai.get_encoding("o200k_base")

        def count(text: str) -> int:
            return len(encoding.encode_ordinary(text))

        count("warm up")
        return "o200k_base (bpe-openai)", count
    except Exception:  # not installed or unusable: the documented approximation
        return "regex-approx-v1", approx_count


TOKENIZER, count_text = _load_counter()


def content_texts(content: Any) -> list[str]:
    """The text parts of a message's `content` (a string, or the `text` of each part of a list)."""
    if isinstance(content, str):
        return [content]
    texts: list[str] = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
    return texts


def count_messages(messages: Sequence[Any], counter: Callable[[str], int] | None = None) -> int:
    """Prompt tokens of a chat `messages` list (OpenAI's per-message formula; see the module doc)."""
    count = counter or count_text
    total = _REPLY_PRIMING
    for message in messages:
        total += _TOKENS_PER_MESSAGE
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if isinstance(role, str):
            total += count(role)
        for text in content_texts(message.get("content")):
            total += count(text)
        name = message.get("name")
        if isinstance(name, str):
            total += count(name) + _TOKENS_PER_NAME
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                for key in ("name", "arguments"):
                    if isinstance(function.get(key), str):
                        total += count(function[key])
    return total


def count_body(body: bytes, counter: Callable[[str], int] | None = None) -> int | None:
    """Prompt tokens of a serialized chat request body (None if it is not one, or cannot be counted: bpe-openai
    refuses a text of a megabyte or so with "Input too long to encode safely", which is no client's fault)."""
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    messages = parsed.get("messages") if isinstance(parsed, dict) else None
    if not isinstance(messages, list):
        return None
    try:
        return count_messages(messages, counter)
    except ValueError:
        return None
