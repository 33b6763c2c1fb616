"""The routes file (provider_canary/router/routes.py, provider_canary/router/ROUTES.md)."""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path
from typing import Any

import pytest

from provider_canary.router.routes import key_id
from provider_canary.router.routes_loading import load_routes, parse_routes, resolve_api_keys
from provider_canary.router.savings import SAVERS
from tasks.errors import RoutesError

pytestmark = pytest.mark.unit

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "routes.toml"
TIER = {"base_url": "http://127.0.0.1:1/api/v1", "model": "m/a", "api_key_env": "OPENROUTER_API_KEY"}


def test_the_shipped_example_parses() -> None:
    routes = load_routes(EXAMPLE, frozenset(SAVERS))
    assert routes.routes and all(r.tiers for r in routes.routes)


def test_find_prefers_the_client_key_route_over_the_model_route() -> None:
    secret = "sk-client-123"
    digest = hashlib.sha256(secret.encode()).hexdigest()
    routes = parse_routes(
        {
            "route": [
                {"model": "chat", "tier": [TIER]},
                {"api_key_sha256": digest, "tier": [{**TIER, "model": "m/b"}]},
            ]
        }
    )
    assert routes.find("chat", None).key == "model:chat"  # type: ignore[union-attr]
    by_key = routes.find("chat", secret)
    assert by_key is not None and by_key.tiers[0].model == "m/b"
    assert by_key.key == key_id(secret) and secret not in by_key.key
    assert routes.find("other", None) is None
    assert routes.model_names == ("chat",)


def test_tier_upstream_id_and_label_carry_no_secret() -> None:
    routes = parse_routes({"route": [{"model": "chat", "tier": [{**TIER, "provider": {"order": ["x"]}}]}]})
    tier = routes.routes[0].tiers[0]
    assert tier.label == "http://127.0.0.1:1/api/v1 m/a [x]"
    keys = resolve_api_keys(routes, {"OPENROUTER_API_KEY": "sk-or-v1-secret"})
    assert "sk-or-v1-secret" not in tier.upstream_id + tier.label + repr(keys)


BAD: list[tuple[str, dict[str, Any], str]] = [
    ("no-routes", {}, "at least one [[route]]"),
    (
        "unknown-top",
        {"route": [{"model": "c", "tier": [TIER]}], "routes": []},
        "unknown top-level key 'routes'",
    ),
    ("no-tiers", {"route": [{"model": "c"}]}, "route[0] needs at least one"),
    ("both-keys", {"route": [{"model": "c", "api_key_sha256": "0" * 64, "tier": [TIER]}]}, "exactly one"),
    ("bad-digest", {"route": [{"api_key_sha256": "sk-raw-key", "tier": [TIER]}]}, "64 lower-case hex"),
    ("bad-url", {"route": [{"model": "c", "tier": [{**TIER, "base_url": "ftp://x"}]}]}, "http(s) URL"),
    ("no-model", {"route": [{"model": "c", "tier": [{"base_url": "http://a"}]}]}, ".model must be"),
    ("bad-provider", {"route": [{"model": "c", "tier": [{**TIER, "provider": {"orderr": []}}]}]}, "'orderr'"),
    (
        "bad-env",
        {"route": [{"model": "c", "tier": [{**TIER, "api_key_env": "sk-or-v1-x"}]}]},
        "variable name",
    ),
    ("dup", {"route": [{"model": "c", "tier": [TIER]}, {"model": "c", "tier": [TIER]}]}, "share the key"),
    (
        "bad-budget",
        {"router": {"first_chunk_budget_s": -1}, "route": [{"model": "c", "tier": [TIER]}]},
        "first_chunk_budget_s",
    ),
    (
        "bad-saver",
        {"router": {"savers": ["zip"]}, "route": [{"model": "c", "tier": [TIER]}]},
        "unknown saver",
    ),
    (
        "unknown-setting",
        {"router": {"budget": 1}, "route": [{"model": "c", "tier": [TIER]}]},
        "router.budget",
    ),
    ("newline-in-name", {"route": [{"model": "chat\r\nx-evil: 1", "tier": [TIER]}]}, "control characters"),
    ("lf-in-name", {"route": [{"model": "chat\n", "tier": [TIER]}]}, "control characters"),
    ("body-cap", {"router": {"max_body_bytes": 10}, "route": [{"model": "c", "tier": [TIER]}]}, "max_body_bytes"),
    ("judge-flag", {"router": {"judge": "yes"}, "route": [{"model": "c", "tier": [TIER]}]}, "router.judge"),
    ("retry-flag", {"route": [{"model": "c", "retry_failed_checks": 1, "tier": [TIER]}]}, "retry_failed_checks"),
    ("allowed-fails", {"router": {"allowed_fails": -1}, "route": [{"model": "c", "tier": [TIER]}]}, "allowed_fails"),
    ("cooldown", {"router": {"cooldown_s": 0}, "route": [{"model": "c", "tier": [TIER]}]}, "router.cooldown_s"),
    ("cors-path", {"router": {"cors_origins": ["https://a.example/app"]}, "route": [{"model": "c", "tier": [TIER]}]},
     "router.cors_origins"),
    ("cors-string", {"router": {"cors_origins": "*"}, "route": [{"model": "c", "tier": [TIER]}]}, "cors_origins"),
    ("route-budget", {"route": [{"model": "c", "first_chunk_budget_s": "8", "tier": [TIER]}]},
     "route[0].first_chunk_budget_s"),
    ("tier-budget", {"route": [{"model": "c", "tier": [{**TIER, "first_chunk_budget_s": 0}]}]},
     "route[0].tier[0].first_chunk_budget_s"),
]


@pytest.mark.parametrize(("raw", "needle"), [(r, n) for _, r, n in BAD], ids=[i for i, _, _ in BAD])
def test_bad_routes_raise_one_line_naming_the_problem(raw: dict[str, Any], needle: str) -> None:
    with pytest.raises(RoutesError) as info:
        parse_routes(raw, frozenset(SAVERS))
    message = str(info.value)
    assert needle in message and "\n" not in message and message.startswith("routes: ")


def test_load_routes_reports_missing_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(RoutesError, match="not found"):
        load_routes(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[[route]\nmodel = ", encoding="utf-8")
    with pytest.raises(RoutesError, match="not valid TOML"):
        load_routes(bad)


def test_a_missing_key_variable_is_named_not_its_value() -> None:
    routes = parse_routes({"route": [{"model": "c", "tier": [TIER]}]})
    with pytest.raises(RoutesError, match="OPENROUTER_API_KEY is not set"):
        resolve_api_keys(routes, {})


def test_router_settings_defaults_and_overrides() -> None:
    raw = tomllib.loads(
        '[router]\nfirst_chunk_budget_s = 2\nevents_db = ""\nsavers = []\n'
        '[[route]]\nmodel = "c"\n[[route.tier]]\nbase_url = "http://a"\nmodel = "m"\n'
    )
    routes = parse_routes(raw)
    assert routes.settings.first_chunk_budget_s == 2.0
    assert routes.settings.events_db is None and routes.settings.savers == ()
    assert routes.routes[0].tiers[0].api_key_env is None


def test_a_base_url_with_credentials_is_refused_in_one_line_that_never_shows_the_password() -> None:
    """httpx would send user:password as Basic auth instead of the tier's key, and the tier's label (with the
    URL) would put the password into /metrics: refused at load, as the canary refuses its own base_url."""
    raw = {"route": [{"model": "c", "tier": [{**TIER, "base_url": "https://bob:hunter2-secret@or.example/api/v1"}]}]}
    with pytest.raises(RoutesError) as info:
        parse_routes(raw)
    message = str(info.value)
    assert "must not hold credentials" in message and "\n" not in message
    assert "hunter2-secret" not in message and "https://or.example/api/v1" in message


def test_paths_resolve_against_the_routes_files_directory_not_the_cwd(tmp_path: Path, monkeypatch: Any) -> None:
    """issue 30: started from another directory, the router read no list and routed to a suspended provider."""
    home = tmp_path / "srv" / "router"
    home.mkdir(parents=True)
    (home / "routes.toml").write_text(
        '[router]\npublish_dir = "../canary/published"\nevents_path = "events.jsonl"\n'
        'events_db = "../canary/c.duckdb"\n'
        'savings_path = "/var/tmp/s.jsonl"\n[[route]]\nmodel = "c"\n[[route.tier]]\nbase_url = "http://a"\n'
        'model = "m"\nignore_file = "lists/m.json"\n', encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    routes = load_routes(Path("..") / "srv" / "router" / "routes.toml")
    s = routes.settings
    srv = (tmp_path / "srv").resolve()
    assert Path(s.publish_dir).resolve() == srv / "canary" / "published"
    assert Path(s.events_path).resolve() == srv / "router" / "events.jsonl"
    assert Path(s.events_db or "").resolve() == srv / "canary" / "c.duckdb"
    assert s.savings_path == "/var/tmp/s.jsonl"  # absolute paths stay as they are
    assert Path(routes.routes[0].tiers[0].ignore_file or "").resolve() == srv / "router" / "lists" / "m.json"


def test_the_new_settings_have_their_defaults() -> None:
    routes = parse_routes({"route": [{"model": "c", "tier": [TIER]}]})
    s = routes.settings
    assert (s.max_body_bytes, s.judge, s.judge_queue, s.require_ignore_lists) == (16 * 1024 * 1024, True, 256, False)
    assert routes.routes[0].retry_failed_checks is True


def test_a_route_name_outside_ascii_is_escaped_in_its_header() -> None:
    from provider_canary.router.records import header_value

    assert header_value("model:chat") == "model:chat"
    assert header_value("model:модель") == "model:%D0%BC%D0%BE%D0%B4%D0%B5%D0%BB%D1%8C"
    assert header_value("model:100%") == "model:100%25"


@pytest.mark.parametrize("url", ["https://or.example/api/v1?key=sk-or-v1-querysecret", "https://or.example/api/v1#sk-x",
                                 "https://or.example/api/v1?"])
def test_a_base_url_with_a_query_or_fragment_is_refused_without_showing_it(url: str) -> None:
    """`...?key=...` built a wrong URL (the router appends /chat/completions) and landed verbatim in route events
    and the httpx log: refused at load, like credentials."""
    with pytest.raises(RoutesError) as info:
        parse_routes({"route": [{"model": "c", "tier": [{**TIER, "base_url": url}]}]})
    message = str(info.value)
    assert "must not hold a query or fragment" in message and "\n" not in message
    assert "querysecret" not in message and "sk-x" not in message and "'https://or.example/api/v1'" in message


def test_budgets_per_route_and_tier_fall_back_to_the_routers() -> None:
    raw = {"router": {"first_chunk_budget_s": 4},
           "route": [{"model": "reasoning", "first_chunk_budget_s": 20,
                      "tier": [{**TIER, "first_chunk_budget_s": 45}, TIER]},
                     {"model": "chat", "tier": [TIER]}]}
    reasoning, chat = parse_routes(raw).routes
    assert [reasoning.first_chunk_budget(n, 4.0) for n in (1, 2)] == [45.0, 20.0]
    assert chat.first_chunk_budget(1, 4.0) == 4.0


def test_the_breaker_and_cors_settings_have_their_defaults_and_overrides() -> None:
    s = parse_routes({"route": [{"model": "c", "tier": [TIER]}]}).settings
    assert (s.allowed_fails, s.cooldown_s, s.max_cooldown_s, s.cors_origins) == (3, 30.0, 300.0, ())
    raw = {"router": {"allowed_fails": 0, "cooldown_s": 5, "cors_origins": ["https://app.example", "*"]},
           "route": [{"model": "c", "tier": [TIER]}]}
    s = parse_routes(raw).settings
    assert (s.allowed_fails, s.cooldown_s, s.cors_origins) == (0, 5.0, ("https://app.example", "*"))
