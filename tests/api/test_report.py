"""The savings report through the real server: the loop's deactivation read back as GPU-hours
reclaimed per namespace, queue and owner; reads authorized per namespace; bad input a 422."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.api.rig import ApiRig


def test_a_deactivation_reclaims_its_gpus_until_now_per_namespace_queue_and_owner() -> None:
    with ApiRig(dry_run=False) as rig:
        rig.add_raycluster("team-a", "alice-rc", peak=0.02, gpus=2)
        rig.cycle()
        rig.clock.advance(timedelta(hours=2))
        answer = rig.reader.get("/api/v1/report", params={"since": "1d"})
    assert answer.status_code == 200
    body = answer.json()
    [owner] = body["byOwner"]
    assert (owner["namespace"], owner["queue"], owner["owner"]) == (
        "team-a",
        "user-queue",
        "RayCluster/alice-rc",
    )
    assert owner["reclaimedGpuHours"] == 4.0
    assert owner["deactivations"] == 1
    assert owner["heldIdleGpuHours"] > 0  # idle from before the window until the stop
    assert [row["namespace"] for row in body["byNamespace"]] == ["team-a"]
    assert body["byQueue"][0]["queue"] == "user-queue"
    assert body["total"]["reclaimedGpuHours"] == 4.0


def test_one_namespace_is_read_with_its_rights_and_the_whole_cluster_needs_more(
    rig: ApiRig,
) -> None:
    alice = rig.as_user("alice")

    own = rig.http.get("/api/v1/report", params={"namespace": "team-a"}, headers=alice)
    other = rig.http.get("/api/v1/report", params={"namespace": "team-b"}, headers=alice)
    everything = rig.http.get("/api/v1/report", headers=alice)
    anonymous = rig.http.get("/api/v1/report")

    assert (own.status_code, own.json()["namespace"]) == (200, "team-a")
    assert [other.status_code, everything.status_code, anonymous.status_code] == [403, 403, 401]
    assert everything.headers["content-type"] == "application/problem+json"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        pytest.param({"since": "yesterday"}, "since", id="since-not-a-duration"),
        pytest.param({"since": "0s"}, "since", id="since-empty-period"),
        pytest.param({"since": "365d"}, "since", id="since-longer-than-ninety-days"),
        pytest.param({"namespace": "Team_A"}, "namespace", id="namespace-not-a-dns-label"),
    ],
)
def test_bad_input_is_a_problem_naming_the_field(
    shared: ApiRig, params: dict[str, str], field: str
) -> None:
    answer = shared.reader.get("/api/v1/report", params=params)

    assert answer.status_code == 422
    assert answer.headers["content-type"] == "application/problem+json"
    assert field in str(answer.json())


def test_metrics_carry_the_figures_per_namespace_and_queue_only() -> None:
    with ApiRig(dry_run=False) as rig:
        rig.add_raycluster("team-a", "alice-rc", gpus=2)
        rig.cycle()
        rig.clock.advance(timedelta(hours=2))
        rig.cycle()
        text = rig.http.get("/metrics").text
    reclaimed = [
        line
        for line in text.splitlines()
        if line.startswith("idle_gpu_autoscaler_savings_reclaimed_gpu_hours{")
    ]
    assert reclaimed == [
        'idle_gpu_autoscaler_savings_reclaimed_gpu_hours{namespace="team-a",queue="user-queue"} 4.0'
    ]
    for name in ("held_idle_gpu_hours", "wait_shortened_seconds", "regretted", "contested"):
        assert f"# TYPE idle_gpu_autoscaler_savings_{name} gauge" in text
