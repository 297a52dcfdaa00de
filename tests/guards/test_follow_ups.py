"""The loop notes, once each, when a deactivation's waiter is admitted and when the workload it
stopped is active again; a restarted process or a follower writes nothing twice."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

import pytest

from autoscaler.core.errors import ClusterUnavailable
from autoscaler.domain.audit.records import AuditRecord, RecordKey, RuntimeState
from autoscaler.domain.audit.savings import savings
from autoscaler.domain.audit.subjects import Subject, subject_of
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


def snapshot(at: datetime, *rows: WorkloadStatus, acted: bool = False) -> Snapshot:
    actions = (ActionRecord(STOPPED, Action.DEACTIVATE, "idle", NOW, Outcome.done()),)
    return Snapshot(
        cycle=1,
        taken_at=at,
        cluster_ok=True,
        metrics_ok=True,
        dry_run=False,
        workloads=rows,
        actions=actions if acted else (),
    )


def cycle(
    at: datetime, *, waiter_admitted_at: datetime | None, stopped_active: bool, acted: bool = False
) -> Snapshot:
    waiter = a_workload("team-b", "waiter").not_admitted()
    if waiter_admitted_at is not None:
        waiter = waiter.admitted(at=waiter_admitted_at)
    stopped = a_workload("team-a", "rc").gpu_pod("rc-0", gpus=4)
    stopped = stopped if stopped_active else stopped.inactive()
    return snapshot(at, row(stopped.build(), Action.DEACTIVATE), row(waiter.build()), acted=acted)


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
    # admitted at +10 min, the stopped workload not seen ending by +11: at least 1 min sooner
    assert (report.total.wait_shortened, report.total.wait_shortened_at_least) == (
        timedelta(minutes=1),
        True,
    )


def test_a_follower_notes_nothing() -> None:
    state = MemoryState()
    follow = FollowUps(state=state, logger=LOG, leads=lambda: False)

    follow(cycle(NOW, waiter_admitted_at=NOW, stopped_active=True, acted=True))

    assert state.writes == 0


def in_queue(
    name: str, *, queue: str, cohort: str | None, admitted_at: datetime | None, gpus: int = 2
) -> WorkloadStatus:
    builder = a_workload("team-b", name).gpu_pod(f"{name}-0", gpus=gpus)
    builder = builder.admitted(at=admitted_at) if admitted_at else builder.not_admitted()
    info = replace(builder.build(), cluster_queue=queue, cohort=cohort)
    busy = Decision(info.ref, State.BUSY, Action.NONE, "busy", gpus=gpus, rule=A_DEFAULT_RULE)
    return WorkloadStatus(info, busy)


def stopped_for_nobody(*, active: bool) -> WorkloadStatus:
    builder = a_workload("team-a", "rc").gpu_pod("rc-0", gpus=4)
    info = replace((builder if active else builder.inactive()).build(), cluster_queue="cq-a")
    info = replace(info, cohort="lab")
    decision = Decision(
        info.ref, State.IDLE, Action.DEACTIVATE, "idle", gpus=4, rule=A_DEFAULT_RULE
    )
    return WorkloadStatus(info, decision)


def test_a_stop_for_nobody_in_particular_notes_who_took_its_quota_and_when_it_was_gone() -> None:
    state = MemoryState()
    follow = FollowUps(state=state, logger=LOG)
    minute = timedelta(minutes=1)
    later = [
        in_queue("earlier", queue="cq-a", cohort="lab", admitted_at=NOW - minute),
        in_queue("elsewhere", queue="cq-x", cohort="other", admitted_at=NOW + minute),
        in_queue("borrower", queue="cq-b", cohort="lab", admitted_at=NOW + 2 * minute),
        in_queue("same-queue", queue="cq-a", cohort=None, admitted_at=NOW + 3 * minute),
        in_queue("past-the-freed-gpus", queue="cq-a", cohort="lab", admitted_at=NOW + 4 * minute),
    ]
    gone_at = NOW + timedelta(hours=2)

    follow(snapshot(NOW, stopped_for_nobody(active=True), acted=True))
    follow(snapshot(NOW + 5 * minute, stopped_for_nobody(active=False), *later))
    follow(snapshot(NOW + 6 * minute, stopped_for_nobody(active=False), *later))
    follow(snapshot(gone_at, *later))

    assert sorted(waiters_noted(state)) == [
        ("team-b/borrower", NOW + 2 * minute),
        ("team-b/same-queue", NOW + 3 * minute),
    ]
    assert [(r.action, r.at) for r in state.state.audit if r.action == "seen-ended"] == [
        ("seen-ended", gone_at)
    ]
    trail = (*state.state.audit, a_deactivation_record())
    total = savings(
        trail, (), since=NOW - timedelta(days=1), now=gone_at + timedelta(hours=1)
    ).total
    assert (total.waiters_admitted, total.wait_shortened, total.wait_shortened_at_least) == (
        2,
        (gone_at - (NOW + 2 * minute)) + (gone_at - (NOW + 3 * minute)),
        False,
    )
    assert total.reclaimed_gpu_hours == 4 * 2.0  # until it was gone, not until now


def a_deactivation_record(subject: Subject | None = None) -> AuditRecord:
    """The loop's record of the stop the follow-ups followed."""
    return AuditRecord(
        at=NOW,
        actor="idle-gpu-autoscaler",
        action="deactivate",
        target="team-a/rc",
        reason="idle",
        outcome="started",
        gpus=4,
        subject=subject or Subject(cluster_queue="cq-a", owner="RayCluster/rc"),
    )


def waiters_noted(state: MemoryState) -> list[tuple[str | None, datetime]]:
    return [
        (r.subject.beneficiary if r.subject else None, r.at)
        for r in state.state.audit
        if r.action == "waiter-admitted"
    ]


def test_a_workload_asking_for_no_gpu_is_no_waiter() -> None:
    state = MemoryState()
    follow = FollowUps(state=state, logger=LOG)
    minute = timedelta(minutes=1)
    cpu_only = in_queue("cpu-only", queue="cq-a", cohort="lab", admitted_at=NOW + minute, gpus=0)
    gpu_job = in_queue("gpu-job", queue="cq-a", cohort="lab", admitted_at=NOW + 3 * minute)

    follow(snapshot(NOW, stopped_for_nobody(active=True), acted=True))
    follow(snapshot(NOW + 2 * minute, stopped_for_nobody(active=False), cpu_only))
    assert waiters_noted(state) == []
    follow(snapshot(NOW + 4 * minute, stopped_for_nobody(active=False), cpu_only, gpu_job))

    assert waiters_noted(state) == [("team-b/gpu-job", NOW + 3 * minute)]


def test_a_new_leader_credits_the_waiters_a_single_leader_would() -> None:
    """A 4-GPU stop: a 1-GPU waiter noted before the leader changes; after, a 2-GPU waiter
    of another ClusterQueue of its cohort, then a 2-GPU one of its own (the freed GPUs then
    covered), then one too many."""
    minute = timedelta(minutes=1)
    arriving = [
        in_queue("small", queue="cq-a", cohort="lab", admitted_at=NOW + minute, gpus=1),
        in_queue("borrower", queue="cq-b", cohort="lab", admitted_at=NOW + 12 * minute),
        in_queue("same-queue", queue="cq-a", cohort="lab", admitted_at=NOW + 20 * minute),
        in_queue("one-too-many", queue="cq-a", cohort="lab", admitted_at=NOW + 25 * minute),
    ]
    stopped = stopped_for_nobody(active=False)
    stop = a_deactivation_record(subject_of(stopped.info, stopped.decision))
    cycles = [
        snapshot(NOW, stopped_for_nobody(active=True), acted=True),
        snapshot(NOW + 5 * minute, stopped, *arriving[:1]),
        snapshot(NOW + 10 * minute, stopped, *arriving[:1]),
        snapshot(NOW + 30 * minute, stopped, *arriving),
    ]
    one, changed = (
        MemoryState(RuntimeState(audit=(stop,))),
        MemoryState(RuntimeState(audit=(stop,))),
    )
    leader = FollowUps(state=one, logger=LOG)
    for each in cycles:
        leader(each)
    before = FollowUps(state=changed, logger=LOG)
    for each in cycles[:2]:
        before(each)
    after = FollowUps(state=changed, logger=LOG)  # the new leader reads the trail
    for each in cycles[2:]:
        after(each)

    assert waiters_noted(changed) == waiters_noted(one)
    assert sorted(waiters_noted(changed)) == [
        ("team-b/borrower", NOW + 12 * minute),
        ("team-b/same-queue", NOW + 20 * minute),
        ("team-b/small", NOW + minute),
    ]
    since, now = NOW - timedelta(days=1), NOW + timedelta(hours=1)
    assert savings(changed.state.audit, (), since=since, now=now) == savings(
        one.state.audit, (), since=since, now=now
    )


def test_a_note_from_before_notes_kept_gpus_covers_the_whole_stop() -> None:
    """Read back by a new leader: such a waiter took all the GPUs freed, as its writer had it."""
    minute = timedelta(minutes=1)
    stopped = stopped_for_nobody(active=False)
    old_note = AuditRecord(
        at=NOW + minute,
        actor="idle-gpu-autoscaler",
        action="waiter-admitted",
        target="team-a/rc",
        reason="team-b/small admitted 1m after team-a/rc was deactivated",
        outcome="noted",
        key=RecordKey(subject="team-a/rc", episode=NOW, detail="team-b/small"),
        subject=Subject(beneficiary="team-b/small"),
    )
    trail = (a_deactivation_record(subject_of(stopped.info, stopped.decision)), old_note)
    state = MemoryState(RuntimeState(audit=trail))
    later = in_queue("later", queue="cq-a", cohort="lab", admitted_at=NOW + 5 * minute)

    FollowUps(state=state, logger=LOG)(snapshot(NOW + 6 * minute, stopped, later))

    assert waiters_noted(state) == [("team-b/small", NOW + minute)]


@dataclass
class FailingOnce(MemoryState):
    """The first write of notes fails (a conflict, the API server away)."""

    failed: bool = False

    def record(self, *records: AuditRecord) -> None:
        if not self.failed:
            self.failed = True
            raise ClusterUnavailable("the API server is away")
        super().record(*records)


def test_a_stop_made_in_a_cycle_whose_notes_were_not_written_is_still_followed() -> None:
    minute = timedelta(minutes=1)
    earlier = a_deactivation_record(Subject(beneficiary="team-b/waiter"))
    state = FailingOnce(RuntimeState(audit=(earlier,)))
    follow = FollowUps(state=state, logger=LOG)
    waiter = in_queue("waiter", queue="cq-a", cohort=None, admitted_at=NOW + 10 * minute)
    now_stopped = in_queue("idle", queue="cq-z", cohort=None, admitted_at=NOW - minute)
    its_waiter = in_queue("next", queue="cq-z", cohort=None, admitted_at=NOW + 15 * minute)
    stop = ActionRecord(
        now_stopped.ref, Action.DEACTIVATE, "idle", NOW + 11 * minute, Outcome.done()
    )
    rows = (stopped_for_nobody(active=False), waiter, now_stopped)

    follow(replace(snapshot(NOW + 11 * minute, *rows), actions=(stop,)))  # its notes fail
    follow(snapshot(NOW + 20 * minute, *rows, its_waiter))

    assert sorted(waiters_noted(state)) == [
        ("team-b/next", NOW + 15 * minute),
        ("team-b/waiter", NOW + 10 * minute),
    ]


def a_stop_in_cq_a(name: str, *, beneficiary: str | None) -> tuple[AuditRecord, WorkloadStatus]:
    """A 4-GPU stop at NOW in cq-a (for `beneficiary`, else for nobody), and its row."""
    builder = a_workload("team-a", name).gpu_pod(f"{name}-0", gpus=4).inactive()
    info = replace(builder.build(), cluster_queue="cq-a")
    decision = Decision(info.ref, State.IDLE, Action.NONE, "idle", gpus=4, rule=A_DEFAULT_RULE)
    subject = Subject(cluster_queue="cq-a", owner=f"RayCluster/{name}", beneficiary=beneficiary)
    record = replace(a_deactivation_record(subject), target=str(info.ref))
    return record, WorkloadStatus(info, decision)


@pytest.mark.parametrize("for_the_waiter,for_nobody", [("aa", "zz"), ("zz", "aa")])
def test_a_beneficiary_admitted_is_no_waiter_of_another_stop_of_its_queue(
    for_the_waiter: str, for_nobody: str
) -> None:
    """Both stops followed in one pass, in either order: the waiter is noted once, for the
    stop made for it; the other stop's freed GPUs wait for the next one admitted."""
    minute = timedelta(minutes=1)
    its_stop, its_row = a_stop_in_cq_a(for_the_waiter, beneficiary="team-b/waiter")
    other_stop, other_row = a_stop_in_cq_a(for_nobody, beneficiary=None)
    waiter = in_queue("waiter", queue="cq-a", cohort=None, admitted_at=NOW + minute, gpus=4)
    next_one = in_queue("next", queue="cq-a", cohort=None, admitted_at=NOW + 3 * minute, gpus=4)
    first = snapshot(NOW + 2 * minute, its_row, other_row, waiter)
    second = snapshot(NOW + 4 * minute, its_row, other_row, waiter, next_one)
    one, changed = (
        MemoryState(RuntimeState(audit=(its_stop, other_stop))),
        MemoryState(RuntimeState(audit=(its_stop, other_stop))),
    )
    leader = FollowUps(state=one, logger=LOG)

    leader(first)
    assert waiters_noted(one) == [("team-b/waiter", NOW + minute)]

    leader(second)
    FollowUps(state=changed, logger=LOG)(first)
    FollowUps(state=changed, logger=LOG)(second)  # a new leader reads the trail
    assert sorted(waiters_noted(one)) == [
        ("team-b/next", NOW + 3 * minute),
        ("team-b/waiter", NOW + minute),
    ]
    assert [(r.key, r.subject) for r in changed.state.audit] == [
        (r.key, r.subject) for r in one.state.audit
    ]
