"""The JSON body of one probe request (pure), from the contract's SPEC (tasks/core/contracts/spec.py).

Every request is pinned to one endpoint (`provider.only = [tag]`, no fallbacks), streamed, and asks for usage.
The contract sets its own fields (messages, response_format, tools...), its max_tokens, its temperature and
whether `require_parameters` is set; only a `rotated_language` contract is asked in the endpoint's language.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tasks.core.contracts import spec_of
from tasks.core.prompts import DEFAULT_PROMPT_LANGUAGE

if TYPE_CHECKING:
    from tasks.config import CanaryConfig


def prompt_language(contract: str, language: str | None) -> str:
    """The language of the prompt an attempt sends (what `Attempt.language` records)."""
    spec = spec_of(contract)
    if spec.rotated_language:
        if language is None or (spec.prompt_languages and language not in spec.prompt_languages):
            known = ", ".join(spec.prompt_languages) or "a language"
            raise ValueError(f"{contract} probe needs one of {known} (got {language!r})")
        return language
    return DEFAULT_PROMPT_LANGUAGE


def build_request(
    contract: str,
    model: str,
    tag: str,
    language: str | None,
    cfg: CanaryConfig,
    *,
    attempt_no: int = 1,
) -> dict[str, Any]:
    """The JSON body of one pinned, streamed probe request (a fresh dict: callers may mutate it).

    `language` is required for a `rotated_language` contract and ignored elsewhere. `attempt_no` is handed to
    the contract's body (the tools contract picks its turn with it). `cfg` is accepted so that per-deployment
    prompt knobs have one place to land.
    """
    spec = spec_of(contract)
    if spec.body is None:
        raise ValueError(f"contract {contract!s} sends no request of its own")
    provider: dict[str, Any] = {"only": [tag], "allow_fallbacks": False}
    if spec.require_parameters:
        provider["require_parameters"] = True
    body: dict[str, Any] = {"model": model}
    body.update(spec.body(attempt_no, prompt_language(contract, language)))
    body["max_tokens"] = spec.max_tokens
    if spec.temperature is not None:
        body["temperature"] = spec.temperature
    body["stream"] = True
    body["usage"] = {"include": True}
    body["provider"] = provider
    return body
