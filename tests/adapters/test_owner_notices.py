"""Events and notifications name the owner as people know it and say what a stop means for
its kind: a lasting stop says how to bring it back; a stop that is a requeue (Kueue's pod
integration) says it yields its GPUs to the queue, with nothing to reactivate."""

from __future__ import annotations

from dataclasses import replace

from autoscaler.adapters.notify.payload import as_json
from autoscaler.adapters.notify.wording import word
from autoscaler.domain.models import Action, Decision, OwnerRef, State, WorkloadRef
from autoscaler.domain.notices.notice import Notice
from autoscaler.domain.notices.notifications import NoticeKind
from autoscaler.domain.policy.owner_words import REQUEUE_WORDS
from autoscaler.domain.policy.owners import KNOWN_OWNERS
from autoscaler.engine.acting.stop import deactivation_message
from autoscaler.engine.notify.notices import event_message
from tests.support.domain_builders import A_DEFAULT_RULE, NOW, a_workload
from tests.support.notification_builders import STOP_AT, a_notification

NOTEBOOK = OwnerRef("kubeflow.org/v1", "Notebook", "alice", uid="uid-alice")
WORKLOAD = "pod-alice-1a2b3"


def test_a_lasting_stop_names_the_owner_keeps_the_workload_and_says_how_to_bring_it_back() -> None:
    told = a_notification(NoticeKind.DEACTIVATED, name="raycluster-alice-rc-d84f2")
    told = replace(told, owner=OwnerRef("ray.io/v1", "RayCluster", "alice-rc"))

    wording = word(told)

    assert wording.title == "RayCluster team-a/alice-rc was stopped: its 2 GPUs are free for others"
    assert "(rule gpu; Workload team-a/raycluster-alice-rc-d84f2)" in wording.text
    assert f"To bring it back: {KNOWN_OWNERS['RayCluster'].bring_back}." in wording.text
    assert wording.hint is not None and "raycluster-alice-rc-d84f2" in wording.hint


def test_a_requeue_says_it_yields_its_gpus_with_nothing_to_reactivate() -> None:
    told = replace(a_notification(NoticeKind.DEACTIVATED, name=WORKLOAD), owner=NOTEBOOK)

    wording = word(told)
    payload = as_json(told, links=())

    assert wording.title == "Notebook team-a/alice yielded its 2 GPUs to the queue"
    assert f"It {REQUEUE_WORDS} ({KNOWN_OWNERS['Notebook'].stop_means})." in wording.text
    assert wording.hint is None
    assert (payload["stopLasts"], payload["owner"]["display"]) == (False, "Notebook team-a/alice")
    assert payload["stopMeans"].startswith(REQUEUE_WORDS)


def test_a_warning_of_a_requeue_kind_says_what_the_stop_will_do() -> None:
    wording = word(replace(a_notification(name=WORKLOAD), owner=NOTEBOOK))

    assert wording.title == "Notebook team-a/alice will be stopped at 2025-03-03 12:14 UTC"
    assert f"If stopped, it {REQUEUE_WORDS}" in wording.text
    assert wording.hint == f"idle-gpu-autoscaler snooze team-a/{WORKLOAD} 4h"  # the Workload


def test_the_events_name_the_owner_and_what_the_stop_means() -> None:
    workload = replace(
        a_workload("team-a", WORKLOAD).gpu_pod("p-0", gpus=2).build(), owner=NOTEBOOK
    )
    decision = Decision(
        WorkloadRef("team-a", WORKLOAD),
        State.IDLE,
        Action.WARN,
        "idle 62m",
        gpus=2,
        rule=A_DEFAULT_RULE,
        notice=Notice(warned_at=NOW, stop_at=STOP_AT),
    )

    warned = event_message(decision, workload=workload)
    stopped = deactivation_message(replace(decision, action=Action.DEACTIVATE), workload=workload)

    assert warned.startswith("Idle GPUs: stop planned at ")  # the Event reads as it always did
    assert f"Notebook team-a/alice: its GPUs sit idle. If stopped, it {REQUEUE_WORDS}" in warned
    assert stopped.startswith("Deactivated by idle-gpu-autoscaler: idle 62m. ")
    assert f"Notebook team-a/alice {REQUEUE_WORDS}" in stopped
    assert "kubectl patch" not in stopped  # nothing to reactivate: it queues again by itself
