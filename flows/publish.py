"""`publish-ignore-list`: refresh the keyed ignore-list artifacts after an admin change.

Artifacts belong to a flow or task run (creating one outside is deprecated), so an admin command that runs
against a Prefect API publishes through this small flow. The JSON file is already written by then.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from prefect import flow

from tasks.core.types import IgnoreEntry, IgnoreList, Layer
from tasks.runtime.secrets import install_redaction


def ignore_list_from_json(raw: dict[str, Any]) -> IgnoreList:
    """The inverse of `IgnoreList.as_json` (flow parameters are JSON): every field, `until` included."""
    entries = tuple(
        IgnoreEntry(
            tag=e["tag"],
            layer=Layer(e["layer"]),
            reason=e["reason"],
            until=datetime.fromisoformat(e["until"]) if e.get("until") else None,
        )
        for e in raw["entries"]
    )
    return IgnoreList(model=raw["model"], ignore=tuple(raw["ignore"]), entries=entries)


@flow(name="publish-ignore-list", flow_run_name="publish-ignore-list")
def publish_ignore_artifacts(lists: list[dict[str, Any]]) -> list[str]:
    install_redaction()  # the entry point of a deployment's process: hooks before any log
    from prefect.artifacts import create_markdown_artifact

    from tasks.core.render.markdown import render_ignore_markdown
    from tasks.ignore_list.publish import artifact_key

    keys = []
    for raw in lists:
        il = ignore_list_from_json(raw)
        create_markdown_artifact(
            key=artifact_key(il.model),
            markdown=render_ignore_markdown(il),
            description=f"provider.ignore for {il.model}",
        )
        keys.append(artifact_key(il.model))
    return keys
