"""Edges of the structured-output contract (tasks/core/contracts/structured.py): each invalid reply's evidence
whole (where the JSON starts, which bracket, text before it that is no bracket), the evidence cap, a schema
that admits null, the validator cache's bound, and a remote `$ref` never fetched."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from attempt_factory import attempt

from tasks.core.contracts import structured
from tasks.core.types import Contract, Judgement, Outcome, Reason

pytestmark = pytest.mark.unit
OBJECT = {"type": "object"}
FENCED = '```json\n{"answer": "a long enough value to pass forty chars"}\n```'


@pytest.mark.parametrize(("text", "evidence"), [
    ('{"a": 1} and more', "prose around JSON (0 chars before, 9 after): '{\"a\": 1} and more'"),
    ("Here: [1, 2] ok", "prose around JSON (6 chars before, 3 after): 'Here: [1, 2] ok'"),
    ("x [1, [2]] y", "prose around JSON (2 chars before, 2 after): 'x [1, [2]] y'"),
    ('x {"a": {"b": 1}} y', "prose around JSON (2 chars before, 2 after): 'x {\"a\": {\"b\": 1}} y'"),
    ("x1 apples", "Expecting value at char 0: 'x1 apples'"),
    ('Sure thing, here you go: {"answer": 42} hope it helps!',
     "prose around JSON (25 chars before, 15 after): 'Sure thing, here you go: {\"answer\": 42} '"),
], ids=["json-first", "bracket", "nested-brackets", "nested-braces", "no-bracket", "cut-at-40"])
def test_an_invalid_reply_says_where_its_json_is(text: str, evidence: str) -> None:
    got = structured.judge_attempt(attempt(Contract.STRUCTURED, text=text), OBJECT)
    assert got == Judgement(Outcome.FAIL, Reason.INVALID_JSON, evidence)


def test_a_fenced_reply_and_a_filtered_one_whole() -> None:
    fenced = "reply wrapped in ``` fences: '```json\\n{\"answer\": \"a long enough value '"
    assert structured.judge_attempt(attempt(Contract.STRUCTURED, text=FENCED), OBJECT) == Judgement(
        Outcome.FAIL, Reason.FENCED_JSON, fenced)
    assert structured.judge_attempt(attempt(Contract.STRUCTURED, text="", finish_reason="content_filter"),
                                    OBJECT) == Judgement(Outcome.FAIL, Reason.CONTENT_FILTER,
                                                         "finish_reason (content_filter)")


def test_evidence_is_cut_to_its_cap() -> None:
    cap = structured.EVIDENCE_MAX_CHARS
    assert structured._one_line("x" * cap) == "x" * cap
    assert structured._one_line("x" * (cap + 1)) == "x" * (cap - 1) + "…"


def test_a_schema_that_admits_null_still_checks_the_reply() -> None:
    schema = {"type": ["object", "null"], "required": ["a"]}
    assert structured.schema_error({}, schema) == "$: 'a' is a required property"


def test_the_validator_cache_keeps_the_most_recent_up_to_its_bound() -> None:
    schemas = [{"type": "object", "maxProperties": i} for i in range(structured.MAX_VALIDATORS + 40)]
    for s in schemas:
        assert structured.schema_error({}, s) is None
    kept = structured._VALIDATORS
    assert len(kept) == structured.MAX_VALIDATORS and id(schemas[-1]) in kept and id(schemas[0]) not in kept


@pytest.fixture
def schema_server() -> Iterator[tuple[str, list[str]]]:
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            body = json.dumps({"type": "string"}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/schema.json", hits
    server.shutdown()
    server.server_close()


def test_a_remote_ref_is_never_fetched(schema_server: tuple[str, list[str]]) -> None:
    url, hits = schema_server
    with pytest.raises(Exception, match="schema.json"):
        structured.schema_error(1, {"$ref": url})
    assert hits == []
