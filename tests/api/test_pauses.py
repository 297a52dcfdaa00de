"""The kill switch through the API: who may pause what, and what the loop then does."""

from __future__ import annotations

import json

from tests.api.rig import SERVICE_NAMESPACE, STATE_CONFIG_MAP, ApiRig


def state_data(rig: ApiRig) -> dict[str, str]:
    found = rig.kube.store.get("configmaps", name=STATE_CONFIG_MAP, namespace=SERVICE_NAMESPACE)
    return dict(found["data"])


def test_an_admin_pauses_the_whole_service_and_every_workload_is_reported_paused(
    rig: ApiRig,
) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    rig.add_raycluster("team-b", "bob-rc", peak=0.9)
    response = rig.http.post(
        "/api/v1/pause", json={"reason": "incident 42"}, headers=rig.as_user("admin")
    )
    assert response.status_code == 200
    assert response.json() == {
        "servicePaused": True,
        "paused": [
            {
                "scope": "service",
                "by": "admin",
                "reason": "incident 42",
                "at": response.json()["paused"][0]["at"],
            }
        ],
    }
    assert json.loads(state_data(rig)["pauses"]) == {"everything": True, "namespaces": []}
    rows = rig.cycle().workloads
    assert {row.decision.state for row in rows} == {"paused"}
    assert all(row.decision.action == "none" for row in rows)
    assert "would be idle" in rows[0].decision.reason or "would be idle" in rows[1].decision.reason


def test_only_an_admin_may_pause_or_resume_the_whole_service(rig: ApiRig) -> None:
    for path in ("/api/v1/pause", "/api/v1/resume"):
        response = rig.http.post(path, json={"reason": "x"}, headers=rig.as_user("alice"))
        assert response.status_code == 403
        assert "alice may not update configmaps" in response.json()["detail"]


def test_anyone_who_may_patch_workloads_in_a_namespace_may_pause_it_and_only_it(
    rig: ApiRig,
) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    rig.add_raycluster("team-b", "bob-rc")
    mine = rig.http.post(
        "/api/v1/namespaces/team-a/pause",
        json={"reason": "debugging"},
        headers=rig.as_user("alice"),
    )
    theirs = rig.http.post(
        "/api/v1/namespaces/team-b/pause", json={"reason": "x"}, headers=rig.as_user("alice")
    )
    assert (mine.status_code, theirs.status_code) == (200, 403)
    assert "patch workloads.kueue.x-k8s.io team-b" in theirs.json()["detail"]
    states = {row.ref.namespace: row.decision.state for row in rig.cycle().workloads}
    assert states == {"team-a": "paused", "team-b": "idle"}


def test_resuming_lifts_the_pause_and_both_are_in_the_audit_trail(rig: ApiRig) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    alice = rig.as_user("alice")
    rig.http.post("/api/v1/namespaces/team-a/pause", json={"reason": "one"}, headers=alice)
    response = rig.http.post(
        "/api/v1/namespaces/team-a/resume", json={"reason": "two"}, headers=alice
    )
    assert response.json() == {"servicePaused": False, "paused": []}
    assert rig.cycle().workloads[0].decision.state == "idle"
    trail = rig.reader.get("/api/v1/decisions").json()["items"]
    assert [(r["action"], r["actor"], r["reason"]) for r in trail[-2:]] == [
        ("resume", "alice", "two"),
        ("pause", "alice", "one"),
    ]


def test_pausing_twice_or_resuming_what_runs_is_not_an_error(rig: ApiRig) -> None:
    admin = rig.as_user("admin")
    for path in ("/api/v1/pause", "/api/v1/pause", "/api/v1/resume", "/api/v1/resume"):
        assert rig.http.post(path, json={"reason": "x"}, headers=admin).status_code == 200
    assert rig.reader.get("/api/v1/pauses").json()["servicePaused"] is False


def test_a_write_that_loses_a_race_is_read_and_redone_and_nothing_is_lost(rig: ApiRig) -> None:
    alice = rig.as_user("alice")
    rig.http.post("/api/v1/namespaces/team-a/pause", json={"reason": "first"}, headers=alice)
    rig.kube.faults.fail_next(
        "PUT", "/api/v1/namespaces/idle-gpu-autoscaler/configmaps", status=409, times=2
    )
    response = rig.http.post(
        "/api/v1/pause", json={"reason": "second"}, headers=rig.as_user("admin")
    )
    assert response.status_code == 200
    assert json.loads(state_data(rig)["pauses"]) == {"everything": True, "namespaces": ["team-a"]}


def test_a_write_that_keeps_losing_is_a_409(rig: ApiRig) -> None:
    rig.http.post("/api/v1/pause", json={"reason": "x"}, headers=rig.as_user("admin"))
    rig.kube.faults.fail_next(
        "PUT", "/api/v1/namespaces/idle-gpu-autoscaler/configmaps", status=409, times=5
    )
    response = rig.http.post("/api/v1/resume", json={"reason": "x"}, headers=rig.as_user("admin"))
    assert response.status_code == 409
    assert "changed under us 5 times" in response.json()["detail"]


def test_pause_reasons_are_validated_like_every_other_body(rig: ApiRig) -> None:
    response = rig.http.post(
        "/api/v1/namespaces/team-a/pause", json={"reason": ""}, headers=rig.as_user("alice")
    )
    assert response.status_code == 422
    assert response.json()["fields"][0]["field"] == "body.reason"


def test_pausing_a_namespace_that_does_not_exist_is_a_404_and_pauses_nothing(
    rig: ApiRig,
) -> None:
    typo = rig.http.post(
        "/api/v1/namespaces/team-aa/pause", json={"reason": "typo"}, headers=rig.as_user("admin")
    )

    assert typo.status_code == 404
    assert typo.headers["content-type"] == "application/problem+json"
    assert typo.json()["detail"] == "namespace team-aa does not exist"
    assert rig.http.get("/api/v1/pauses", headers=rig.as_user("admin")).json()["paused"] == []


def test_a_caller_without_rights_learns_a_403_not_whether_the_namespace_exists(
    rig: ApiRig,
) -> None:
    answer = rig.http.post(
        "/api/v1/namespaces/team-aa/pause", json={"reason": "probe"}, headers=rig.as_user("alice")
    )

    assert answer.status_code == 403


def test_a_namespaces_pause_is_shown_to_those_who_may_read_it(rig: ApiRig) -> None:
    """Who paused a namespace, and why, is its tenants' business; the service's pause is
    everyone's."""
    for user, namespace in (("alice", "team-a"), ("bob", "team-b")):
        path = f"/api/v1/namespaces/{namespace}/pause"
        answer = rig.http.post(path, json={"reason": "mine"}, headers=rig.as_user(user))
        assert [p["scope"] for p in answer.json()["paused"]] == [namespace], user
    rig.http.post("/api/v1/pause", json={"reason": "incident"}, headers=rig.as_user("admin"))

    def scopes(user: str) -> list[str]:
        answer = rig.http.get("/api/v1/pauses", headers=rig.as_user(user))
        return [pause["scope"] for pause in answer.json()["paused"]]

    assert scopes("alice") == ["service", "team-a"]
    assert scopes("bob") == ["service", "team-b"]
    assert scopes("admin") == ["service", "team-a", "team-b"]
