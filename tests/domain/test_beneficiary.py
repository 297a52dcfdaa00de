"""A contention-driven deactivation names the waiter it was for: in its durable record's
subject, its annotations and its Event; one with no waiter says nothing of one."""

from __future__ import annotations

from datetime import timedelta

from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import DeactivationAudit
from autoscaler.domain.audit.stopped import bring_back_command
from autoscaler.domain.audit.subjects import Subject, subject_of
from autoscaler.domain.models import Action, Decision, State, WorkloadRef
from autoscaler.engine.acting.stop import deactivation_message
from tests.support.domain_builders import NOW, a_rule_named, a_workload

WAITER = WorkloadRef("team-b", "waiter")
IDLE_SINCE = NOW - timedelta(hours=2)


def decision(*, waiter: WorkloadRef | None) -> Decision:
    return Decision(
        WorkloadRef("team-a", "rc"),
        State.IDLE,
        Action.DEACTIVATE,
        "idle",
        gpus=1,
        idle_since=IDLE_SINCE,
        rule=a_rule_named("night"),
        beneficiary=waiter,
    )


def audit(waiter: str | None) -> DeactivationAudit:
    return DeactivationAudit(
        at=NOW, reason="idle", peak=0.0, threshold=0.05, policy="p", beneficiary=waiter
    )


def test_the_subject_keeps_the_rule_waiter_queue_owner_and_idle_start() -> None:
    info = a_workload("team-a", "rc").build()

    subject = subject_of(info, decision(waiter=WAITER))

    assert subject == Subject(
        rule="night",
        beneficiary="team-b/waiter",
        queue="user-queue",
        cluster_queue=None,
        owner="RayCluster/rc",
        idle_since=IDLE_SINCE,
    )


def test_nothing_known_is_no_subject() -> None:
    assert subject_of(None, None) is None


def test_the_annotation_names_the_waiter_only_when_there_is_one() -> None:
    assert audit("team-b/waiter").annotations()[keys.DEACTIVATED_FOR] == "team-b/waiter"
    assert keys.DEACTIVATED_FOR not in audit(None).annotations()


def test_the_event_names_the_waiter_only_when_there_is_one() -> None:
    workload = a_workload("team-a", "rc").build()
    named = deactivation_message(decision(waiter=WAITER), workload=workload)
    assert "for the waiting Workload team-b/waiter" in named
    assert "waiting Workload" not in deactivation_message(decision(waiter=None), workload=workload)


def test_the_event_brings_a_lasting_stop_back_with_the_cli_and_says_the_kubectl_way_too() -> None:
    workload = a_workload("team-a", "rc").build()
    said = deactivation_message(decision(waiter=None), workload=workload)
    assert f"To bring it back: {bring_back_command(workload)} (without the CLI: kubectl " in said
    assert """-n team-a --type merge -p '{"spec":{"active":true}}')""" in said
