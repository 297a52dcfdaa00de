"""Snoozes through the REST API: annotations on the Workload, the rule's bounds (clipped and
audited, refused past the day's count), the same right as exempting, and removal."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from autoscaler.api.presenters import workload_view
from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import time_text
from autoscaler.domain.models import Action, Decision, State, WorkloadStatus
from autoscaler.domain.notices.notice import Notice
from tests.api.rig import ApiRig
from tests.support.domain_builders import A_DEFAULT_RULE, NOW, a_workload

SNOOZE = "/api/v1/workloads/team-a/alice-rc/snooze"
DEFAULT_LONGEST = timedelta(hours=24)  # the domain's SnoozeBounds default


def annotations_of(obj: dict[str, Any]) -> dict[str, str]:
    return dict(obj["metadata"].get("annotations") or {})


def audit_of(rig: ApiRig, action: str) -> list[dict[str, Any]]:
    items = rig.reader.get("/api/v1/decisions").json()["items"]
    return [item for item in items if item["action"] == action]


def test_a_snooze_is_written_on_the_workload_shown_on_the_owner_and_audited(rig: ApiRig) -> None:
    name = rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()  # so the owner's name finds the Workload
    response = rig.http.post(
        SNOOZE, json={"duration": "4h", "reason": "still debugging"}, headers=rig.as_user("alice")
    )
    assert response.status_code == 200, response.text
    until = time_text(rig.now + timedelta(hours=4))
    assert response.json() == {
        "namespace": "team-a",
        "workload": name,
        "until": until,
        "clippedFrom": None,
        "rule": "default",
        "by": "alice",
        "reason": "still debugging",
    }
    written = annotations_of(rig.workload("team-a", name))
    assert (written[keys.SNOOZED_UNTIL], written[keys.SNOOZED_BY]) == (until, "alice")
    assert annotations_of(rig.owner("team-a", "alice-rc"))[keys.SNOOZED_UNTIL] == until
    [record] = audit_of(rig, "snooze")
    assert (record["actor"], record["target"]) == ("alice", f"team-a/{name}")
    assert record["reason"] == f"until {until}: still debugging"


def test_a_snooze_longer_than_the_rules_bound_is_clipped_and_the_clip_is_audited(
    rig: ApiRig,
) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    response = rig.http.post(
        SNOOZE, json={"duration": "3d", "reason": "long run"}, headers=rig.as_user("alice")
    )
    assert response.status_code == 200, response.text
    asked, granted = rig.now + timedelta(days=3), rig.now + DEFAULT_LONGEST
    assert response.json()["until"] == time_text(granted)
    assert response.json()["clippedFrom"] == time_text(asked)
    [record] = audit_of(rig, "snooze")
    assert f"asked until {time_text(asked)}, clipped to rule default's" in record["reason"]


def test_a_snooze_past_the_rules_count_per_day_is_refused_with_409_and_writes_nothing(
    rig: ApiRig,
) -> None:
    name = rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()  # so the owner's name finds the Workload
    for _ in range(3):  # the default bound: three a day
        body = {"duration": "1h", "reason": "again"}
        assert rig.http.post(SNOOZE, json=body, headers=rig.as_user("alice")).status_code == 200
    before = annotations_of(rig.workload("team-a", name))
    rig.kube.requests.clear()
    refused = rig.http.post(
        SNOOZE, json={"duration": "1h", "reason": "once more"}, headers=rig.as_user("alice")
    )
    assert refused.status_code == 409
    assert "3 snoozes were already granted" in refused.json()["detail"]
    assert annotations_of(rig.workload("team-a", name)) == before
    assert [r for r in rig.kube.requests.writes() if "reviews" not in r.path] == []


def test_a_snooze_whose_workload_changed_since_its_read_is_a_409_problem_and_not_audited(
    rig: ApiRig,
) -> None:
    name = rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()  # so the owner's name finds the Workload
    # Another snooze landed between this one's read and its patch.
    rig.kube.faults.fail_next("PATCH", "/apis/kueue.x-k8s.io", status=409)
    response = rig.http.post(
        SNOOZE, json={"duration": "1h", "reason": "x"}, headers=rig.as_user("alice")
    )
    assert response.status_code == 409
    assert response.headers["content-type"].startswith("application/problem+json")
    assert f"team-a/{name} changed since it was read" in response.json()["detail"]
    assert audit_of(rig, "snooze") == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param({"duration": "soon", "reason": "x"}, "is not a duration", id="not-a-duration"),
        pytest.param({"duration": "-1h", "reason": "x"}, "longer than zero", id="negative"),
        pytest.param({"duration": "0s", "reason": "x"}, "longer than zero", id="zero"),
    ],
)
def test_a_bad_duration_is_a_422_naming_the_field(
    shared: ApiRig, body: dict[str, str], message: str
) -> None:
    response = shared.http.post(SNOOZE, json=body, headers=shared.as_user("alice"))
    assert response.status_code == 422
    [field] = response.json()["fields"]
    assert field["field"] == "body.duration"
    assert message in field["message"]


def test_a_caller_who_may_not_patch_the_workload_gets_403_and_nothing_is_written(
    shared: ApiRig,
) -> None:
    shared.kube.requests.clear()
    response = shared.http.post(
        SNOOZE, json={"duration": "1h", "reason": "not mine"}, headers=shared.as_user("bob")
    )
    assert response.status_code == 403
    assert "bob may not change workloads in team-a" in response.json()["detail"]
    assert [r for r in shared.kube.requests.writes() if "reviews" not in r.path] == []


def test_unsnoozing_removes_the_snooze_from_the_workload_and_the_owner_and_is_audited(
    rig: ApiRig,
) -> None:
    name = rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()  # so the owner's name finds the Workload
    rig.http.post(SNOOZE, json={"duration": "1h", "reason": "x"}, headers=rig.as_user("alice"))
    response = rig.http.delete(SNOOZE, headers=rig.as_user("alice"))
    assert response.status_code == 200, response.text
    assert response.json()["until"] is None
    assert keys.SNOOZED_UNTIL not in annotations_of(rig.workload("team-a", name))
    assert keys.SNOOZED_UNTIL not in annotations_of(rig.owner("team-a", "alice-rc"))
    [record] = audit_of(rig, "unsnooze")
    assert record["actor"] == "alice"
    again = rig.http.delete(SNOOZE, headers=rig.as_user("alice"))
    assert again.status_code == 409


def test_a_workloads_view_carries_its_notice_and_leaves_it_out_when_there_is_none() -> None:
    info = a_workload("team-a", "rc").gpu_pod("rc-head-0").build()
    plain = Decision(info.ref, State.SNOOZED, Action.NONE, "kept by alice", rule=A_DEFAULT_RULE)
    notice = Notice(snoozed_until=NOW + timedelta(hours=2), snoozed_by="alice")
    snoozed = replace(plain, notice=notice)
    shown = workload_view(
        WorkloadStatus(info, snoozed), now=NOW, may_read=lambda _: True
    ).model_dump(mode="json", by_alias=True)
    assert shown["state"] == "snoozed"
    assert shown["notice"] == {
        "snoozedUntil": time_text(notice.snoozed_until),
        "snoozedBy": "alice",
    }
    bare = workload_view(WorkloadStatus(info, plain), now=NOW, may_read=lambda _: True).model_dump(
        mode="json", by_alias=True
    )
    assert "notice" not in bare
