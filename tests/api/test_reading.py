"""Reading workloads over real HTTP: list, filters, inspect by Workload or owner name."""

from __future__ import annotations

import pytest

from autoscaler.settings.api import ApiSettings
from tests.api.rig import ApiRig


def test_the_list_shows_each_workload_with_its_numbers_state_and_decision(rig: ApiRig) -> None:
    name = rig.add_raycluster("team-a", "alice-rc", peak=0.01, gpus=2)
    rig.cycle()
    body = rig.http.get("/api/v1/workloads").json()
    assert body["snapshot"]["cycle"] == 1
    assert body["snapshot"]["clusterOk"] and body["snapshot"]["metricsOk"]
    [item] = body["items"]
    assert item["name"] == name
    assert item["owner"] == {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "alice-rc"}
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
    items = rig.http.get("/api/v1/workloads", params=query).json()["items"]
    assert {item["owner"]["name"] for item in items} == expected


@pytest.mark.parametrize("by_owner", [False, True], ids=["by-workload-name", "by-owner-name"])
def test_one_workload_can_be_inspected_by_its_name_or_its_owners(
    rig: ApiRig, by_owner: bool
) -> None:
    name = rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    response = rig.http.get(f"/api/v1/workloads/team-a/{'alice-rc' if by_owner else name}")
    assert response.status_code == 200
    assert response.json()["name"] == name


def test_an_unknown_workload_is_a_404(rig: ApiRig) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    response = rig.http.get("/api/v1/workloads/team-a/nobody")
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
    response = rig.http.get("/api/v1/workloads/team-a/alice-rc")
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
    response = rig.http.get(path)
    assert response.status_code == 422
    assert [problem["field"] for problem in response.json()["fields"]] == [field]


def test_before_the_first_cycle_the_list_is_empty_and_says_so(rig: ApiRig) -> None:
    body = rig.http.get("/api/v1/workloads").json()
    assert body == {"snapshot": None, "items": []}
    response = rig.http.get("/api/v1/workloads/team-a/alice-rc")
    assert response.status_code == 404
    assert "no cycle has finished yet" in response.json()["detail"]


def test_closed_reads_need_a_valid_token_but_probes_and_metrics_stay_open() -> None:
    settings = ApiSettings(host="127.0.0.1", port=0, reads_open=False)
    with ApiRig(settings=settings) as rig:
        rig.cycle()
        assert rig.http.get("/api/v1/workloads").status_code == 401
        assert (
            rig.http.get("/api/v1/workloads", headers={"Authorization": "Bearer nope"}).status_code
            == 401
        )
        assert rig.http.get("/api/v1/workloads", headers=rig.as_user("bob")).status_code == 200
        for path in ("/healthz", "/readyz", "/metrics", "/openapi.json"):
            assert rig.http.get(path).status_code == 200, path
