"""Reactivating a deactivated workload, and deactivating one now (admins)."""

from __future__ import annotations

from datetime import timedelta

from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import time_text
from autoscaler.domain.exemptions import REACTIVATED_BY, REACTIVATED_REASON
from tests.api.rig import ApiRig
from tests.support.builders import make_workload_for

REACTIVATE = "/api/v1/workloads/team-a/alice-rc/reactivate"
DEACTIVATE = "/api/v1/workloads/team-a/alice-rc/deactivate"


def test_reactivation_sets_active_records_who_and_why_and_starts_a_fresh_grace_period(
    rig: ApiRig,
) -> None:
    name = rig.add_raycluster("team-a", "alice-rc", active=False)
    assert rig.cycle().workloads[0].decision.state == "deactivated"
    response = rig.http.post(
        REACTIVATE, json={"reason": "need it back"}, headers=rig.as_user("alice")
    )
    assert response.status_code == 200
    assert response.json()["action"] == "reactivate"
    workload = rig.workload("team-a", name)
    assert workload["spec"]["active"] is True
    assert {
        key: workload["metadata"]["annotations"][key]
        for key in (keys.REACTIVATED_AT, REACTIVATED_BY, REACTIVATED_REASON)
    } == {
        keys.REACTIVATED_AT: time_text(rig.now),
        REACTIVATED_BY: "alice",
        REACTIVATED_REASON: "need it back",
    }
    readmitted = make_workload_for(rig.owner("team-a", "alice-rc"))  # as Kueue, long admitted
    readmitted.admitted(at=rig.now - timedelta(hours=3))
    for key, value in workload["metadata"]["annotations"].items():
        readmitted.annotation(key, value)
    rig.kube.store.put(readmitted.build())
    rig.clock.advance(timedelta(minutes=1))
    [row] = rig.cycle().workloads
    assert row.decision.state == "grace"
    events = rig.kube.store.list("events", namespace="team-a")
    assert any(e["reason"] == "IdleGPUReactivated" for e in events)


def test_reactivating_an_active_workload_is_a_409(rig: ApiRig) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    response = rig.http.post(REACTIVATE, json={"reason": "x"}, headers=rig.as_user("alice"))
    assert response.status_code == 409
    assert "already active" in response.json()["detail"]


def test_reactivating_a_neighbours_workload_is_a_403(rig: ApiRig) -> None:
    name = rig.add_raycluster("team-a", "alice-rc", active=False)
    rig.cycle()
    response = rig.http.post(REACTIVATE, json={"reason": "x"}, headers=rig.as_user("bob"))
    assert response.status_code == 403
    assert rig.workload("team-a", name)["spec"]["active"] is False


def test_a_reactivation_racing_another_change_is_a_409_and_changes_nothing(rig: ApiRig) -> None:
    name = rig.add_raycluster("team-a", "alice-rc", active=False)
    rig.cycle()
    rig.kube.faults.fail_next(
        "PATCH", f"/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads/{name}", status=409
    )
    response = rig.http.post(REACTIVATE, json={"reason": "x"}, headers=rig.as_user("alice"))
    assert response.status_code == 409
    assert rig.workload("team-a", name)["spec"]["active"] is False


def test_the_reactivation_patch_is_guarded_by_the_resource_version_it_read(rig: ApiRig) -> None:
    name = rig.add_raycluster("team-a", "alice-rc", active=False)
    rig.cycle()
    rig.kube.requests.clear()
    rig.http.post(REACTIVATE, json={"reason": "x"}, headers=rig.as_user("alice"))
    [patch] = [r for r in rig.kube.requests.writes() if r.path.endswith(f"workloads/{name}")]
    assert patch.content_type == "application/merge-patch+json"
    assert patch.body["spec"] == {"active": True}
    assert patch.body["metadata"]["resourceVersion"]


def test_an_admin_deactivates_now_with_the_loops_audit_annotations_and_event(
    rig: ApiRig,
) -> None:
    name = rig.add_raycluster("team-a", "alice-rc", peak=0.9)
    rig.cycle()
    response = rig.http.post(
        DEACTIVATE, json={"reason": "quota emergency"}, headers=rig.as_user("admin")
    )
    assert response.status_code == 200
    workload = rig.workload("team-a", name)
    assert workload["spec"]["active"] is False
    reason = workload["metadata"]["annotations"][keys.DEACTIVATED_REASON]
    assert reason == "deactivated now by admin: quota emergency"
    owner = rig.owner("team-a", "alice-rc")
    assert owner["metadata"]["annotations"][keys.DEACTIVATED_AT] == time_text(rig.now)
    events = rig.kube.store.list("events", namespace="team-a")
    assert any(e["reason"] == "IdleGPUDeactivated" for e in events)
    metrics = rig.reader.get("/metrics").text
    assert 'idle_gpu_autoscaler_deactivations_total{namespace="team-a",reason="admin"} 1.0' in (
        metrics
    )


def test_only_an_admin_may_deactivate_now(rig: ApiRig) -> None:
    name = rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    response = rig.http.post(DEACTIVATE, json={"reason": "x"}, headers=rig.as_user("alice"))
    assert response.status_code == 403
    assert rig.workload("team-a", name)["spec"]["active"] is True


def test_deactivating_a_deactivated_workload_is_a_409(rig: ApiRig) -> None:
    rig.add_raycluster("team-a", "alice-rc", active=False)
    rig.cycle()
    response = rig.http.post(DEACTIVATE, json={"reason": "x"}, headers=rig.as_user("admin"))
    assert response.status_code == 409


def test_changes_on_unknown_workloads_are_a_404(rig: ApiRig) -> None:
    rig.cycle()
    for path, user in (
        ("/api/v1/workloads/team-a/gone/reactivate", "alice"),
        ("/api/v1/workloads/team-a/gone/deactivate", "admin"),
        ("/api/v1/workloads/team-a/gone/exemption", "alice"),
    ):
        method = "DELETE" if path.endswith("exemption") else "POST"
        body = None if method == "DELETE" else {"reason": "x"}
        response = rig.http.request(method, path, json=body, headers=rig.as_user(user))
        assert response.status_code == 404, path
