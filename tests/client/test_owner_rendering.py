"""The CLI names the owner as people know it ("RayCluster team-a/rc"), keeps the Workload's
name beside it, says what a stop means for the owner's kind, and `explain` says whether the
kind is acted on: a batch kind is opt-in, its stop restarting the job."""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler.client.render import audit, terminal_safe
from autoscaler.client.workload_views import explanation, workload
from tests.client.test_class_rendering import answer, field

Json = dict[str, Any]

OWNER = {
    "apiVersion": "ray.io/v1",
    "kind": "RayCluster",
    "name": "rc",
    "display": "RayCluster team-a/rc",
}
REQUEUE = "yields its GPUs to the queue; it comes back when quota is free (its pod is deleted)"


def test_one_workload_shows_its_owner_as_people_know_it_and_what_a_stop_means() -> None:
    shown = terminal_safe(
        workload(answer("idle", owner=OWNER, stopMeans=REQUEUE, bringBack="nothing to do"))
    )

    assert field(shown, "Owner") == "RayCluster team-a/rc"
    assert field(shown, "Workload") == "team-a/raycluster-rc-1a2b3"
    assert field(shown, "Stop means") == REQUEUE
    assert field(shown, "Bring back") == "nothing to do"


def test_an_answer_from_an_older_service_reads_as_before() -> None:
    shown = terminal_safe(workload(answer("idle")))

    assert field(shown, "Owner") == "RayCluster/rc"
    assert "Stop means" not in shown and "Bring back" not in shown


def explained(kind: Json | None) -> str:
    body = {"rule": "default", "matched": True, "misses": [], "workload": answer("idle")}
    return terminal_safe(explanation({**body, "ownerKind": kind} if kind else body))


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        pytest.param(
            {"kind": "Job", "known": True, "enabled": False, "optIn": True},
            "Job: opt-in (a stop restarts the job), not enabled here "
            "(cluster.ownerKinds.Job.enabled): never stopped",
            id="a-batch-kind-left-off",
        ),
        pytest.param(
            {"kind": "RayJob", "known": True, "enabled": True, "optIn": True},
            "RayJob: opt-in (a stop restarts the job), enabled here",
            id="a-batch-kind-turned-on",
        ),
        pytest.param(
            {"kind": "RayCluster", "known": True, "enabled": True, "optIn": False},
            "RayCluster: on by default, enabled here",
            id="a-kind-on-by-default",
        ),
        pytest.param(
            {"kind": "Widget", "known": False, "enabled": False, "optIn": False},
            "Widget: not a kind the service knows: never stopped",
            id="an-unknown-kind",
        ),
    ],
)
def test_explain_says_whether_the_owners_kind_is_acted_on(kind: Json, said: str) -> None:
    assert field(explained(kind), "Owner kind") == said


def test_explain_without_an_owner_kind_says_nothing_of_one() -> None:
    assert "Owner kind" not in explained(None)


def test_audit_rows_name_the_owner_as_people_know_it() -> None:
    page = {
        "items": [
            {
                "at": "2030-01-01T10:00:00Z",
                "actor": "idle-gpu-autoscaler",
                "action": "deactivate",
                "target": "team-a/raycluster-rc-1a2b3",
                "owner": "RayCluster team-a/rc",
                "outcome": "done",
                "reason": "idle",
            },
            {"at": "2030-01-01T11:00:00Z", "actor": "alice", "action": "pause", "target": "x"},
        ],
        "total": 2,
    }

    header, loop, person, _ = terminal_safe(audit(page)).splitlines()

    assert header.split()[3:5] == ["TARGET", "OWNER"]
    assert "team-a/raycluster-rc-1a2b3  RayCluster team-a/rc" in loop
    assert person.split()[3:5] == ["x", "-"]
