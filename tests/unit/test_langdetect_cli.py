"""`canary check-language`: the command function, and the real CLI as a subprocess (stdin bytes, exit)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from provider_canary.cli.check_language import check_language_command
from tasks.errors import CanaryError

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]
PT = (
    "A chuva continuava caindo sobre os telhados da cidade velha naquela tarde cinzenta. Marina fechou o "
    "livro devagar e olhou pela janela com um sorriso cansado."
)
PT_ES = (
    "A chuva continuava caindo sobre os telhados da cidade velha naquela tarde cinzenta. "
    "El detective encendió un cigarrillo y observó la calle mojada desde la ventana. "
    "Marina fechou o livro devagar e olhou pela janela com um sorriso cansado. "
    "Hacía tres semanas que nadie sabía nada de la señora del tercer piso."
)


def run(text: bytes, expected: str = "pt", json_out: bool = True) -> str:
    out = io.StringIO()
    check_language_command(expected, json_out, stdin=io.BytesIO(text), out=out)
    return out.getvalue()


@pytest.mark.parametrize(
    ("text", "outcome", "reason"),
    [
        (PT.encode(), "pass", "ok"),
        (PT_ES.encode(), "fail", "language_mix"),
        (b"Ol\xc3\xa1! \xff\xfe caf\xe9", "fail", "encoding_corruption"),  # invalid UTF-8 bytes
        ("Olá!".encode(), "inconclusive", "too_short"),
        (b"", "inconclusive", "too_short"),
    ],
    ids=["clean", "mixed", "invalid_utf8", "short", "empty"],
)
def test_json_output(text: bytes, outcome: str, reason: str) -> None:
    data = json.loads(run(text))
    assert (data["outcome"], data["reason"]) == (outcome, reason)
    assert {"outcome", "reason", "detected", "confidence"} <= set(data)


def test_text_output_is_one_line() -> None:
    line = run(PT.encode(), json_out=False)
    assert line.startswith("pass ok detected=pt confidence=") and line.count("\n") == 1


def test_unknown_language_is_a_canary_error() -> None:
    with pytest.raises(CanaryError, match="unknown language 'klingon'"):
        run(PT.encode(), expected="klingon")


def test_real_cli_reads_stdin_bytes_and_exits_2_on_unknown_language() -> None:
    cmd = [sys.executable, "-c", "from provider_canary.cli.main import main; main()", "check-language"]
    ok = subprocess.run(
        [*cmd, "--expected", "PT", "--json"], input=PT.encode(), capture_output=True, cwd=ROOT, timeout=60
    )
    assert ok.returncode == 0 and json.loads(ok.stdout)["detected"] == "pt"
    bad = subprocess.run(
        [*cmd, "--expected", "xx"], input=b"hello", capture_output=True, cwd=ROOT, timeout=60
    )
    assert bad.returncode == 2
    assert bad.stderr.decode().count("\n") == 1 and "unknown language 'xx'" in bad.stderr.decode()
    assert b"Traceback" not in bad.stderr
