"""What the loop keeps of the warning stage (ISSUE 15): hand-set snoozes bounded and audited
after each cycle (engine/listeners/limits.py), warnings and all-clears in the loop's audit
trail
once each, and the actions counted by kind."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from prometheus_client import CollectorRegistry

from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import time_text
from autoscaler.domain.audit.records import LOOP_ACTOR, AuditRecord, RuntimeState
from autoscaler.engine.listeners.limits import SnoozeLimiter
from autoscaler.engine.listeners.loop_audit import LoopAuditor
from autoscaler.engine.metrics.actions import ACTIONS_METRIC, ActionCounter
from autoscaler.engine.metrics.telemetry import ServiceMetrics
from tests.engine.warning_rig import T0, Rig, due, minutes


class Trail:
    """An `AuditSink` that keeps records as the runtime-state store does (keyed, once)."""

    def __init__(self) -> None:
        self.state = RuntimeState()

    def record(self, *records: AuditRecord) -> None:
        self.state = self.state.recorded(records, limit=100)

    def actions(self) -> list[tuple[str, str]]:
        return [(r.action, r.actor) for r in reversed(self.state.audit)]


def limiter(rig: Rig, trail: Trail) -> SnoozeLimiter:
    return SnoozeLimiter(
        writer=rig.actuator,
        audit=trail,
        clock=rig.clock,
        logger=logging.getLogger("test.snoozes"),
        leads=lambda: rig.leads,
    )


def hand_snooze(rig: Rig, *, hours: float, by: str | None = "bob") -> str:
    until = time_text(rig.clock.now() + timedelta(hours=hours))
    written = {keys.SNOOZED_UNTIL: until, **({keys.SNOOZED_BY: by} if by else {})}
    rig.cluster.annotate(rig.ref, written, now=rig.clock.now(), owner=False)
    return until


@pytest.mark.parametrize(
    ("hours", "by", "granted_hours", "record"),
    [
        pytest.param(4, "bob", 4, ("snooze", "bob"), id="within-the-bound-granted-as-bobs"),
        pytest.param(4, None, 4, ("snooze", "hand-set annotation"), id="nobody-named"),
        pytest.param(72, "bob", 24, ("cut-snooze", LOOP_ACTOR), id="too-long-is-cut"),
    ],
)
def test_a_hand_set_snooze_is_bounded_like_a_request_and_audited(
    hours: float, by: str | None, granted_hours: float, record: tuple[str, str]
) -> None:
    rig, trail = Rig(), Trail()
    rig.cycle_at(due())
    asked = hand_snooze(rig, hours=hours, by=by)
    snapshot = rig.cycle_at(due() + minutes(1))

    limiter(rig, trail)(snapshot)
    limiter(rig, trail)(snapshot)  # a snapshot read before the write landed: once

    cut = time_text(rig.clock.now() + timedelta(hours=granted_hours))
    granted = cut if record[0] == "cut-snooze" else asked
    written = rig.workload().annotations
    assert (written[keys.SNOOZED_UNTIL], written[keys.SNOOZE_GRANTED]) == (granted, granted)
    assert keys.WARNED_AT not in written  # the snooze answers the warning
    assert trail.actions() == [record]
    if record[0] == "cut-snooze":
        assert written[keys.SNOOZE_REQUESTED] == asked
        assert "longest snooze" in trail.state.audit[0].reason


def test_a_hand_set_snooze_past_the_days_allowance_is_removed() -> None:
    rig, trail = Rig(), Trail()
    three = ",".join(time_text(T0 + due() - minutes(n)) for n in (10, 20, 30))
    rig.cluster.annotate(rig.ref, {keys.SNOOZES: three}, now=T0, owner=False)
    hand_snooze(rig, hours=4)
    snapshot = rig.cycle_at(due())

    limiter(rig, trail)(snapshot)

    assert keys.SNOOZED_UNTIL not in rig.workload().annotations
    assert trail.actions() == [("cut-snooze", LOOP_ACTOR)]
    assert "3 snoozes" in trail.state.audit[0].reason


def test_a_follower_bounds_no_snooze() -> None:
    rig, trail = Rig(leads=False), Trail()
    asked = hand_snooze(rig, hours=72)
    snapshot = rig.cycle_at(due())

    limiter(rig, trail)(snapshot)

    assert rig.workload().annotations[keys.SNOOZED_UNTIL] == asked
    assert trail.actions() == []


def test_warnings_and_all_clears_are_audited_once_each_with_their_reason() -> None:
    rig, trail = Rig(), Trail()
    metrics = ServiceMetrics(CollectorRegistry(), clock=rig.clock)
    auditor = LoopAuditor(audit=trail, metrics=metrics, logger=logging.getLogger("test"))
    counter = ActionCounter(metrics.registry)
    warned = rig.cycle_at(due())
    rig.fleet.idle_since = None
    cleared = rig.cycle_at(due() + minutes(5))

    for snapshot in (warned, warned, cleared):
        auditor(snapshot)
        LoopAuditor(audit=trail, metrics=metrics, logger=logging.getLogger("t"))(snapshot)
    counter.observe(warned)
    counter.observe(cleared)

    assert [r.action for r in reversed(trail.state.audit)] == ["warn", "all-clear"]
    warn_record = trail.state.audit[-1]
    assert "warning: stop planned at" in warn_record.reason
    sample = metrics.registry.get_sample_value
    done = {"outcome": "done"}
    assert sample(ACTIONS_METRIC + "_total", {"action": "warn", **done}) == 1
    assert sample(ACTIONS_METRIC + "_total", {"action": "all-clear", **done}) == 1
