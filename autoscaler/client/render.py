"""Answers as readable tables (the default), JSON (`-o json`) or YAML (`-o yaml`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import yaml

from autoscaler.domain.annotations import parse_time, time_text
from autoscaler.domain.text import escape

Json = dict[str, Any]


OUTPUTS = ("table", "json", "yaml")
DECISION_COLUMNS = (
    "AT",
    "ACTION",
    "TARGET",
    "GPUS",
    "PEAK",
    "COVERAGE",
    "THRESHOLD",
    "OUTCOME",
    "EVIDENCE",
)
AUDIT_COLUMNS = ("AT", "ACTOR", "ACTION", "TARGET", "OWNER", "OUTCOME", "REASON")


def shown(body: Json, table_view: Callable[[Json], str], output: str) -> str:
    """The answer in the format asked for; `table_view` makes the table. Whatever the format,
    no control or bidi character reaches the terminal (JSON escapes them itself)."""
    if output == "json":
        return as_json(body)
    if output == "yaml":
        return terminal_safe(yaml.safe_dump(body, sort_keys=False, allow_unicode=True))
    return terminal_safe(table_view(body))


def terminal_safe(text: str) -> str:
    """Each line escaped (`escape`): a reason set with kubectl may carry ESC, CR or U+202E."""
    return "\n".join(escape(line) for line in text.rstrip("\n").split("\n"))


def as_json(body: Json) -> str:
    return json.dumps(body, indent=2, sort_keys=True)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    rows = [[escape(str(cell)) for cell in row] for row in rows]  # widths of what is shown
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


def exemption(body: Json) -> str:
    found = body.get("exemption")
    target = f"{body.get('namespace')}/{body.get('workload')}"
    if not found:
        return f"exemption of {target} removed ({body.get('annotated')})"
    return f"{target} exempt until {found.get('until')} ({body.get('annotated')})"


def snooze(body: Json) -> str:
    target = f"{body.get('namespace')}/{body.get('workload')}"
    until = body.get("until")
    if not until:
        return f"snooze of {target} removed: a planned stop goes ahead after a fresh warning"
    clipped = body.get("clippedFrom")
    cut = f" (asked until {clipped}; rule {body.get('rule')}'s longest snooze)" if clipped else ""
    return f"{target} kept until {until}{cut}"


def pauses(body: Json) -> str:
    paused = body.get("paused") or []
    if not paused:
        return "nothing is paused"
    rows = [
        [p.get("scope", ""), p.get("by") or "-", moment(p.get("at") or "-"), p.get("reason") or ""]
        for p in paused
    ]
    return table(("SCOPE", "BY", "SINCE", "REASON"), rows)


def resumed(scope: str) -> Callable[[Json], str]:
    """What a resume did, then what is still paused (other scopes), if anything."""

    def view(body: Json) -> str:
        still = body.get("paused") or []
        if not still:
            return f"resumed {scope}; nothing else is paused"
        return f"resumed {scope}; still paused:\n{pauses(body)}"

    return view


def change(body: Json) -> str:
    return f"{body.get('action')} {body.get('namespace')}/{body.get('workload')}: done"


def decisions(body: Json) -> str:
    """The loop's decisions with their numbers; a person's changes show their action."""
    rows = [
        [
            moment(item.get("at", "")),
            str(item.get("action", "")),
            str(item.get("target", "")),
            "-" if item.get("gpus") is None else str(item["gpus"]),
            percent(item.get("peak")),
            percent(item.get("coverage")),
            percent(item.get("threshold")),
            short(str(item.get("outcome", "")), 30),
            short(str(item.get("evidence") or "-"), 40),
        ]
        for item in body.get("items") or []
    ]
    return _page(body, DECISION_COLUMNS, rows)


def audit(body: Json) -> str:
    """Who did what and why, the loop's records among them."""
    rows = [
        [
            moment(item.get("at", "")),
            str(item.get("actor", "")),
            str(item.get("action", "")),
            str(item.get("target", "")),
            short(str(item.get("owner") or "-"), 40),
            short(str(item.get("outcome", "")), 30),
            short(str(item.get("reason", ""))),
        ]
        for item in body.get("items") or []
    ]
    return _page(body, AUDIT_COLUMNS, rows)


def breaker(body: Json) -> str:
    if not body.get("open"):
        return "circuit breaker closed: deactivations go ahead (within the caps)"
    pairs = [
        ("Breaker", "open: every deactivation waits"),
        ("Since", body.get("since") or "-"),
        ("Reason", body.get("reason") or "-"),
        ("Normal cycles", _normal_cycles(body)),
    ]
    return "\n".join(f"{key + ':':<15}{value}" for key, value in pairs)


def breaker_reset(body: Json) -> str:
    if body.get("open"):
        return f"circuit breaker still open:\n{breaker(body)}"
    return "circuit breaker reset: closed; deactivations resume next cycle (within the caps)"


def report(body: Json) -> str:
    """One line per owner, then the total; the REST answer has the per-queue roll-ups. The
    GPU-hours held not running (quota held without work) get their own column once any; so do
    the stops that are requeues (Kueue's pod integration), apart from the lasting ones."""
    not_running = float(body["total"].get("heldNotRunningGpuHours", 0.0)) > 0
    requeues = int(body["total"].get("requeues", 0)) > 0
    headers = [
        "NAMESPACE",
        "QUEUE",
        "OWNER",
        "IDLE GPU-H",
        *(["NOT-RUNNING GPU-H"] if not_running else []),
        "RECLAIMED GPU-H",
        "WAIT SHORTENED",
        "WAITERS",
        "STOPS",
        *(["REQUEUES", "REQUEUED GPU-H"] if requeues else []),
        "REGRETTED",
        "CONTESTED",
    ]
    items = [
        (item, item["namespace"], item.get("queue"), item.get("owner"))
        for item in body.get("byOwner", [])
    ]
    rows = [
        _savings_row(item, namespace, queue, owner, not_running=not_running, requeues=requeues)
        for item, namespace, queue, owner in [*items, (body["total"], "TOTAL", "", "")]
    ]
    period = f"since {body['since']} until {body['until']}"
    return f"{period}\n{table(headers, rows)}"


def _savings_row(
    figures: Json, namespace: str, queue: Any, owner: Any, *, not_running: bool, requeues: bool
) -> list[str]:
    held_not_running = float(figures.get("heldNotRunningGpuHours", 0.0))
    return [
        namespace,
        queue or "-",
        owner or "-",
        f"{float(figures['heldIdleGpuHours']):.1f}",
        *([f"{held_not_running:.1f}"] if not_running else []),
        f"{float(figures['reclaimedGpuHours']):.1f}",
        wait_shortened(figures),
        str(figures["waitersAdmitted"]),
        str(figures["deactivations"]),
        *(
            [str(figures.get("requeues", 0)), f"{float(figures.get('requeuedGpuHours', 0)):.1f}"]
            if requeues
            else []
        ),
        str(figures["regretted"]),
        str(figures["contested"]),
    ]


def _normal_cycles(body: Json) -> str:
    close_after = body.get("closeAfter")
    counted = str(body.get("normalCycles") or 0)
    return f"{counted} of the {close_after} that close it" if close_after else counted


def _page(body: Json, headers: Sequence[str], rows: list[list[str]]) -> str:
    if not rows:
        return "no records"
    offset, total = int(body.get("offset") or 0), int(body.get("total") or len(rows))
    footer = f"records {offset + 1}-{offset + len(rows)} of {total}"
    following = body.get("nextOffset")
    more = f"; next page: --offset {following}" if following is not None else ""
    return f"{table(headers, rows)}\n{footer}{more}"


def moment(value: Any) -> str:
    """Every time the CLI prints: RFC 3339 in UTC to the second (`2030-01-01T10:15:00Z`), as
    the annotations write it, whatever spelling the API's JSON gave it (a fraction, an
    offset); a value that is not a time with a zone is shown as it came."""
    parsed = parse_time(value) if isinstance(value, str) and value else None
    return time_text(parsed) if parsed is not None else str(value)


def percent(value: Any) -> str:
    return "-" if value is None else f"{float(value):.0%}"


def wait_shortened(figures: Json) -> str:
    """ "at least 15m" where the figure is a lower bound (a stopped workload not seen ending)."""
    shown = minutes(figures["waitShortenedSeconds"])
    return f"at least {shown}" if figures.get("waitShortenedAtLeast") else shown


def minutes(seconds: Any) -> str:
    return "-" if seconds is None else f"{float(seconds) / 60:.0f}m"


def short(text: str, limit: int = 60) -> str:
    text = escape(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"
