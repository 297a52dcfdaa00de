"""Answers as readable tables (the default) or JSON (`-o json`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

Json = dict[str, Any]
WORKLOAD_COLUMNS = (
    "NAMESPACE",
    "OWNER",
    "WORKLOAD",
    "GPUS",
    "STATE",
    "PEAK",
    "IDLE-LEFT",
    "REASON",
)


def as_json(body: Json) -> str:
    return json.dumps(body, indent=2, sort_keys=True)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [
        max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=False)
    ]
    lines = [headers, *rows]
    return "\n".join(
        "  ".join(
            str(cell).ljust(width) for cell, width in zip(line, widths, strict=False)
        ).rstrip()
        for line in lines
    )


def workloads(body: Json) -> str:
    items = body.get("items") or []
    if not items:
        return "no workloads" + ("" if body.get("snapshot") else " (no cycle has finished yet)")
    return table(WORKLOAD_COLUMNS, [_workload_row(item) for item in items])


def workload(body: Json) -> str:
    exemption = body.get("exemption") or {}
    pairs = [
        ("Workload", f"{body.get('namespace')}/{body.get('name')}"),
        ("Owner", _owner(body)),
        ("Queue", body.get("queue") or "-"),
        ("State", body.get("state")),
        ("Action", body.get("action")),
        ("Reason", body.get("reason")),
        ("GPUs", body.get("gpus")),
        ("Peak utilization", _percent(body.get("peakUtilization"))),
        ("Coverage", _percent(body.get("coverage"))),
        ("Idle since", body.get("idleSince") or "-"),
        ("Time left", _minutes(body.get("timeLeftSeconds"))),
        ("Exempt until", _exempt_until(exemption) if exemption else "-"),
    ]
    if exemption:
        pairs.append(
            ("Exempted by", f"{exemption.get('by') or '?'}: {exemption.get('reason') or ''}")
        )
    return "\n".join(f"{key + ':':<18}{value}" for key, value in pairs)


def exemption(body: Json) -> str:
    found = body.get("exemption")
    target = f"{body.get('namespace')}/{body.get('workload')}"
    if not found:
        return f"exemption of {target} removed ({body.get('annotated')})"
    return f"{target} exempt until {found.get('until')} ({body.get('annotated')})"


def pauses(body: Json) -> str:
    paused = body.get("paused") or []
    if not paused:
        return "nothing is paused"
    rows = [
        [p.get("scope", ""), p.get("by") or "-", p.get("at") or "-", p.get("reason") or ""]
        for p in paused
    ]
    return table(("SCOPE", "BY", "SINCE", "REASON"), rows)


def change(body: Json) -> str:
    return f"{body.get('action')} {body.get('namespace')}/{body.get('workload')}: done"


def _workload_row(item: Json) -> list[str]:
    return [
        str(item.get("namespace", "")),
        _owner(item),
        str(item.get("name", "")),
        str(item.get("gpus", "")),
        str(item.get("state", "")),
        _percent(item.get("peakUtilization")),
        _minutes(item.get("timeLeftSeconds")),
        _short(str(item.get("reason", ""))),
    ]


def _owner(item: Json) -> str:
    owner = item.get("owner") or {}
    return f"{owner.get('kind')}/{owner.get('name')}" if owner else "-"


def _exempt_until(found: Json) -> str:
    return "indefinitely" if found.get("indefinite") else str(found.get("until"))


def _percent(value: Any) -> str:
    return "-" if value is None else f"{float(value):.0%}"


def _minutes(seconds: Any) -> str:
    return "-" if seconds is None else f"{float(seconds) / 60:.0f}m"


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
