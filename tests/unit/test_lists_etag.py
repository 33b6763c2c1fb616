"""The canary's lists over HTTP, the pure parts: the entity tag (tasks/core/etag.py), the exporter's answer to
`GET /lists/<slug>.json` (tasks/ignore_list/endpoint.py, over a temp publish directory), what a routes file may say
(`lists_url`, `lists_poll_s`) and which lists a router polls (provider_canary/router/lists_poll.py)."""

from __future__ import annotations

import os
from email.utils import parsedate_to_datetime
from pathlib import Path

import pytest

from provider_canary.router.lists_poll import wanted
from provider_canary.router.routes_loading import parse_routes
from tasks.core.etag import none_match, strong_etag
from tasks.errors import RoutesError
from tasks.ignore_list.endpoint import list_reply

pytestmark = pytest.mark.unit

LIST = b'{\n  "model": "acme/m-1.5",\n  "ignore": ["alpha"],\n  "entries": []\n}\n'


def test_the_tag_is_the_bytes_and_only_the_bytes() -> None:
    assert strong_etag(LIST) == strong_etag(bytes(LIST)) != strong_etag(LIST + b" ")
    assert strong_etag(LIST).startswith('"') and strong_etag(LIST).endswith('"') and "W/" not in strong_etag(LIST)


@pytest.mark.parametrize(("header", "hit"), [
    ('"abc"', True), ('W/"abc"', True), ('"x", "abc"', True), ("*", True),
    ('"abcd"', False), ("abc", False), ("", False), (None, False), ('"ab"', False),
    ('"x","abc"', True), ('"x" "abc"', False),
])
def test_if_none_match_is_compared_weakly_as_a_get_does(header: str | None, hit: bool) -> None:
    assert none_match(header, '"abc"') is hit


@pytest.mark.parametrize("tag", ['"abc"', "abc", "XXXX", "W/"])
def test_no_header_names_no_tag(tag: str) -> None:
    assert not none_match(None, tag) and not none_match("", tag)


def test_the_tag_is_the_first_128_bits_of_the_sha256_quoted() -> None:
    assert strong_etag(b"") == '"e3b0c44298fc1c149afbf4c8996fb924"'


@pytest.fixture
def published(tmp_path: Path) -> Path:
    d = tmp_path / "published"
    d.mkdir()
    (d / "acme-m-1-5.json").write_bytes(LIST)
    os.utime(d / "acme-m-1-5.json", (1_700_000_000, 1_700_000_000))
    (d / ".canary-db").write_text("/srv/canary.duckdb\n")
    return d


def test_a_list_its_tag_and_when_the_canary_wrote_it(published: Path) -> None:
    reply = list_reply([published], "/lists/acme-m-1-5.json?x=1", None)
    headers = dict(reply.headers)
    assert (reply.status, reply.body) == (200, LIST)
    assert headers["ETag"] == strong_etag(LIST) and headers["Cache-Control"] == "no-cache"
    assert headers["Content-Type"] == "application/json"
    assert parsedate_to_datetime(headers["Last-Modified"]).timestamp() == 1_700_000_000


def test_the_same_tag_is_a_304_without_a_body_but_with_the_tag_and_the_time(published: Path) -> None:
    reply = list_reply([published], "/lists/acme-m-1-5.json", f'W/"old", {strong_etag(LIST)}')
    assert (reply.status, reply.body) == (304, b"")
    assert dict(reply.headers)["ETag"] == strong_etag(LIST) and "Last-Modified" in dict(reply.headers)
    assert list_reply([published], "/lists/acme-m-1-5.json", '"old"').status == 200


@pytest.mark.parametrize("path", ["/lists/acme-other.json", "/lists/.canary-db", "/lists/../published/x.json",
                                  "/lists/ACME-M-1-5.json", "/lists/acme-m-1-5", "/lists/acme--m.json", "/lists/"])
def test_what_is_no_published_list_is_a_404(published: Path, path: str) -> None:
    reply = list_reply([published], path, None)
    assert reply.status == 404 and b'"error"' in reply.body


def test_several_shards_publish_directories_are_looked_up_in_order(tmp_path: Path, published: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "acme-n.json").write_bytes(b'{"model": "acme/n", "ignore": [], "entries": []}')
    assert list_reply([published, other], "/lists/acme-n.json", None).status == 200
    assert list_reply([other, published], "/lists/acme-m-1-5.json", None).body == LIST


def _routes(**router: object) -> dict[str, object]:
    return {"router": router, "route": [
        {"model": "a", "tier": [{"base_url": "http://up", "model": "acme/m-1.5"},
                                {"base_url": "http://up", "model": "acme/x", "canary_model": "acme/m-1.5"},
                                {"base_url": "http://up", "model": "acme/y", "canary_model": ""},
                                {"base_url": "http://up", "model": "acme/z", "ignore_file": "/etc/z.json"}]},
        {"model": "b", "tier": [{"base_url": "http://up", "model": "acme/n"}]}]}


def test_a_routes_file_names_the_lists_url_and_the_router_polls_each_list_it_reads_once(tmp_path: Path) -> None:
    routes = parse_routes(_routes(lists_url="http://canary-host:9464/lists/", lists_poll_s=2), base_dir=tmp_path)
    assert (routes.settings.lists_url, routes.settings.lists_poll_s) == ("http://canary-host:9464/lists", 2.0)
    polled = wanted(routes, Path(routes.settings.publish_dir))
    assert [(w.slug, w.model, w.path) for w in polled] == [
        ("acme-m-1-5", "acme/m-1.5", tmp_path / "published" / "acme-m-1-5.json"),
        ("acme-n", "acme/n", tmp_path / "published" / "acme-n.json")]
    assert parse_routes(_routes()).settings.lists_url is None
    assert parse_routes(_routes(lists_url="")).settings.lists_url is None


@pytest.mark.parametrize(("raw", "shown"), [
    ("http://user:hunter2@canary:9464/lists", "http://canary:9464/lists"),
    ("http://canary:9464/lists?token=x", "?token=x"), ("http://canary:9464/lists#top", "#top"),
    ("http://canary:9464/lists?", "lists?"), ("ftp://canary/lists", "ftp://"), (9464, "9464"),
])
def test_a_lists_url_with_credentials_or_a_query_is_refused_in_one_line(raw: object, shown: str) -> None:
    with pytest.raises(RoutesError) as caught:
        parse_routes(_routes(lists_url=raw))
    message = str(caught.value)
    assert message.startswith("routes: router.lists_url must be an http(s) URL") and shown in message
    assert "hunter2" not in message and "\n" not in message


@pytest.mark.parametrize(("raw", "url"), [
    ("https://canary.example/lists/", "https://canary.example/lists"),
    ("http://canary:9464/LISTX//", "http://canary:9464/LISTX"),
])
def test_a_lists_url_is_kept_without_its_trailing_slashes(raw: str, url: str) -> None:
    assert parse_routes(_routes(lists_url=raw)).settings.lists_url == url


@pytest.mark.parametrize("raw", ["http://[::1/lists", "http://canary:9464/lists#"])
def test_a_lists_url_that_does_not_parse_or_ends_in_an_empty_fragment_is_refused(raw: str) -> None:
    with pytest.raises(RoutesError, match=r"^routes: router.lists_url must be an http\(s\) URL"):
        parse_routes(_routes(lists_url=raw))


def test_lists_poll_s_is_a_positive_number() -> None:
    with pytest.raises(RoutesError, match="router.lists_poll_s must be a number"):
        parse_routes(_routes(lists_poll_s=0))
