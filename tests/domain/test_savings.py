"""The savings report's figures, from audit trails over simulated time: what was held idle,
reclaimed, how long waiters waited after our decision, regrets and contests."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from autoscaler.domain.audit.records import LOOP_ACTOR, AuditRecord, RecordKey
from autoscaler.domain.audit.savings import (
    Figures,
    Group,
    our_deactivations,
    per_namespace,
    per_queue,
    savings,
)
from autoscaler.domain.audit.subjects import Subject
from autoscaler.domain.models import Action, Decision, State, WorkloadStatus
from autoscaler.domain.usage.assessment import Assessment
from tests.support.domain_builders import A_DEFAULT_RULE, NOW, a_workload

DAY_AGO = NOW - timedelta(days=1)
RC = Group("team-a", queue="gpu-queue", owner="RayCluster/rc")


def at(hours: float) -> datetime:
    """A time `hours` after the start of the day-long period."""
    return DAY_AGO + timedelta(hours=hours)


def deactivated(
    hours: float,
    *,
    name: str = "rc",
    gpus: int = 4,
    idle_for: float | None = 2.0,
    waiter: str | None = None,
    outcome: str = "started",
) -> AuditRecord:
    idle_since = at(hours - idle_for) if idle_for is not None else None
    subject = Subject(
        rule="default",
        beneficiary=waiter,
        queue="gpu-queue",
        cluster_queue="cq",
        owner=f"RayCluster/{name}",
        idle_since=idle_since,
    )
    return AuditRecord(
        at=at(hours),
        actor=LOOP_ACTOR,
        action="deactivate",
        target=f"team-a/{name}",
        reason="idle",
        outcome=outcome,
        namespace="team-a",
        gpus=gpus,
        subject=subject,
    )


def noted(action: str, hours: float, *, of: AuditRecord) -> AuditRecord:
    key = RecordKey(subject=of.target, episode=of.at, detail=action)
    return AuditRecord(
        at=at(hours),
        actor=LOOP_ACTOR,
        action=action,
        target=of.target,
        reason="seen",
        outcome="noted",
        key=key,
    )


def waiter_of(stop: AuditRecord, waiter: str, hours: float) -> AuditRecord:
    """A waiter-admitted note naming its waiter, keyed by it, as the follow-ups write it."""
    note = noted("waiter-admitted", hours, of=stop)
    assert note.key is not None
    return replace(note, key=replace(note.key, detail=waiter), subject=Subject(beneficiary=waiter))


def by_person(action: str, hours: float, *, name: str = "rc") -> AuditRecord:
    return AuditRecord(
        at=at(hours), actor="alice", action=action, target=f"team-a/{name}", reason="need it"
    )


def loop(action: str, hours: float) -> AuditRecord:
    return AuditRecord(
        at=at(hours),
        actor=LOOP_ACTOR,
        action=action,
        target="team-a/rc",
        reason="x",
        outcome="counted",
    )


STOP = deactivated(10)
FOR_WAITER = deactivated(10, waiter="team-b/waiter")


@pytest.mark.parametrize(
    ("trail", "expected"),
    [
        pytest.param(
            [STOP],
            Figures(held_idle_gpu_hours=8.0, reclaimed_gpu_hours=56.0, deactivations=1),
            id="idle-two-hours-then-stopped-until-now-reclaims-the-rest-of-the-day",
        ),
        pytest.param(
            [noted("seen-reactivated", 13, of=STOP), STOP],
            Figures(held_idle_gpu_hours=8.0, reclaimed_gpu_hours=12.0, deactivations=1),
            id="reactivated-three-hours-later-reclaims-three-hours-and-is-no-regret",
        ),
        pytest.param(
            [by_person("reactivate", 10.5), STOP],
            Figures(held_idle_gpu_hours=8.0, reclaimed_gpu_hours=2.0, deactivations=1, regretted=1),
            id="reactivated-through-the-api-within-the-hour-is-regretted",
        ),
        pytest.param(
            [loop("undone", 10.1), STOP],
            Figures(held_idle_gpu_hours=8.0, reclaimed_gpu_hours=0.4, deactivations=1, regretted=1),
            id="set-back-to-active-by-hand-soon-after-is-regretted",
        ),
        pytest.param(
            [deactivated(10, outcome="failed: forbidden"), STOP],
            Figures(),
            id="a-deactivation-whose-patch-failed-saved-nothing",
        ),
        pytest.param(
            [deactivated(10, idle_for=None)],
            Figures(reclaimed_gpu_hours=56.0, deactivations=1),
            id="no-idle-start-known-counts-no-hours-held-idle",
        ),
        pytest.param(
            [deactivated(-3, idle_for=2.0)],
            Figures(reclaimed_gpu_hours=96.0),
            id="a-deactivation-before-the-period-counts-only-its-hours-inside-it",
        ),
        pytest.param(
            [deactivated(20), noted("seen-reactivated", 14, of=STOP), STOP],
            Figures(held_idle_gpu_hours=16.0, reclaimed_gpu_hours=16.0 + 16.0, deactivations=2),
            id="stopped-twice-each-counts-its-own-span",
        ),
        pytest.param(
            [noted("waiter-admitted", 10.25, of=FOR_WAITER), FOR_WAITER],
            Figures(
                held_idle_gpu_hours=8.0,
                reclaimed_gpu_hours=56.0,
                deactivations=1,
                wait_shortened=timedelta(hours=24 - 10.25),
                wait_shortened_at_least=True,
                waiters_admitted=1,
            ),
            id="a-waiter-of-a-stop-never-seen-ending-counts-at-least-until-the-period-ends",
        ),
        pytest.param(
            [
                noted("seen-ended", 12, of=FOR_WAITER),
                noted("waiter-admitted", 10.25, of=FOR_WAITER),
                FOR_WAITER,
            ],
            Figures(
                held_idle_gpu_hours=8.0,
                reclaimed_gpu_hours=8.0,
                deactivations=1,
                wait_shortened=timedelta(hours=12 - 10.25),
                waiters_admitted=1,
            ),
            id="a-stopped-workload-seen-gone-ends-the-wait-shortened-and-the-reclaim",
        ),
        pytest.param(
            [
                noted("seen-ended", 10.1, of=FOR_WAITER),
                noted("waiter-admitted", 10.25, of=FOR_WAITER),
                FOR_WAITER,
            ],
            Figures(
                held_idle_gpu_hours=8.0,
                reclaimed_gpu_hours=0.4,
                deactivations=1,
                waiters_admitted=1,
            ),
            id="a-waiter-admitted-after-the-stopped-workload-was-gone-gained-nothing",
        ),
        pytest.param(
            [waiter_of(STOP, "team-c/next", 11), STOP],
            Figures(
                held_idle_gpu_hours=8.0,
                reclaimed_gpu_hours=56.0,
                deactivations=1,
                wait_shortened=timedelta(hours=13),
                wait_shortened_at_least=True,
                waiters_admitted=1,
            ),
            id="a-waiter-after-a-stop-for-nobody-in-particular-counts-as-well",
        ),
        pytest.param(
            [FOR_WAITER],
            Figures(held_idle_gpu_hours=8.0, reclaimed_gpu_hours=56.0, deactivations=1),
            id="a-waiter-not-yet-admitted-shortens-nothing",
        ),
        pytest.param(
            [loop("contested", 12)],
            Figures(contested=1),
            id="a-contested-mark-in-the-period-is-counted",
        ),
    ],
)
def test_the_figures_of_one_workload_over_a_day(
    trail: list[AuditRecord], expected: Figures
) -> None:
    report = savings(trail, (), since=DAY_AGO, now=NOW)

    assert report.total == expected


def test_a_waiter_served_by_two_deactivations_counts_its_wait_once() -> None:
    first = deactivated(10, name="rc", waiter="team-b/waiter")
    second = deactivated(10.5, name="rc2", waiter="team-b/waiter")
    trail = [
        noted("waiter-admitted", 11, of=first),
        noted("waiter-admitted", 11, of=second),
        second,
        first,
    ]

    total = savings(trail, (), since=DAY_AGO, now=NOW).total

    # at least from its admission at 11 to the period's end at 24, counted once
    assert (total.waiters_admitted, total.wait_shortened) == (1, timedelta(hours=13))


def test_a_workload_idle_now_adds_its_hours_held_idle_so_far() -> None:
    info = a_workload("team-b", "nb").gpu_pod("nb-0", gpus=2).build()
    decision = Decision(
        info.ref,
        State.IDLE,
        Action.NONE,
        "idle",
        gpus=2,
        idle_since=NOW - timedelta(hours=3),
        rule=A_DEFAULT_RULE,
    )

    report = savings((), [WorkloadStatus(info, decision)], since=DAY_AGO, now=NOW)

    assert report.by_owner == {
        Group("team-b", queue="user-queue", owner="RayCluster/nb"): Figures(held_idle_gpu_hours=6.0)
    }


def test_quota_held_without_work_is_counted_apart_from_idle_gpu_hours() -> None:
    """A deactivation of a not-running workload (its record says so) and a workload not
    running now count as GPU-hours held not running; the idle ones as idle; never summed."""
    stuck = deactivated(10, name="stuck", gpus=2, idle_for=3.0)
    stuck = replace(stuck, subject=replace(stuck.subject, held=State.NOT_RUNNING.value))
    idle = deactivated(10, name="idle", gpus=2, idle_for=1.0)
    info = a_workload("team-a", "pull").waiting_pod("w-0", "ImagePullBackOff", gpus=4).build()
    verdict = Assessment(State.NOT_RUNNING, "not running", idle_since=NOW - timedelta(hours=2))
    decision = Decision(
        info.ref,
        State.NOT_RUNNING,
        Action.NONE,
        "not running",
        gpus=4,
        idle_since=NOW - timedelta(hours=2),
        rule=A_DEFAULT_RULE,
        assessment=verdict,
    )

    report = savings([stuck, idle], [WorkloadStatus(info, decision)], since=DAY_AGO, now=NOW)

    figures = report.by(per_namespace)[Group("team-a", queue="", owner="")]
    assert figures.held_not_running_gpu_hours == 2 * 3.0 + 4 * 2.0
    assert figures.held_idle_gpu_hours == 2 * 1.0


def test_figures_roll_up_per_queue_and_per_namespace_and_filter_by_namespace() -> None:
    other = deactivated(10, name="rc2", gpus=2)
    trail = [STOP, other]

    report = savings(trail, (), since=DAY_AGO, now=NOW)
    only_b = savings(trail, (), since=DAY_AGO, now=NOW, namespace="team-b")

    assert list(report.by_owner) == [RC, Group("team-a", "gpu-queue", "RayCluster/rc2")]
    assert report.by(per_queue)[Group("team-a", "gpu-queue", "")].deactivations == 2
    assert report.by(per_namespace)[Group("team-a", "", "")].reclaimed_gpu_hours == 84.0
    assert only_b.by_owner == {}


def test_a_record_without_a_subject_is_grouped_from_the_snapshot_then_unknown() -> None:
    old = AuditRecord(
        at=at(10),
        actor=LOOP_ACTOR,
        action="deactivate",
        target="team-a/old",
        reason="idle",
        outcome="done",
        gpus=1,
    )
    info = a_workload("team-a", "old").inactive().build()
    row = WorkloadStatus(
        info, Decision(info.ref, State.DEACTIVATED, Action.NONE, "stopped", rule=A_DEFAULT_RULE)
    )

    known = savings([old], [row], since=DAY_AGO, now=NOW)
    unknown = savings([old], (), since=DAY_AGO, now=NOW)

    assert list(known.by_owner) == [Group("team-a", "user-queue", "RayCluster/old")]
    assert list(unknown.by_owner) == [Group("team-a", "?", "?")]


def test_only_the_loops_begun_deactivations_count_as_ours() -> None:
    lost = deactivated(5, outcome="unknown: answer lost")
    person = by_person("deactivate", 6)
    skipped = deactivated(7, outcome="skipped, retried next cycle: 409")

    found = our_deactivations([lost, person, skipped, deactivated(7)])

    assert [d.at for d in found] == [at(5)]


def test_a_lost_answer_settled_later_is_one_deactivation_with_the_deeds_subject() -> None:
    deed = deactivated(5, gpus=4)
    without_subject = {"subject": None, "gpus": None}
    lost = AuditRecord(**{**vars(deed), **without_subject, "outcome": "unknown: answer lost"})
    settled = AuditRecord(**{**vars(deed), **without_subject, "outcome": "done: confirmed"})

    found = our_deactivations([deed, lost, settled])

    assert [(d.at, d.gpus, d.subject) for d in found] == [(at(5), 4, deed.subject)]
