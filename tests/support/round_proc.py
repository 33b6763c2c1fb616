"""Run one real `canary-round` in this process and print its summary as the last line of stdout (JSON).

    python -m tests.support.round_proc '{"model": ..., "round_ts": ISO, "overrides": {...}}'

The failpoint suite runs rounds through this in subprocesses, so that a failpoint's SIGKILL kills a whole
real round (its journal, its store windows, its Slack posts) and nothing of the test itself. The parent passes
PREFECT_API_URL (the shared test harness), OPENROUTER_API_KEY, SLACK_* and CANARY_TEST_FAILPOINTS.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime


def main(argv: list[str]) -> int:
    args = json.loads(argv[1])
    from flows.round import canary_round

    summary = canary_round(model=args["model"], round_ts=datetime.fromisoformat(args["round_ts"]),
                           overrides=args["overrides"], mode=args.get("mode"))
    print(json.dumps(summary, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
