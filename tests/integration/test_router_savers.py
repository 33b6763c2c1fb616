"""Savers that never change data (issue 40 item 4): with the default savers the upstream receives exactly the
messages the client sent (TSV, JSON and code, in tool results and in user messages), and what savings there are
are still measured and reported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from provider_canary.router.routes_loading import parse_routes
from provider_canary.router.server import start_router
from provider_canary.router.tokens import count_body
from tests.support.fake_upstream import FakeUpstream, Script

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

TSV = "id\tname\t\tscore\n1\tbob\t\t3\n2\tana\t\t10"
COLUMNS = "col1    col2\nval1    val2"
JSON_RESULT = json.dumps({"note": "two  spaces", "rows": [{"a": "x\ty"}]}, indent=2)
CODE = "```python\ndef f(x):\n    return  x   *  2\n\n\n\n# end\n```"
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are   a careful analyst."},
    {"role": "user", "content": f"Here is my table:\n{TSV}\nand the aligned one:\n{COLUMNS}"},
    {"role": "user", "content": [{"type": "text", "text": f"And the code:\n{CODE}"}]},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q":  "a\\tb"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": JSON_RESULT},
    {"role": "tool", "tool_call_id": "call_1", "content": "col1    col2\nHello,    world.\n\n\n\nend"},
]


def upstream_messages(tmp: Path, messages: list[dict[str, Any]], **settings: Any) -> tuple[Any, httpx.Headers,
                                                                                             bytes]:
    with FakeUpstream({"t1": Script("ok")}) as up:
        raw = {"router": {"events_path": str(tmp / "e.jsonl"), "savings_path": str(tmp / "s.jsonl"),
                          "publish_dir": str(tmp / "published"), **settings},
               "route": [{"model": "chat", "tier": [{"base_url": up.base_url, "model": "t1"}]}]}
        with start_router(parse_routes(raw), env={}) as r:
            response = httpx.post(r.base_url + "/chat/completions", timeout=10,
                                  json={"model": "chat", "messages": messages})
            assert response.status_code == 200
        body = up.requests[0].body
    return json.loads(body)["messages"], response.headers, body


def test_the_default_savers_send_tsv_json_and_code_byte_for_byte(tmp_path: Path) -> None:
    received, headers, body = upstream_messages(tmp_path, MESSAGES)
    assert received == MESSAGES  # every string, every tab and run of spaces, as the client sent it
    for text in (TSV, COLUMNS, JSON_RESULT, CODE):
        assert json.dumps(text, ensure_ascii=False)[1:-1].encode() in body
    assert headers["x-canary-tokens-saved"] == "0"


def test_savings_are_still_measured_and_reported(tmp_path: Path) -> None:
    repeated = [MESSAGES[0], *MESSAGES[1:3], dict(MESSAGES[0])]  # the same instruction given twice
    received, headers, body = upstream_messages(tmp_path / "a", repeated)
    _, _, plain = upstream_messages(tmp_path / "b", repeated, savers=[])
    assert received == repeated[:3]
    before, sent = count_body(plain), count_body(body)
    assert before is not None and sent is not None
    assert int(headers["x-canary-tokens-saved"]) == before - sent > 0
    assert int(headers["x-canary-tokens-sent"]) == sent


def test_collapse_whitespace_when_chosen_changes_prose_and_nothing_else(tmp_path: Path) -> None:
    prose = {"role": "user", "content": "Tell  me    a story.\n\n\n\nPlease."}
    received, headers, _ = upstream_messages(tmp_path, [*MESSAGES, prose], savers=["collapse_whitespace"])
    assert received[1:-1] == MESSAGES[1:]  # the table, the columns, the code, the tool call and its results
    assert received[0]["content"] == "You are a careful analyst."
    assert received[-1]["content"] == "Tell me a story.\n\nPlease." and int(headers["x-canary-tokens-saved"]) > 0
