"""Owners named as people know them, and what a stop means for their kind: the kind's words
for a Workload Kueue stops, the manager's where the row is the owner itself; a kind whose stop
is a requeue says so, and the savings count its stops apart from the lasting ones."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from autoscaler.domain.audit.records import LOOP_ACTOR, AuditRecord
from autoscaler.domain.audit.savings import Figures, Group, savings
from autoscaler.domain.audit.subjects import Subject
from autoscaler.domain.models import Action, Decision, OwnerRef, State, WorkloadRef, WorkloadStatus
from autoscaler.domain.policy.management import MANAGERS, Manager
from autoscaler.domain.policy.owner_words import (
    REQUEUE_WORDS,
    named,
    stop_lasts,
    stop_words,
    subject_name,
    with_workload,
)
from autoscaler.domain.policy.owners import KNOWN_OWNERS
from tests.support.domain_builders import A_DEFAULT_RULE, NOW, a_workload

# A kind of Kueue's pod integration: its stop deletes the pod, which comes back as a new
# Workload that queues again.
POD_GROUP = KNOWN_OWNERS["Notebook"]
KINDS = KNOWN_OWNERS
NOTEBOOK = OwnerRef("kubeflow.org/v1", "Notebook", "alice")
RAYCLUSTER = OwnerRef("ray.io/v1", "RayCluster", "alice-rc")
WORKLOAD = WorkloadRef("team-a", "raycluster-alice-rc-d84f2")
DAY_AGO = NOW - timedelta(days=1)


def test_the_owner_is_named_by_kind_namespace_and_name_and_the_workload_kept_for_admins() -> None:
    assert named(WORKLOAD, RAYCLUSTER) == "RayCluster team-a/alice-rc"
    assert named(WORKLOAD, None) == "team-a/raycluster-alice-rc-d84f2"
    assert with_workload(WORKLOAD, RAYCLUSTER) == (
        "RayCluster team-a/alice-rc (Workload raycluster-alice-rc-d84f2)"
    )
    own = WorkloadRef("team-a", "alice-rc")  # a RayCluster read as its own row (KAI, KubeRay)
    assert with_workload(own, RAYCLUSTER) == "RayCluster team-a/alice-rc"
    assert subject_name("team-b", "PyTorchJob/train-7") == "PyTorchJob team-b/train-7"
    assert subject_name("team-b", None) is None


def test_what_a_stop_did_and_how_it_comes_back_read_as_sentences_without_the_acts_label() -> None:
    """The page of a stopped workload opens a sentence with these: the act's label
    ("suspended: ", "reactivate its Workload: ") goes, a clause with a colon of its own stays."""
    ray = stop_words(RAYCLUSTER, manager=Manager.KUEUE, kinds=KINDS)
    assert ray.done == "KubeRay deletes its pods; Kueue keeps it queued for later"
    assert ray.comes_back == (
        "Kueue admits it again when quota is free and KubeRay recreates its pods"
    )
    sts = stop_words(OwnerRef("apps/v1", "StatefulSet", "s"), manager=Manager.KUEUE, kinds=KINDS)
    assert sts.means == sts.done == "its pods are deleted and gated: the Workload stays, inactive"
    notebook = stop_words(NOTEBOOK, manager=Manager.KUEUE, kinds=KINDS)
    assert notebook.done == f"it {notebook.said}"
    assert notebook.comes_back == "it starts again, queued, when quota is free"
    kuberay = stop_words(RAYCLUSTER, manager=Manager.KUBERAY, kinds=KINDS)
    assert kuberay.done == MANAGERS[Manager.KUBERAY].stop_means  # opens with a field: kept
    assert kuberay.comes_back.startswith("`spec.suspend` back as it was")


def test_a_kueue_stop_says_the_kinds_words_and_a_requeue_says_it_yields_its_gpus() -> None:
    ray = stop_words(RAYCLUSTER, manager=Manager.KUEUE, kinds=KINDS)
    notebook = stop_words(NOTEBOOK, manager=Manager.KUEUE, kinds=KINDS)

    row = KNOWN_OWNERS["RayCluster"]
    assert (ray.means, ray.bring_back, ray.lasts) == (row.stop_means, row.bring_back, True)
    assert ray.said == row.stop_means
    assert notebook.lasts is False
    assert (
        notebook.said == f"{REQUEUE_WORDS} (the notebook's pod is deleted; it starts again, queued)"
    )
    assert notebook.if_stopped.startswith(
        "If stopped, it yields its GPUs to the queue; it comes back when quota is free"
    )


@pytest.mark.parametrize(
    "owner",
    [
        pytest.param(None, id="no-owner"),
        pytest.param(
            OwnerRef("example.com/v1", "RayCluster", "x"), id="a-namesake-of-another-group"
        ),
        pytest.param(OwnerRef("example.com/v1", "Widget", "x"), id="a-kind-not-in-the-table"),
    ],
)
def test_an_owner_not_in_the_table_gets_the_managers_words(owner: OwnerRef | None) -> None:
    words = stop_words(owner, manager=Manager.KUEUE, kinds=KINDS)

    kueue = MANAGERS[Manager.KUEUE]
    assert (words.means, words.bring_back, words.lasts) == (
        kueue.stop_means,
        kueue.bring_back,
        True,
    )


@pytest.mark.parametrize("manager", [Manager.KAI, Manager.KUBERAY])
def test_a_manager_that_suspends_the_owner_itself_says_its_own_words(manager: Manager) -> None:
    words = stop_words(RAYCLUSTER, manager=manager, kinds=KINDS)

    assert (words.means, words.lasts) == (MANAGERS[manager].stop_means, True)
    assert "Kueue" not in words.means


def test_whether_a_stop_lasts_is_read_from_the_kinds_row() -> None:
    assert stop_lasts("Notebook/alice", kinds=KINDS) is False
    assert stop_lasts("RayCluster/alice-rc", kinds=KINDS) is True
    assert stop_lasts("Widget/x", kinds=KINDS) is True  # only the table says "requeue"
    assert stop_lasts(None, kinds=KINDS) is True


def at(hours: float) -> datetime:
    return DAY_AGO + timedelta(hours=hours)


def stopped(owner: str, *, target: str, hours: float, gpus: int = 2) -> AuditRecord:
    subject = Subject(rule="default", queue="nb-queue", owner=owner, idle_since=at(hours - 1))
    return AuditRecord(
        at=at(hours),
        actor=LOOP_ACTOR,
        action="deactivate",
        target=f"team-a/{target}",
        reason="idle",
        outcome="started",
        namespace="team-a",
        gpus=gpus,
        subject=subject,
    )


def admitted_again(name: str, *, hours: float) -> WorkloadStatus:
    """The owner's new Workload (another name), admitted `hours` into the period, busy."""
    info = a_workload("team-a", name).gpu_pod(f"{name}-0", gpus=2).admitted(at=at(hours)).build()
    info = replace(info, owner=NOTEBOOK, queue="nb-queue")
    decision = Decision(info.ref, State.BUSY, Action.NONE, "busy", gpus=2, rule=A_DEFAULT_RULE)
    return WorkloadStatus(info, decision)


def test_a_requeue_is_counted_apart_until_the_owner_is_admitted_again() -> None:
    """Stopped at hour 10, the notebook's new Workload admitted at hour 13: three hours of
    its 2 GPUs handed to the queue, one requeue, no lasting stop and nothing reclaimed."""
    trail = [stopped("Notebook/alice", target="pod-alice-1a2b", hours=10)]

    report = savings(
        trail, [admitted_again("pod-alice-9z8y", hours=13)], since=DAY_AGO, now=NOW, kinds=KINDS
    )

    assert report.by_owner == {
        Group("team-a", queue="nb-queue", owner="Notebook/alice"): Figures(
            held_idle_gpu_hours=2.0, requeues=1, requeued_gpu_hours=6.0
        )
    }


def test_a_requeue_not_yet_admitted_again_counts_until_now_and_lasting_stops_stay_apart() -> None:
    trail = [
        stopped("Notebook/alice", target="pod-alice-1a2b", hours=20),
        stopped("RayCluster/rc", target="rc", hours=20),
    ]

    total = savings(trail, (), since=DAY_AGO, now=NOW, kinds=KINDS).total

    assert (total.requeues, total.requeued_gpu_hours) == (1, 8.0)
    assert (total.deactivations, total.reclaimed_gpu_hours) == (1, 8.0)
    assert total.regretted == 0


def test_a_requeue_stopped_again_under_another_workload_ends_at_that_stop() -> None:
    trail = [
        stopped("Notebook/alice", target="pod-alice-1a2b", hours=10),
        stopped("Notebook/alice", target="pod-alice-9z8y", hours=11),
    ]

    total = savings(trail, (), since=DAY_AGO, now=NOW, kinds=KINDS).total

    assert (total.requeues, total.requeued_gpu_hours) == (2, 2.0 + 2.0 * 13)
