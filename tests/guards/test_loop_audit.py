"""The loop's audit of a dry-run: one record per idle episode, whoever writes it and however
often the decision is seen, over a trail as bounded as the ConfigMap's."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from prometheus_client import CollectorRegistry

from autoscaler.domain.audit.records import AuditRecord, RuntimeState
from autoscaler.domain.models import Action, Decision, Snapshot, State, WorkloadStatus
from autoscaler.engine.listeners.loop_audit import LoopAuditor
from autoscaler.engine.metrics.telemetry import ServiceMetrics
from tests.support.domain_builders import A_DEFAULT_RULE, NOW, a_workload
from tests.support.fakes import FakeClock

LOG = logging.getLogger("tests.loop_audit")
EPISODE = NOW - timedelta(hours=2)


@dataclass
class BoundedTrail:
    """An `AuditSink` keeping the newest `limit` records, as the runtime-state store does;
    counts the writes that changed it."""

    limit: int
    state: RuntimeState = field(default_factory=RuntimeState)
    writes: int = 0

    def record(self, *records: AuditRecord) -> None:
        wanted = self.state.recorded(records, limit=self.limit)
        if wanted != self.state:
            self.state, self.writes = wanted, self.writes + 1

    def person_changes_something(self, at: datetime) -> None:
        self.record(AuditRecord(at=at, actor="alice", action="pause", target="service", reason="x"))


def dry_run(*names: str, at: datetime = NOW) -> Snapshot:
    rows = []
    for name in names:
        info = a_workload("team-a", name).gpu_pod(f"{name}-w").build()
        decision = Decision(
            info.ref,
            State.IDLE,
            Action.WOULD_DEACTIVATE,
            "idle",
            idle_since=EPISODE,
            rule=A_DEFAULT_RULE,
        )
        rows.append(WorkloadStatus(info, decision))
    return Snapshot(
        cycle=1, taken_at=at, workloads=tuple(rows), cluster_ok=True, metrics_ok=True, dry_run=True
    )


def auditor(trail: BoundedTrail) -> LoopAuditor:
    metrics = ServiceMetrics(CollectorRegistry(), clock=FakeClock(NOW))
    return LoopAuditor(audit=trail, metrics=metrics, logger=LOG)


def would_records(trail: BoundedTrail) -> list[str]:
    return [r.target for r in trail.state.audit if r.action == "would-deactivate"]


def test_a_restarted_process_finds_the_decision_in_the_trail_and_records_nothing() -> None:
    trail = BoundedTrail(limit=10)
    auditor(trail)(dry_run("rc"))

    auditor(trail)(dry_run("rc", at=NOW + timedelta(minutes=1)))  # a new process

    assert would_records(trail) == ["team-a/rc"]
    assert trail.writes == 1


def test_a_decision_aged_out_of_the_trail_is_not_recorded_again_while_the_process_runs() -> None:
    trail = BoundedTrail(limit=2)
    audit = auditor(trail)
    audit(dry_run("rc"))
    for minute in (1, 2):
        trail.person_changes_something(NOW + timedelta(minutes=minute))

    audit(dry_run("rc", at=NOW + timedelta(minutes=3)))

    assert would_records(trail) == []  # aged out, and left out
    assert trail.writes == 3


def test_a_follower_records_nothing() -> None:
    trail = BoundedTrail(limit=10)
    metrics = ServiceMetrics(CollectorRegistry(), clock=FakeClock(NOW))
    follower = LoopAuditor(audit=trail, metrics=metrics, logger=LOG, leads=lambda: False)

    follower(dry_run("rc", "rc-2"))

    assert trail.writes == 0
