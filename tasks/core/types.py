"""The canary's vocabulary as types (docs/design.md "Vocabulary"): one import point over the modules that hold it.

A thin facade, kept because ~110 modules import from it. The definitions live in:

- tasks/core/vocabulary.py: the enums (Contract, Outcome, RoundStatus, RoundState, ErrorClass, Mode, Action, Layer);
- tasks/core/round_records.py: Endpoint, Usage, ToolCall, Attempt, Judgement, ContractResult, RoundInfo;
- tasks/core/policy_records.py: EndpointState, Decision;
- tasks/core/ignore_records.py: OperationalExclusion, BuiltinExclusion, IgnoreEntry, IgnoreList;
- tasks/core/notice_records.py: Alert, RouteEvent;
- tasks/core/reasons.py: Reason and the formed reasons (http_reason, midstream_reason, control_reason).
"""

from __future__ import annotations

from tasks.core.ignore_records import BuiltinExclusion, IgnoreEntry, IgnoreList, OperationalExclusion
from tasks.core.notice_records import Alert, RouteEvent
from tasks.core.policy_records import Decision, EndpointState
from tasks.core.reasons import Reason, control_reason, http_reason, midstream_reason
from tasks.core.round_records import Attempt, ContractResult, Endpoint, Judgement, RoundInfo, ToolCall, Usage
from tasks.core.vocabulary import (
    STORED_ROUND_STATES,
    Action,
    Contract,
    ErrorClass,
    Layer,
    Mode,
    Outcome,
    RoundState,
    RoundStatus,
    as_contract,
)

__all__ = [
    "Action",
    "Alert",
    "Attempt",
    "BuiltinExclusion",
    "Contract",
    "ContractResult",
    "Decision",
    "Endpoint",
    "EndpointState",
    "ErrorClass",
    "IgnoreEntry",
    "IgnoreList",
    "Judgement",
    "Layer",
    "Mode",
    "OperationalExclusion",
    "Outcome",
    "Reason",
    "RouteEvent",
    "RoundInfo",
    "RoundState",
    "RoundStatus",
    "STORED_ROUND_STATES",
    "ToolCall",
    "Usage",
    "as_contract",
    "control_reason",
    "http_reason",
    "midstream_reason",
]
