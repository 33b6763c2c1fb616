"""`canary check-language --expected LANG [--json]`: judge the text on stdin with the language detector.

stdin is read as bytes (at most MAX_INPUT_BYTES) and decoded as UTF-8 with replacement, so invalid UTF-8
shows up as U+FFFD and is judged `encoding_corruption` rather than crashing. stdout: one JSON object with
--json (`{"outcome", "reason", "detected", "confidence", "mixed_share", "sentences", ...}`), else one line.
Exit code: 0 for `pass` and `inconclusive`, 1 for `fail` (so a script can `if ! canary check-language ...`);
an unknown language is one stderr line and exit 2 (a CanaryError, printed by provider_canary/cli/main.py).

    echo "Ela olhou pela janela. Ella miró por la ventana." | canary check-language --expected pt --json
"""

from __future__ import annotations

import json
import sys
from typing import BinaryIO, TextIO

from tasks.errors import CanaryError

MAX_INPUT_BYTES = 1024 * 1024

__all__ = ["check_language_command", "read_text"]


def read_text(stream: BinaryIO) -> str:
    """Up to MAX_INPUT_BYTES of `stream`, decoded as UTF-8 (BOM dropped, invalid bytes -> U+FFFD)."""
    raw = stream.read(MAX_INPUT_BYTES)
    return raw.decode("utf-8-sig", errors="replace")


def check_language_command(
    expected: str,
    json_out: bool,
    *,
    stdin: BinaryIO | None = None,
    out: TextIO | None = None,
) -> int:
    """Print the judgement; return the exit code (1 when the text fails, else 0)."""
    from tasks.core.langdetect import SUPPORTED_LANGUAGES, judge_text

    lang = expected.strip().lower()
    if lang not in SUPPORTED_LANGUAGES:
        raise CanaryError(
            f"check-language: unknown language {expected!r} (known: {', '.join(SUPPORTED_LANGUAGES)})"
        )
    out = out or sys.stdout
    text = read_text(stdin or sys.stdin.buffer)
    judgement = judge_text(text, lang)
    code = 1 if str(judgement.outcome) == "fail" else 0
    if json_out:
        out.write(json.dumps(judgement.as_json(), ensure_ascii=False) + "\n")
        return code
    out.write(
        f"{judgement.outcome} {judgement.reason} detected={judgement.detected or '-'} "
        f"confidence={judgement.confidence:.2f} mixed_share={judgement.mixed_share:.2f} "
        f"sentences={judgement.sentences}: {judgement.evidence}\n"
    )
    return code
