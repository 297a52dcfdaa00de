"""Reading workloads over real HTTP: list, filters, inspect by Workload or owner name."""

from __future__ import annotations

import pytest

from autoscaler.settings.api import ApiSettings
from tests.api.rig import ApiRig


def test_the_list_shows_each_workload_with_its_numbers_state_and_decision(rig: ApiRig) -> None:
    name = rig.add_raycluster("team-a", "alice-rc", peak=0.01, gpus=2)
    rig.cycle()
    body = rig.reader.get("/api/v1/workloads").json()
    assert body["snapshot"]["cycle"] == 1
    assert body["snapshot"]["clusterOk"] and body["snapshot"]["metricsOk"]
    [item] = body["items"]
    assert item["name"] == name
    assert item["owner"] == {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "name": "alice-rc",
        "display": "RayCluster team-a/alice-rc",
    }
    assert (item["state"], item["action"], item["gpus"]) == ("idle", "would-deactivate", 2)
    assert item["peakUtilization"] == 0.01
    assert item["coverage"] == 1.0
    assert item["idleSince"] is not None
    assert "idle for the whole window" in item["reason"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param({"namespace": "team-a"}, {"alice-rc"}, id="by-namespace"),
        pytest.param({"state": "busy"}, {"bob-rc"}, id="by-state"),
        pytest.param({"queue": "user-queue"}, {"alice-rc", "bob-rc"}, id="by-queue"),
        pytest.param({"queue": "other-queue"}, set(), id="by-an-unused-queue"),
    ],
)
def test_the_list_can_be_filtered(rig: ApiRig, query: dict[str, str], expected: set[str]) -> None:
    rig.add_raycluster("team-a", "alice-rc", peak=0.01)
    rig.add_raycluster("team-b", "bob-rc", peak=0.9)
    rig.cycle()
    items = rig.reader.get("/api/v1/workloads", params=query).json()["items"]
    assert {item["owner"]["name"] for item in items} == expected


@pytest.mark.parametrize("by_owner", [False, True], ids=["by-workload-name", "by-owner-name"])
def test_one_workload_can_be_inspected_by_its_name_or_its_owners(
    rig: ApiRig, by_owner: bool
) -> None:
    name = rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    response = rig.reader.get(f"/api/v1/workloads/team-a/{'alice-rc' if by_owner else name}")
    assert response.status_code == 200
    assert response.json()["name"] == name


def test_an_unknown_workload_is_a_404(rig: ApiRig) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    response = rig.reader.get("/api/v1/workloads/team-a/nobody")
    assert response.status_code == 404
    assert response.json()["detail"] == "no workload team-a/nobody"


def test_an_owner_name_shared_by_two_workloads_is_a_409_asking_for_the_workload_name(
    rig: ApiRig,
) -> None:
    first = rig.add_raycluster("team-a", "alice-rc")
    workload = rig.workload("team-a", first)
    workload["metadata"]["name"] = "second-workload"
    del workload["metadata"]["resourceVersion"]
    rig.kube.store.put(workload)
    rig.cycle()
    response = rig.reader.get("/api/v1/workloads/team-a/alice-rc")
    assert response.status_code == 409
    assert "name the Workload" in response.json()["detail"]


@pytest.mark.parametrize(
    ("path", "field"),
    [
        pytest.param("/api/v1/workloads/Team_A/x", "path.namespace", id="namespace-not-dns"),
        pytest.param("/api/v1/workloads/team-a/-x", "path.name", id="name-not-dns"),
        pytest.param(f"/api/v1/workloads/{'a' * 64}/x", "path.namespace", id="namespace-too-long"),
        pytest.param("/api/v1/workloads?state=sleepy", "query.state", id="unknown-state"),
        pytest.param("/api/v1/workloads?namespace=A", "query.namespace", id="bad-filter"),
        pytest.param("/api/v1/decisions?limit=0", "query.limit", id="empty-page"),
    ],
)
def test_bad_names_and_filters_are_a_422_naming_the_field(
    rig: ApiRig, path: str, field: str
) -> None:
    rig.cycle()
    response = rig.reader.get(path)
    assert response.status_code == 422
    assert [problem["field"] for problem in response.json()["fields"]] == [field]


def test_before_the_first_cycle_the_list_is_empty_and_says_so(rig: ApiRig) -> None:
    body = rig.reader.get("/api/v1/workloads").json()
    assert body == {"snapshot": None, "items": []}
    response = rig.reader.get("/api/v1/workloads/team-a/alice-rc")
    assert response.status_code == 404
    assert "no cycle has finished yet" in response.json()["detail"]


def test_reads_need_a_valid_token_by_default_but_probes_and_metrics_stay_open(
    rig: ApiRig,
) -> None:
    rig.cycle()
    assert rig.http.get("/api/v1/workloads").status_code == 401
    nope = {"Authorization": "Bearer nope"}
    assert rig.http.get("/api/v1/workloads", headers=nope).status_code == 401
    for path in ("/healthz", "/readyz", "/metrics", "/openapi.json"):
        assert rig.http.get(path).status_code == 200, path


@pytest.mark.parametrize(
    ("user", "path", "status"),
    [
        pytest.param("bob", "/api/v1/workloads?namespace=team-b", 200, id="own-namespace"),
        pytest.param("bob", "/api/v1/workloads?namespace=team-a", 403, id="neighbours-namespace"),
        pytest.param("bob", "/api/v1/workloads", 403, id="cluster-wide-without-the-right"),
        pytest.param("admin", "/api/v1/workloads", 200, id="cluster-wide-with-the-right"),
        pytest.param("bob", "/api/v1/workloads/team-a/alice-rc", 403, id="neighbours-workload"),
        pytest.param("bob", "/api/v1/workloads/team-a/ghost", 403, id="403-before-404"),
        pytest.param("alice", "/api/v1/workloads/team-a/ghost", 404, id="404-for-a-reader"),
        pytest.param("bob", "/api/v1/decisions?namespace=team-b", 200, id="own-audit-trail"),
        pytest.param("bob", "/api/v1/decisions?namespace=team-a", 403, id="neighbours-trail"),
        pytest.param("bob", "/api/v1/decisions", 403, id="whole-trail-needs-admin"),
        pytest.param("admin", "/api/v1/decisions", 200, id="whole-trail-for-the-admin"),
    ],
)
def test_reads_are_authorized_like_changes(rig: ApiRig, user: str, path: str, status: int) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    response = rig.http.get(path, headers=rig.as_user(user))
    assert response.status_code == status, response.text


def test_a_change_on_a_workload_the_caller_may_not_read_is_a_403_whether_or_not_it_exists(
    rig: ApiRig,
) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    for name in ("alice-rc", "ghost"):
        path = f"/api/v1/workloads/team-a/{name}/reactivate"
        response = rig.http.post(path, json={"reason": "x"}, headers=rig.as_user("bob"))
        assert response.status_code == 403, name


def test_open_reads_answer_without_a_token() -> None:
    settings = ApiSettings(host="127.0.0.1", port=0, reads_open=True)
    with ApiRig(settings=settings) as rig:
        rig.cycle()
        assert rig.http.get("/api/v1/workloads").status_code == 200
        assert rig.http.get("/api/v1/decisions").status_code == 200
