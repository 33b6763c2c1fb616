"""First-chunk budgets per route and per tier (issue 40 item 5): a reasoning model whose first visible token comes
after the router's budget streams through a route or tier that gives it more, while other routes keep theirs."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from provider_canary.router.route_events import read_route_events
from provider_canary.router.routes_loading import parse_routes
from provider_canary.router.server import start_router
from tests.support.fake_upstream import FakeUpstream, Script

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

MESSAGES = [{"role": "user", "content": "Think, then answer."}]


def test_a_slow_first_token_streams_where_the_route_or_tier_allows_it(tmp_path: Path) -> None:
    """Keep-alives arrive meanwhile (`: OPENROUTER PROCESSING`): they do not count as a first chunk."""
    thinker = Script("slow_first", text="Thought it through", delay_s=1.0)
    with FakeUpstream({"think": thinker, "fast": Script("ok", text="quick")}) as up:
        tiers = [{"base_url": up.base_url, "model": m} for m in ("think", "fast")]
        raw = {"router": {"first_chunk_budget_s": 0.4, "events_path": str(tmp_path / "e.jsonl"),
                          "savings_path": str(tmp_path / "s.jsonl"), "publish_dir": str(tmp_path / "p")},
               "route": [{"model": "by-route", "first_chunk_budget_s": 5, "tier": tiers},
                         {"model": "by-tier", "tier": [{**tiers[0], "first_chunk_budget_s": 5}, tiers[1]]},
                         {"model": "default", "tier": tiers}]}
        with start_router(parse_routes(raw), env={}) as r:
            c = openai.OpenAI(base_url=r.base_url, api_key="client-key", max_retries=0, timeout=20)

            def text(model: str) -> str:
                chunks = c.chat.completions.create(model=model, messages=MESSAGES, stream=True)  # type: ignore[arg-type]
                return "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)

            answers = [text(m) for m in ("by-route", "by-tier", "default")]
    assert answers == ["Thought it through", "Thought it through", "quick"]
    assert [(e.key, e.reason) for e in read_route_events(tmp_path / "e.jsonl")] == [("model:default",
                                                                               "first_chunk_timeout")]
