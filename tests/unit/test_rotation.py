import pytest

from tasks.config import ALL_LANGUAGES
from tasks.core.rotation import next_language, plan_languages, start_offset
from tasks.core.types import Outcome

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("previous", "expected"),
    [
        (("pt", Outcome.PASS), "fr"),
        (("pt", Outcome.FAIL), "pt"),
        (("pt", Outcome.INCONCLUSIVE), "pt"),
        (("pt", Outcome.TRANSPORT), "pt"),
        (("vi", Outcome.PASS), "en"),
    ],
    ids=["pass-moves-on", "fail-repeats", "inconclusive-repeats", "transport-repeats", "wraps-around"],
)
def test_next_language(previous: tuple[str, Outcome], expected: str) -> None:
    assert next_language("deepinfra/fp8", ALL_LANGUAGES, previous) == expected


def test_first_round_uses_stable_offsets_that_spread_the_fleet() -> None:
    tags = [f"provider{i}" for i in range(15)]
    plan = plan_languages(tags, ALL_LANGUAGES, {})
    assert plan == plan_languages(tags, ALL_LANGUAGES, {})
    assert plan["provider0"] == ALL_LANGUAGES[start_offset("provider0", len(ALL_LANGUAGES))]
    assert len(set(plan.values())) >= 8


def test_language_dropped_from_config_restarts_at_offset() -> None:
    assert next_language("x", ("en", "es"), ("pt", Outcome.FAIL)) in ("en", "es")
