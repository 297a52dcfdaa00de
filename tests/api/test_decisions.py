"""The audit trail: the loop's actions with their numbers, and API changes, newest first."""

from __future__ import annotations

from datetime import timedelta

from autoscaler.settings.api import ApiSettings
from tests.api.rig import ApiRig


def test_the_loops_deactivation_is_recorded_with_peak_coverage_threshold_and_actor() -> None:
    with ApiRig(dry_run=False) as rig:
        name = rig.add_raycluster("team-a", "alice-rc", peak=0.02, gpus=2)
        rig.cycle()
        [record] = rig.reader.get("/api/v1/decisions").json()["items"]
    assert record == {
        "at": record["at"],
        "actor": "idle-gpu-autoscaler",
        "action": "deactivate",
        "target": f"team-a/{name}",
        "reason": record["reason"],
        "outcome": "done",  # the record written before the patch, settled once it applied
        "namespace": "team-a",
        "owner": "RayCluster team-a/alice-rc",  # as people know it
        "gpus": 2,
        "peak": 0.02,
        "coverage": 1.0,
        "threshold": 0.05,
        "evidence": None,  # no evidence signal saw anything
    }
    assert "idle for the whole window" in record["reason"]


def test_in_dry_run_a_would_deactivate_decision_is_recorded_once_when_it_appears(
    rig: ApiRig,
) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    for _ in range(3):
        rig.cycle()
    items = rig.reader.get("/api/v1/decisions").json()["items"]
    assert [(r["action"], r["outcome"]) for r in items] == [
        ("would-deactivate", "dry-run: not patched")
    ]


def test_records_come_newest_first_in_pages(rig: ApiRig) -> None:
    alice = rig.as_user("alice")
    for number in range(5):
        rig.http.post(
            "/api/v1/namespaces/team-a/pause", json={"reason": f"r{number}"}, headers=alice
        )
        rig.clock.advance(timedelta(seconds=1))
    first = rig.reader.get("/api/v1/decisions", params={"limit": 2}).json()
    assert [r["reason"] for r in first["items"]] == ["r4", "r3"]
    assert (first["total"], first["nextOffset"]) == (5, 2)
    last = rig.reader.get("/api/v1/decisions", params={"limit": 2, "offset": 4}).json()
    assert [r["reason"] for r in last["items"]] == ["r0"]
    assert last["nextOffset"] is None


def test_records_can_be_filtered_by_namespace(rig: ApiRig) -> None:
    rig.http.post(
        "/api/v1/namespaces/team-a/pause", json={"reason": "a"}, headers=rig.as_user("alice")
    )
    rig.http.post(
        "/api/v1/namespaces/team-b/pause", json={"reason": "b"}, headers=rig.as_user("bob")
    )
    items = rig.reader.get("/api/v1/decisions", params={"namespace": "team-b"}).json()["items"]
    assert [(r["actor"], r["target"]) for r in items] == [("bob", "namespace team-b")]


def test_the_trail_keeps_only_the_newest_records_up_to_the_limit() -> None:
    with ApiRig(settings=ApiSettings(host="127.0.0.1", port=0, audit_record_limit=3)) as rig:
        for number in range(5):
            rig.clock.advance(timedelta(seconds=1))
            rig.http.post(
                "/api/v1/pause", json={"reason": f"r{number}"}, headers=rig.as_user("admin")
            )
        items = rig.reader.get("/api/v1/decisions").json()["items"]
    assert [r["reason"] for r in items] == ["r4", "r3", "r2"]
