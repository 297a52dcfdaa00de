"""The REST view of a stopped workload (`WorkloadView.stopped`): read from the stop's
annotations, its waiter told only to a caller who may read the waiter's namespace, and
documented in the OpenAPI document."""

from __future__ import annotations

from datetime import timedelta

from autoscaler.api.presenters import stopped_view
from autoscaler.api.schemas.views import WorkloadView
from autoscaler.domain.annotations import DeactivationAudit
from tests.support.domain_builders import NOW, WorkloadBuilder, a_workload

WAITER = "team-b/train"
STOP = DeactivationAudit(
    at=NOW,
    reason=f"idle for the whole window; frees quota for {WAITER}, which waits",
    peak=0.0,
    threshold=0.05,
    policy="rule nights: threshold 5%, window 1:00:00, min coverage 80%, grace 0:15:00",
    beneficiary=WAITER,
    beneficiary_queue="team-b-cq",
    rule="nights",
    coverage=1.0,
    idle_since=NOW - timedelta(minutes=75),
)


def stopped() -> WorkloadBuilder:
    workload = a_workload("team-a", "rc").inactive()
    for key, value in STOP.annotations().items():
        workload = workload.annotated(key, value)
    return workload


def test_the_view_says_when_by_whom_for_whom_and_the_command() -> None:
    view = stopped_view(stopped().build(), may_read=lambda _: True)

    assert view is not None
    assert view.model_dump(by_alias=True, mode="json") == {
        "byThisService": True,
        "at": "2025-03-03T12:00:00Z",
        "by": "rule nights",
        "rule": "nights",
        "waiter": WAITER,
        "reason": STOP.reason,
        "evidence": "idle 1h15m, peak 0% (threshold 5%), coverage 100%",
        "idleSeconds": 4500.0,
        "peak": 0.0,
        "coverage": 1.0,
        "threshold": 0.05,
        "comesBackByItself": False,
        "bringBack": 'idle-gpu-autoscaler reactivate -n team-a rc --reason "back to work"',
    }


def test_a_reader_of_team_a_alone_is_told_the_waiters_clusterqueue_not_its_name() -> None:
    view = stopped_view(stopped().build(), may_read=lambda namespace: namespace == "team-a")

    assert view is not None and view.waiter == "a Workload in ClusterQueue team-b-cq"
    assert view.reason is not None and WAITER not in view.reason


def test_an_active_workload_has_no_stopped_view_and_the_field_is_documented() -> None:
    assert stopped_view(a_workload("team-a", "rc").build(), may_read=lambda _: True) is None
    schema = WorkloadView.model_json_schema(by_alias=True)
    assert "the command that brings it back" in schema["properties"]["stopped"]["description"]
