"""`canary at`: what the canary saw around the time a user reported a change.

* report      the pure build: DataFrames of the store's tables and views -> a `Report` (`build_report`)
* records     the report's records; frames, in_force: helpers of the build
* from_store  `report_from_connection`: read the rows from any store connection, then build (CLI, notebooks)
* text        `format_report`: the report as readable text (the CLI; `Report.as_json` for --json)
"""

from tasks.at.from_store import report_from_connection
from tasks.at.records import Report
from tasks.at.report import build_report, parse_time, parse_window
from tasks.at.text import format_report

__all__ = ["Report", "build_report", "format_report", "parse_time", "parse_window", "report_from_connection"]
