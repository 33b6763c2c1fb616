"""The live counts summed per endpoint (pure): what the suspicion signals (tasks/core/suspicion.py) read.

* `tally`: per endpoint, the router's counted attempts (429s left out) in its window, and the failures per outcome.
* `quality_tally`: per endpoint and quality class, the router's judged answers in its window, by failure reason,
  and its peers' (the same model's other endpoints, from counts that do not stand for this one).

A count names its endpoint's tag, else only its provider name: it then stands for every tag of that provider in
the model's listing (`_tags_of`), and so is never a peer of those tags.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from tasks.core.live_records import LiveCount, LiveOutcome, LiveQuality
from tasks.core.types import Endpoint

__all__ = ["LiveTally", "QualityTally", "quality_tally", "tally"]


@dataclass(frozen=True, slots=True)
class LiveTally:
    """One endpoint's live traffic in the window: counted requests, failures, and failures per outcome."""

    tag: str
    requests: int
    failures: int
    by_outcome: tuple[tuple[str, int], ...] = ()

    @property
    def rate(self) -> float:
        return self.failures / self.requests if self.requests else 0.0


@dataclass(frozen=True, slots=True)
class QualityTally:
    """One endpoint's judged answers of one quality class in the window, and its peers' (the same model's other
    endpoints, from counts that do not stand for this one) over the whole window."""

    tag: str
    quality: LiveQuality
    judged: int
    failures: int
    by_reason: tuple[tuple[str, int], ...] = ()
    peer_judged: int = 0
    peer_failures: int = 0
    peer_endpoints: int = 0

    @property
    def rate(self) -> float:
        return self.failures / self.judged if self.judged else 0.0

    @property
    def peer_rate(self) -> float:
        return self.peer_failures / self.peer_judged if self.peer_judged else 0.0


def _tags_of(endpoints: Sequence[Endpoint]) -> Callable[[LiveCount], list[str]]:
    """A count's tags among `endpoints`: the tag it names, else every tag of its provider name (none when the
    tag or provider is not listed)."""
    listed = {e.tag for e in endpoints}
    by_provider: dict[str, list[str]] = {}
    for e in endpoints:
        by_provider.setdefault(e.provider_name, []).append(e.tag)

    def tags(c: LiveCount) -> list[str]:
        if c.tag:
            return [c.tag] if c.tag in listed else []
        return by_provider.get(c.provider_name or "", [])

    return tags


def tally(counts: Iterable[LiveCount], endpoints: Sequence[Endpoint], *, since: Mapping[str, datetime],
          until: datetime) -> dict[str, LiveTally]:
    """Per tag of `endpoints`, the attempt counts in [since[tag], until): a count names its tag, else its
    provider name stands for every tag of that provider. Tags not listed are left out."""
    tags_of = _tags_of(endpoints)
    sums: dict[str, dict[str, int]] = {}
    for c in counts:
        if c.quality is not None or not c.outcome.is_counted or c.minute_at >= until:
            continue  # judged-answer rows are not attempts
        for tag in tags_of(c):
            start = since.get(tag)
            if start is not None and c.minute_at < start:
                continue
            sums.setdefault(tag, {})
            sums[tag][c.outcome.value] = sums[tag].get(c.outcome.value, 0) + c.requests
    out = {}
    for tag, outcomes in sorted(sums.items()):
        failures = sum(n for o, n in outcomes.items() if LiveOutcome(o).is_failure)
        out[tag] = LiveTally(tag, sum(outcomes.values()), failures,
                             tuple(sorted((o, n) for o, n in outcomes.items() if LiveOutcome(o).is_failure)))
    return out


def quality_tally(counts: Iterable[LiveCount], endpoints: Sequence[Endpoint], *, since: Mapping[str, datetime],
                  window_start: datetime, until: datetime) -> dict[tuple[str, LiveQuality], QualityTally]:
    """Per (tag, class) with judged answers: the endpoint's own in [since[tag], until), and its peers' in
    [window_start, until): every judged count of the class that does not stand for the tag (a count known only
    by its provider name stands for each tag of that provider, so it is never its own peer)."""
    own, sources = _judged_sums(counts, _tags_of(endpoints), since, window_start, until)
    return {(tag, quality): _quality_tally(tag, quality, reasons, sources)
            for (tag, quality), reasons in sorted(own.items())}


_Sources = dict[tuple[LiveQuality, tuple[str, ...]], list[int]]


def _judged_sums(counts: Iterable[LiveCount], tags_of: Callable[[LiveCount], list[str]],
                 since: Mapping[str, datetime], window_start: datetime, until: datetime,
                 ) -> tuple[dict[tuple[str, LiveQuality], dict[str, int]], _Sources]:
    """The judged counts of the window summed: per (tag, class) the endpoint's own answers by failure reason
    ("" for a pass) since `since[tag]`; per (class, the tags a count stands for) its [judged, failures]."""
    own: dict[tuple[str, LiveQuality], dict[str, int]] = {}
    sources: _Sources = {}
    for c in counts:
        judged = c.quality is not None and c.outcome in (LiveOutcome.OK, LiveOutcome.QUALITY_FAIL)
        if not judged or c.quality is None or c.minute_at >= until or c.minute_at < window_start:
            continue
        failed = c.outcome is LiveOutcome.QUALITY_FAIL
        tags = tuple(tags_of(c))
        if not tags:
            continue
        src = sources.setdefault((c.quality, tags), [0, 0])
        src[0] += c.requests
        src[1] += c.requests if failed else 0
        for tag in tags:
            if c.minute_at < since.get(tag, window_start):
                continue
            reasons = own.setdefault((tag, c.quality), {})
            key = (c.reason or "quality_fail") if failed else ""
            reasons[key] = reasons.get(key, 0) + c.requests
    return own, sources


def _quality_tally(tag: str, quality: LiveQuality, reasons: Mapping[str, int], sources: _Sources) -> QualityTally:
    """One endpoint's tally of a class: its own answers, and its peers' (the sources that do not stand for it)."""
    peers = [(n, f, ts) for (q, ts), (n, f) in sources.items() if q is quality and tag not in ts]
    return QualityTally(
        tag, quality, sum(reasons.values()), sum(n for r, n in reasons.items() if r),
        tuple(sorted((r, n) for r, n in reasons.items() if r)),
        sum(n for n, _, _ in peers), sum(f for _, f, _ in peers), len({t for *_, ts in peers for t in ts}))
