"""Which language each endpoint is probed in this round (pure).

docs/design.md: the endpoint keeps the same language next round whenever this round's language outcome was not
`pass`; otherwise it moves to the next language of the rotation. Endpoints start at different offsets so one
round covers many languages across the fleet.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence

from tasks.core.types import Outcome


def start_offset(tag: str, n_languages: int) -> int:
    """A stable per-tag offset (crc32, not hash(): the same in every process)."""
    return zlib.crc32(tag.encode("utf-8")) % n_languages


def next_language(
    tag: str,
    languages: Sequence[str],
    previous: tuple[str, Outcome] | None,
) -> str:
    """The language for `tag` this round, given its previous (language, outcome), if any."""
    if not languages:
        raise ValueError("at least one language is needed")
    if previous is None or previous[0] not in languages:
        return languages[start_offset(tag, len(languages))]
    lang, outcome = previous
    if outcome is not Outcome.PASS:
        return lang
    return languages[(languages.index(lang) + 1) % len(languages)]


def plan_languages(
    tags: Sequence[str],
    languages: Sequence[str],
    previous: Mapping[str, tuple[str, Outcome]],
) -> dict[str, str]:
    return {tag: next_language(tag, languages, previous.get(tag)) for tag in tags}
