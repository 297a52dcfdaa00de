"""What the auth proxy can do to query responses: the ways a real Prometheus/Thanos misbehaves.

A `FaultPlan` holds rules, each good for `times` queries (None: until reset). Per query it answers
either a `Canned` response (error envelope, bare 5xx) instead of forwarding, or a list of
transforms (warnings, NaN values) to apply to the forwarded JSON, plus a delay to sleep first.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Body = dict[str, Any]
Transform = Callable[[Body], None]


@dataclass(frozen=True)
class Canned:
    status: int
    content_type: str
    body: bytes


@dataclass
class _Rule:
    remaining: int | None
    delay_s: float = 0.0
    canned: Canned | None = None
    transform: Transform | None = None

    def take(self) -> None:
        if self.remaining is not None:
            self.remaining -= 1


@dataclass
class Plan:
    """What to do to one query, decided when it arrives."""

    delay_s: float = 0.0
    canned: Canned | None = None
    transforms: list[Transform] = field(default_factory=list)


class FaultPlan:
    def __init__(self) -> None:
        self._rules: list[_Rule] = []
        self._lock = threading.Lock()

    def add(self, rule: _Rule) -> None:
        with self._lock:
            self._rules.append(rule)

    def reset(self) -> None:
        with self._lock:
            self._rules.clear()

    def next_plan(self) -> Plan:
        """Use up one turn of each rule acting on this query; a canned answer means no forwarding,
        so transforms are then left for the next query."""
        with self._lock:
            delays = [r for r in self._rules if r.delay_s]
            canned = next((r for r in self._rules if r.canned), None)
            transforms = [r for r in self._rules if r.transform] if canned is None else []
            acting = [*delays, *([canned] if canned else []), *transforms]
            for rule in acting:
                rule.take()
            self._rules = [r for r in self._rules if r.remaining is None or r.remaining > 0]
        return Plan(
            delay_s=sum(r.delay_s for r in delays),
            canned=canned.canned if canned else None,
            transforms=[r.transform for r in transforms if r.transform],
        )


def warnings_rule(messages: list[str], times: int | None) -> _Rule:
    def add_warnings(body: Body) -> None:
        body["warnings"] = [*body.get("warnings", []), *messages]

    return _Rule(remaining=times, transform=add_warnings)


def nan_rule(times: int | None) -> _Rule:
    return _Rule(remaining=times, transform=replace_values_with_nan)


def value_rule(value: float, times: int | None) -> _Rule:
    return _Rule(remaining=times, transform=lambda body: replace_values(body, repr(value)))


def error_envelope_rule(*, status: int, error_type: str, error: str, times: int | None) -> _Rule:
    body = json.dumps({"status": "error", "errorType": error_type, "error": error}).encode()
    return _Rule(remaining=times, canned=Canned(status, "application/json", body))


def status_rule(*, status: int, body: str, times: int | None) -> _Rule:
    return _Rule(remaining=times, canned=Canned(status, "text/plain; charset=utf-8", body.encode()))


def delay_rule(seconds: float, times: int | None) -> _Rule:
    return _Rule(remaining=times, delay_s=seconds)


def replace_values_with_nan(body: Body) -> None:
    replace_values(body, "NaN")


def replace_values(body: Body, value: str) -> None:
    """Every sample's value becomes `value`, as Prometheus writes it (a string)."""
    data = body.get("data", {})
    result = data.get("result")
    if data.get("resultType") == "scalar" and result:
        result[1] = value
        return
    for series in result or []:
        if "value" in series:
            series["value"][1] = value
        for point in series.get("values", []):
            point[1] = value
