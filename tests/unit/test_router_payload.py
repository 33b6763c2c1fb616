"""Upstream body building, ignore-list merging and the mtime-cached ignore reader."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from provider_canary.router.ignore import IgnoreLists, ignore_path
from provider_canary.router.payload import build_body, merge_provider, parse_ignore_json
from provider_canary.router.routes import Tier
from tasks.core.plan import model_slug

pytestmark = pytest.mark.unit

MODEL = "meta-llama/llama-3.3-70b-instruct"


def test_build_body_sets_the_tier_model_and_merges_every_ignore() -> None:
    tier = Tier("http://a", MODEL, provider={"order": ["fireworks"], "ignore": ["together"]})
    client = {
        "model": "chat",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "provider": {"ignore": ["novita"], "order": ["x"]},
    }
    body = json.loads(build_body(client, tier, ["hyperbolic/fp8", "deepinfra/fp8"]))
    assert body["model"] == MODEL and body["stream"] is True and body["messages"] == client["messages"]
    assert body["provider"] == {
        "ignore": ["novita", "together", "deepinfra/fp8", "hyperbolic/fp8"],
        "order": ["fireworks"],
    }
    assert client["model"] == "chat"  # the client's body is not mutated


def test_no_provider_key_when_there_is_nothing_to_say() -> None:
    body = json.loads(build_body({"messages": []}, Tier("http://a", "m"), []))
    assert "provider" not in body
    assert merge_provider(None, {}, ["a", "a"]) == {"ignore": ["a"]}


def test_build_body_is_deterministic_bytes() -> None:
    tier = Tier("http://a", "m")
    client = {"messages": [{"role": "user", "content": "é"}], "temperature": 0.2}
    assert build_body(client, tier, ["x"]) == build_body(dict(client), tier, ["x"])
    assert "é".encode() in build_body(client, tier, [])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (json.dumps({"model": MODEL, "ignore": ["b", "a"], "entries": []}), ("a", "b")),
        (json.dumps({"model": "other/model", "ignore": ["a"]}), None),
        (json.dumps({"model": MODEL, "ignore": "a"}), None),
        ("{truncated", None),
    ],
)
def test_parse_ignore_json(text: str, expected: tuple[str, ...] | None) -> None:
    assert parse_ignore_json(text, MODEL) == expected


def test_ignore_lists_reread_on_change_and_keep_the_last_good_list(tmp_path: Path) -> None:
    lists = IgnoreLists(tmp_path)
    tier = Tier("http://a", MODEL)
    path = ignore_path(tier, tmp_path)
    assert path == tmp_path / f"{model_slug(MODEL)}.json"
    assert lists.for_tier(tier) == ()  # missing file = empty list
    path.write_text(json.dumps({"model": MODEL, "ignore": ["novita/fp8"], "entries": []}))
    assert lists.for_tier(tier) == ("novita/fp8",)
    assert lists.for_tier(tier) == ("novita/fp8",) and lists.reads == 1  # cached by mtime
    path.write_text(json.dumps({"model": MODEL, "ignore": ["novita/fp8", "hyperbolic/fp8"]}))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert lists.for_tier(tier) == ("hyperbolic/fp8", "novita/fp8")
    path.write_text("{half a wri")
    assert lists.for_tier(tier) == ("hyperbolic/fp8", "novita/fp8")  # torn write: keep the last good
    path.unlink()
    assert lists.for_tier(tier) == ()


def test_canary_model_override_and_opt_out(tmp_path: Path) -> None:
    (tmp_path / f"{model_slug(MODEL)}.json").write_text(json.dumps({"model": MODEL, "ignore": ["x"]}))
    lists = IgnoreLists(tmp_path)
    assert lists.for_tier(Tier("http://a", "alias", canary_model=MODEL)) == ("x",)
    assert lists.for_tier(Tier("http://a", MODEL, canary_model="")) == ()
    explicit = tmp_path / "any.json"
    explicit.write_text(json.dumps({"model": "whatever", "ignore": ["y"]}))
    assert lists.for_tier(Tier("http://a", MODEL, ignore_file=str(explicit))) == ("y",)
