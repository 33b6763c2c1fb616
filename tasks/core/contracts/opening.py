"""Corrupted openings (docs/requirements.md incident a): stray punctuation or a token fragment first.

One endpoint corrupted the start of 19 of 20 replies (`",*She`, `ing *He`, `;`, `.The`) while 14 other hosts
of the same model did so 0 times in 49. In roleplay the first character is often a Markdown emphasis marker,
so one stray byte breaks the formatting of the whole reply.

`is_corrupted_opening(text)` per reply (leading whitespace ignored). A reply may open with text (any letter,
digit, CJK...), Markdown emphasis (`*`, `_`, `**`), a heading/quote/list marker, an opening quote of
dialogue (`"`, `“`, `«`, `「`, `『`, `'`, `‘`, `„`), a dialogue dash, `¿`/`¡`, an ellipsis, `(`/`[`. It is
corrupted when it opens with:
* stray punctuation: `, ; : . ! ? ) ] }` or their CJK/Arabic forms (a single `.`; `...` is fine);
* an opening mark immediately followed by stray punctuation: `",*She`, `*,He`;
* a short lowercase fragment glued to markup: `ing *He`, `ed* She`, `ly"Hello` (1-5 lowercase letters then
  `*`/`_`/a quote, optionally after one space).

`judge_endpoint(replies)`: fewer than `MIN_REPLIES` text replies -> `inconclusive` `few_replies`; corrupted
openings >= `MIN_CORRUPTED` and more than half -> `fail` `corrupted_opening`; else `pass`.
`judge_round_openings(per_tag)`: the same, compared with the model's other endpoints in the round: when at
least `MIN_PEERS` endpoints were judged and more than half of them would fail, the prompt (not the
endpoints) is at fault: every would-be failure becomes `inconclusive` `prompt_suspect`.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence

from tasks.config import CanaryConfig
from tasks.core.classify import upstream_failure
from tasks.core.contracts.spec import ContractSpec, PeerRound
from tasks.core.types import Attempt, Contract, ErrorClass, Judgement, Outcome, Reason

MIN_REPLIES = 2
MIN_CORRUPTED = 2
MIN_PEERS = 3
#: The built-in contracts whose replies are free text (structured output is JSON: its first char is `{`): the
#: default for direct callers. The round passes the registry's (every SPEC with `free_text`).
TEXT_CONTRACTS: frozenset[str] = frozenset({Contract.TTFT, Contract.REFUSAL, Contract.LANGUAGE})

_STRAY = ",;:.!?)]}、。，；：！？）」』】،؛"
_OPENERS = "\"'“‘„«「『*_"
_STRAY_START = re.compile(rf"^[{re.escape(_STRAY)}]")
_ELLIPSIS = re.compile(r"^(?:\.\.|…)")
_OPENER_THEN_STRAY = re.compile(rf"^[{re.escape(_OPENERS)}]+\s?[{re.escape(_STRAY)}](?!\.\.)")
_FRAGMENT = re.compile(r"^[^\W\d_A-Z]{1,5} ?[*_\"“«]", re.UNICODE)


def is_corrupted_opening(text: str) -> bool:
    """True when the reply's first characters are stray punctuation or a fragment of another token."""
    head = text.lstrip()[:16]
    if not head:
        return False
    if _ELLIPSIS.match(head) or head.startswith("..."):
        return False
    if _STRAY_START.match(head):
        return True
    if _OPENER_THEN_STRAY.match(head):
        return True
    m = _FRAGMENT.match(head)
    return m is not None and m.group(0)[0].islower()


def text_replies(attempts: Sequence[Attempt], text_contracts: Collection[str] = TEXT_CONTRACTS) -> list[Attempt]:
    """The attempts whose reply text counts: free-text contracts, completed or not, non-empty, pinned.

    A reply that broke the protocol is left out: its own contract already fails (`protocol_violation`), and
    text decoded from undecodable frames says nothing reliable about its first characters. So is a reply cut
    by a failed upstream hop (`upstream_error`, judged once by its own contract).
    """
    return [
        a
        for a in attempts
        if a.contract in text_contracts
        and a.text.strip()
        and not a.is_pin_mismatch
        and a.error_class is not ErrorClass.PROTOCOL
        and upstream_failure(a) is None
    ]


def count_openings(attempts: Sequence[Attempt], text_contracts: Collection[str] = TEXT_CONTRACTS
                   ) -> tuple[int, int, str]:
    replies = text_replies(attempts, text_contracts)
    bad = [a for a in replies if is_corrupted_opening(a.text)]
    sample = repr(bad[0].text.lstrip()[:12]) if bad else ""
    return len(bad), len(replies), sample


def judge_endpoint(attempts: Sequence[Attempt], text_contracts: Collection[str] = TEXT_CONTRACTS) -> Judgement:
    bad, n, sample = count_openings(attempts, text_contracts)
    if n < MIN_REPLIES:
        return Judgement(Outcome.INCONCLUSIVE, Reason.FEW_REPLIES, f"text replies ({n}) < {MIN_REPLIES}")
    evidence = f"corrupted openings ({bad}/{n})" + (f" e.g. {sample}" if sample else "")
    if bad >= MIN_CORRUPTED and bad * 2 > n:
        return Judgement(Outcome.FAIL, Reason.CORRUPTED_OPENING, f"{evidence} > 50%")
    return Judgement(Outcome.PASS, Reason.OK, evidence)


def judge_round_openings(per_tag: Mapping[str, Sequence[Attempt]], text_contracts: Collection[str] = TEXT_CONTRACTS
                         ) -> dict[str, Judgement]:
    """Judge every endpoint of one model, then discount failures shared by most of them (prompt at fault)."""
    own = {tag: judge_endpoint(attempts, text_contracts) for tag, attempts in per_tag.items()}
    judged = [j for j in own.values() if j.outcome.is_quality()]
    failing = [j for j in judged if j.outcome is Outcome.FAIL]
    if len(judged) >= MIN_PEERS and len(failing) * 2 > len(judged):
        peers = f"endpoints failing ({len(failing)}/{len(judged)})"
        return {
            tag: Judgement(Outcome.INCONCLUSIVE, Reason.PROMPT_SUSPECT, f"{j.evidence}; {peers}")
            if j.outcome is Outcome.FAIL
            else j
            for tag, j in own.items()
        }
    return own


def judge(attempts: Sequence[Attempt], cfg: CanaryConfig) -> Judgement:
    """Registry form: one endpoint's round attempts, without peers (tasks/core/judge.py adds the peers)."""
    return judge_endpoint(attempts)


def judge_peers(peers: PeerRound, cfg: CanaryConfig) -> dict[str, Judgement]:
    """Round-level form: every endpoint of the model with attempts, over the round's free-text replies."""
    return judge_round_openings(peers.attempts, peers.text_contracts)


#: Never probed: judged over the endpoint's free-text replies of the other contracts; confirming it probes those.
SPEC = ContractSpec(name=Contract.OPENING, judge=judge, round_judge=judge_peers, hard_by_default=True)
