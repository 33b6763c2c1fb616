"""Building the upstream request body (pure): the client's body, the tier's model and provider
preferences, and the canary's ignore list merged into `provider.ignore`.

Merge rules:
- `model` becomes the tier's model.
- `provider`: the client's object, then the tier's keys on top (the route owner decides routing), except
  `ignore`, which is the union, in this order: the client's entries, the tier's, then the canary's (sorted,
  as published), each tag once. An empty result adds no `provider` key at all.
- Every other field of the client's body is passed through untouched, in its original key order.

The body is serialized compactly (`separators=(",", ":")`, UTF-8, no ASCII escaping); that serialization
is the one both sent and measured.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from provider_canary.router.routes import Tier


def merge_ignore(*lists: Sequence[str]) -> list[str]:
    """Union in first-seen order."""
    seen: dict[str, None] = {}
    for tags in lists:
        for tag in tags:
            if isinstance(tag, str) and tag not in seen:
                seen[tag] = None
    return list(seen)


def merge_provider(
    client: Any, tier: Mapping[str, Any], canary_ignore: Sequence[str]
) -> dict[str, Any] | None:
    base: dict[str, Any] = dict(client) if isinstance(client, Mapping) else {}
    raw_client, raw_tier = base.get("ignore"), tier.get("ignore")
    client_ignore: list[str] = raw_client if isinstance(raw_client, list) else []
    tier_ignore: list[str] = raw_tier if isinstance(raw_tier, list) else []
    merged = {**base, **tier}
    ignore = merge_ignore(client_ignore, tier_ignore, sorted(canary_ignore))
    if ignore:
        merged["ignore"] = ignore
    else:
        merged.pop("ignore", None)
    return merged or None


def serialize(body: Mapping[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def build_body(
    client_body: Mapping[str, Any], tier: Tier, canary_ignore: Sequence[str], messages: Any = None
) -> bytes:
    """The bytes sent to `tier`; `messages` replaces the client's messages when given (savers' output)."""
    body: dict[str, Any] = dict(client_body)
    body["model"] = tier.model
    if messages is not None:
        body["messages"] = messages
    provider = merge_provider(client_body.get("provider"), tier.provider, canary_ignore)
    if provider is None:
        body.pop("provider", None)
    else:
        body["provider"] = provider
    return serialize(body)


def parse_ignore_json(text: str, expected_model: str | None) -> tuple[str, ...] | None:
    """The `ignore` list of a published file `{"model", "ignore": [...], "entries": [...]}`.

    None when the text is not such a document or names another model (the caller keeps what it had).
    """
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    ignore = doc.get("ignore")
    if not isinstance(ignore, list) or not all(isinstance(t, str) for t in ignore):
        return None
    model = doc.get("model")
    if expected_model is not None and isinstance(model, str) and model != expected_model:
        return None
    return tuple(sorted(set(ignore)))
