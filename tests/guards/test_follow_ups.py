"""The loop notes, once each, when a deactivation's waiter is admitted and when the workload it
stopped is active again; a restarted process or a follower writes nothing twice."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from autoscaler.domain.audit.records import AuditRecord, RuntimeState
from autoscaler.domain.audit.savings import savings
from autoscaler.domain.audit.subjects import Subject
from autoscaler.domain.models import (
    Action,
    ActionRecord,
    Decision,
    Snapshot,
    State,
    WorkloadInfo,
    WorkloadRef,
    WorkloadStatus,
)
from autoscaler.domain.outcomes import Outcome
from autoscaler.engine.listeners.follow_ups import FollowUps
from tests.support.domain_builders import A_DEFAULT_RULE, NOW, a_workload

LOG = logging.getLogger("tests.follow_ups")
WAITER = WorkloadRef("team-b", "waiter")
STOPPED = WorkloadRef("team-a", "rc")


@dataclass
class MemoryState:
    """The runtime state in memory, counting the writes that changed it."""

    state: RuntimeState = field(default_factory=RuntimeState)
    writes: int = 0

    def read(self) -> RuntimeState:
        return self.state

    def change(self, edit: object) -> RuntimeState:
        raise NotImplementedError

    def record(self, *records: AuditRecord) -> None:
        wanted = self.state.recorded(records, limit=50)
        if wanted != self.state:
            self.state, self.writes = wanted, self.writes + 1

    def announce(self, *, reason: str, message: str, now: datetime) -> None:
        raise NotImplementedError


def row(info: WorkloadInfo, action: Action = Action.NONE) -> WorkloadStatus:
    decision = Decision(
        info.ref,
        State.IDLE,
        action,
        "idle",
        gpus=info.gpus,
        beneficiary=WAITER,
        rule=A_DEFAULT_RULE,
    )
    return WorkloadStatus(info, decision)


def cycle(
    at: datetime, *, waiter_admitted_at: datetime | None, stopped_active: bool, acted: bool = False
) -> Snapshot:
    waiter = a_workload("team-b", "waiter").not_admitted()
    if waiter_admitted_at is not None:
        waiter = waiter.admitted(at=waiter_admitted_at)
    stopped = a_workload("team-a", "rc").gpu_pod("rc-0", gpus=4)
    stopped = stopped if stopped_active else stopped.inactive()
    actions = (ActionRecord(STOPPED, Action.DEACTIVATE, "idle", NOW, Outcome.done()),)
    return Snapshot(
        cycle=1,
        taken_at=at,
        cluster_ok=True,
        metrics_ok=True,
        dry_run=False,
        workloads=(row(stopped.build(), Action.DEACTIVATE), row(waiter.build())),
        actions=actions if acted else (),
    )


def notes(state: MemoryState) -> list[tuple[str, datetime, str]]:
    return [(r.action, r.at, r.target) for r in state.state.audit if r.action != "deactivate"]


def test_the_waiters_admission_and_the_reactivation_are_each_noted_once() -> None:
    state = MemoryState()
    follow = FollowUps(state=state, logger=LOG)
    admitted_at, back_at = NOW + timedelta(minutes=3), NOW + timedelta(hours=2)

    follow(cycle(NOW, waiter_admitted_at=None, stopped_active=False, acted=True))
    follow(cycle(NOW + timedelta(minutes=5), waiter_admitted_at=admitted_at, stopped_active=False))
    follow(cycle(NOW + timedelta(minutes=6), waiter_admitted_at=admitted_at, stopped_active=False))
    follow(cycle(back_at, waiter_admitted_at=admitted_at, stopped_active=True))
    follow(
        cycle(back_at + timedelta(minutes=1), waiter_admitted_at=admitted_at, stopped_active=True)
    )

    assert notes(state) == [
        ("seen-reactivated", back_at, "team-a/rc"),
        ("waiter-admitted", admitted_at, "team-a/rc"),
    ]
    assert state.state.audit[1].subject == Subject(beneficiary="team-b/waiter")
    assert state.writes == 2
    # spans as people write them, never a timedelta's "2:00:00"
    assert [r.reason for r in state.state.audit[:2]] == [
        "active again after 2h (from our deactivation)",
        "team-b/waiter admitted 3m after team-a/rc was deactivated for it",
    ]


def test_a_new_leader_reads_the_trail_and_notes_what_was_still_open() -> None:
    deactivation = AuditRecord(
        at=NOW,
        actor="idle-gpu-autoscaler",
        action="deactivate",
        target="team-a/rc",
        reason="idle",
        outcome="started",
        gpus=4,
        subject=Subject(beneficiary="team-b/waiter"),
    )
    state = MemoryState(RuntimeState(audit=(deactivation,)))
    admitted_at = NOW + timedelta(minutes=10)
    first = cycle(NOW + timedelta(minutes=11), waiter_admitted_at=admitted_at, stopped_active=False)

    FollowUps(state=state, logger=LOG)(first)
    FollowUps(state=state, logger=LOG)(replace(first, taken_at=NOW + timedelta(minutes=12)))

    assert notes(state) == [("waiter-admitted", admitted_at, "team-a/rc")]
    assert state.writes == 1
    report = savings(state.state.audit, (), since=NOW - timedelta(days=1), now=first.taken_at)
    assert report.total.wait_shortened == timedelta(minutes=10)


def test_a_follower_notes_nothing() -> None:
    state = MemoryState()
    follow = FollowUps(state=state, logger=LOG, leads=lambda: False)

    follow(cycle(NOW, waiter_admitted_at=NOW, stopped_active=True, acted=True))

    assert state.writes == 0
