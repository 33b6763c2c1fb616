"""The one base-URL rule's helpers (tasks/core/urls.py): how a base URL is kept and how a URL is shown."""

from __future__ import annotations

import pytest

from tasks.core.urls import UrlFault, base_url, url_fault, without_query

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("raw", "kept"), [
    ("http://h/api/v1/", "http://h/api/v1"),
    ("http://h/api//", "http://h/api"),
    ("http://h/apiX/", "http://h/apiX"),  # only slashes go
    ("http://h/api ", "http://h/api "),  # whitespace is not a slash
    ("http://h/api", "http://h/api"),
])
def test_a_base_url_is_kept_without_its_trailing_slashes(raw: str, kept: str) -> None:
    assert base_url(raw) == kept


@pytest.mark.parametrize(("url", "shown"), [
    ("http://h/p", "http://h/p"),
    ("http://h/p?key=1", "http://h/p"),
    ("http://h/p?key=1?more", "http://h/p"),  # cut at the first `?`
    ("http://h/p#a#b", "http://h/p"),  # cut at the first `#`
    ("http://h/p#frag?x=1", "http://h/p"),
    ("http://h/a b?k=1", "http://h/a b"),  # whitespace is no separator
])
def test_a_url_is_shown_without_its_query_or_fragment(url: str, shown: str) -> None:
    assert without_query(url) == shown


@pytest.mark.parametrize("url", ["http://h/p#", "http://h/p?"])
def test_an_empty_query_or_fragment_is_still_one_where_a_path_is_appended(url: str) -> None:
    assert url_fault(url, path_appended=True) is UrlFault.QUERY
    assert url_fault(url, path_appended=False) is None
