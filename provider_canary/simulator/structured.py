"""Structured replies: a real instance of the requested JSON schema, and the ways faults break it."""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Mapping
from typing import Any

from provider_canary.simulator.text import corpus

_WORDS = {
    "name": "Aria",
    "mood": "calm",
    "emotion": "curious",
    "location": "the old inn",
    "action": "smiles",
    "character": "Aria",
    "speaker": "Aria",
    "title": "The Northern Pass",
    "city": "Lisbon",
}


def schema_of(response_format: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The schema a request asks for: json_schema.schema, {} for json_object, None for plain text."""
    if not isinstance(response_format, Mapping):
        return None
    kind = response_format.get("type")
    if kind == "json_schema":
        spec = response_format.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, Mapping) else None
        return dict(schema) if isinstance(schema, Mapping) else {"type": "object"}
    if kind == "json_object":
        return {"type": "object"}
    return None


def instance(schema: Mapping[str, Any], lang: str, seed: int) -> Any:
    """A value valid against `schema` (objects, required, enum, const, scalars, arrays, local $ref)."""
    return _value(schema, schema, random.Random(seed), lang, "", 0)


def _resolve(node: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, Mapping) else {}
        return target if isinstance(target, Mapping) else {}
    return node


def _value(
    node: Mapping[str, Any], root: Mapping[str, Any], rng: random.Random, lang: str, key: str, depth: int
) -> Any:
    node = _resolve(node, root)
    if "const" in node:
        return node["const"]
    if isinstance(node.get("enum"), list) and node["enum"]:
        return rng.choice(node["enum"])
    for combo in ("anyOf", "oneOf", "allOf"):
        if isinstance(node.get(combo), list) and node[combo]:
            return _value(node[combo][0], root, rng, lang, key, depth)
    kind = node.get("type", "object" if "properties" in node else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        return _object(node, root, rng, lang, depth)
    if kind == "array":
        items = _mapping(node.get("items"))
        lo = int(node.get("minItems", 1))
        hi = max(lo, int(node.get("maxItems", lo + 2)))
        return [
            _value(items, root, rng, lang, key, depth + 1) for _ in range(rng.randint(lo, min(hi, lo + 3)))
        ]
    return _scalar(kind, node, rng, lang, key)


def _object(node: Mapping[str, Any], root: Mapping[str, Any], rng: random.Random, lang: str, depth: int,
            ) -> dict[str, Any]:
    """Every required property, and each optional one with a chance of 0.7 (all of them below depth 3)."""
    props = _mapping(node.get("properties"))
    required = set(node.get("required") or [])
    out: dict[str, Any] = {}
    for name, sub in props.items():
        if name in required or depth > 3 or rng.random() < 0.7:
            out[name] = _value(sub if isinstance(sub, Mapping) else {}, root, rng, lang, name, depth + 1)
    return out


def _scalar(kind: Any, node: Mapping[str, Any], rng: random.Random, lang: str, key: str) -> Any:
    """A number, boolean, null or string of `kind` within the node's bounds."""
    if kind == "integer":
        lo, hi = int(node.get("minimum", 0)), int(node.get("maximum", 100))
        return rng.randint(lo, max(lo, hi))
    if kind == "number":
        low, high = float(node.get("minimum", 0)), float(node.get("maximum", 100))
        return round(rng.uniform(low, max(low, high)), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    return _string(node, rng, lang, key)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _string(node: Mapping[str, Any], rng: random.Random, lang: str, key: str) -> str:
    text = _WORDS.get(key.lower())
    if text is None:
        sentences = corpus().get(lang, corpus()["en"])["sentences"]
        text = rng.choice([s for s in sentences if not s.startswith("*")] or sentences)
    lo, hi = int(node.get("minLength", 0)), node.get("maxLength")
    if isinstance(hi, int) and len(text) > hi:
        text = text[:hi].rstrip()
    while len(text) < lo:
        text += " " + text
    return text


def render(value: Any, seed: int) -> str:
    """Compact or pretty JSON (chosen by seed), non-ASCII kept as is."""
    if seed % 2:
        return json.dumps(value, ensure_ascii=False, indent=2)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def violate(value: Any, schema: Mapping[str, Any], mode: str) -> Any:
    """Valid JSON breaking the schema: a dropped required key, bad enum value, wrong type or extra key."""
    broken = copy.deepcopy(value)
    root = _resolve(schema, schema)
    if not isinstance(broken, dict):
        return {"unexpected": broken}
    props = _mapping(root.get("properties"))
    required = [r for r in root.get("required") or [] if r in broken]
    enums = [
        k
        for k, v in props.items()
        if isinstance(v, Mapping) and "enum" in _resolve(v, schema) and k in broken
    ]
    modes = [mode, "missing_required", "wrong_enum", "wrong_type", "extra_key"]
    for m in modes:
        if m == "missing_required" and required:
            del broken[required[0]]
            return broken
        if m == "wrong_enum" and enums:
            broken[enums[0]] = "not-a-listed-value"
            return broken
        if m == "wrong_type" and broken:
            k = next(iter(broken))
            broken[k] = [broken[k]] if not isinstance(broken[k], list) else "not-an-array"
            return broken
        if m == "extra_key":
            broken["unexpected_field"] = True
            return broken
    return broken


def make_invalid(text: str, mode: str) -> str:
    """Text that does not parse as JSON."""
    if mode == "trailing_comma":
        return text.rstrip().rstrip("}").rstrip() + ",}"
    if mode == "single_quotes":
        return text.replace('"', "'")
    cut = max(1, int(len(text) * 0.6))
    return text[:cut]
