"""Exemptions through the API: annotations on the owner, what is refused, and removal."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import time_text
from autoscaler.domain.exemptions import EXEMPT_UNTIL_REQUESTED
from tests.api.rig import ApiRig
from tests.support.builders import make_raycluster
from tests.support.ray_rig import put_raycluster

EXEMPTION = "/api/v1/workloads/team-a/alice-rc/exemption"


def annotations_of(obj: dict[str, Any]) -> dict[str, str]:
    return dict(obj["metadata"].get("annotations") or {})


def test_an_exemption_for_a_duration_is_stored_on_the_owner_with_who_when_and_why(
    rig: ApiRig,
) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    response = rig.http.put(
        EXEMPTION,
        json={"duration": "4h", "reason": "I am presenting"},
        headers=rig.as_user("alice"),
    )
    assert response.status_code == 200
    until = time_text(rig.now + timedelta(hours=4))
    assert response.json()["annotated"] == "RayCluster team-a/alice-rc"
    assert response.json()["exemption"]["until"] == until
    assert annotations_of(rig.owner("team-a", "alice-rc")) == {
        keys.EXEMPT_UNTIL: until,
        keys.EXEMPT_BY: "alice",
        keys.EXEMPT_REASON: "I am presenting",
        keys.EXEMPT_SET_AT: time_text(rig.now),
    }


def test_an_exemption_until_a_time_is_honoured_by_the_next_cycle(rig: ApiRig) -> None:
    name = rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    until = time_text(rig.now + timedelta(days=2))
    response = rig.http.put(
        f"/api/v1/workloads/team-a/{name}/exemption",
        json={"until": until, "reason": "weekend run"},
        headers=rig.as_user("alice"),
    )
    assert response.status_code == 200
    [row] = rig.cycle().workloads
    assert row.decision.state == "exempt"
    shown = rig.reader.get("/api/v1/workloads/team-a/alice-rc").json()
    assert shown["state"] == "exempt"
    assert shown["exemption"]["until"] == until
    assert shown["exemption"]["by"] == "alice"
    assert shown["exemption"]["onOwner"] is True


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        pytest.param(
            {"duration": "-1h", "reason": "x"},
            "body.duration",
            "longer than zero",
            id="negative-duration",
        ),
        pytest.param(
            {"duration": "0s", "reason": "x"},
            "body.duration",
            "longer than zero",
            id="zero-duration",
        ),
        pytest.param(
            {"duration": "999999999d", "reason": "x"},
            "body.duration",
            "longer than the maximum",
            id="absurd-duration",
        ),
        pytest.param(
            {"duration": 3600, "reason": "x"},
            "body.duration",
            "not a duration",
            id="duration-as-a-number",
        ),
        pytest.param(
            {"until": 1900000000, "reason": "x"},
            "body.until",
            "not an RFC 3339 time",
            id="time-as-a-number",
        ),
        pytest.param(
            {"duration": "8d", "reason": "x"},
            "body.duration",
            "maximum exemption of 7d",
            id="over-the-maximum",
        ),
        pytest.param(
            {"duration": "soon", "reason": "x"},
            "body.duration",
            "not a duration",
            id="not-a-duration",
        ),
        pytest.param(
            {"until": "2001-01-01T00:00:00Z", "reason": "x"},
            "body.until",
            "in the past",
            id="time-in-the-past",
        ),
        pytest.param(
            {"until": "2999-01-01T00:00:00Z", "reason": "x"},
            "body.until",
            "maximum exemption",
            id="time-too-far",
        ),
        pytest.param(
            {"until": "2030-01-01T00:00:00", "reason": "x"},
            "body.until",
            "not an RFC 3339 time",
            id="time-without-timezone",
        ),
        pytest.param(
            {"duration": "1h", "reason": "x" * 257},
            "body.reason",
            "at most 256",
            id="oversized-reason",
        ),
        pytest.param(
            {"duration": "1h", "reason": "   "},
            "body.reason",
            "must not be blank",
            id="blank-reason",
        ),
        pytest.param({"duration": "1h"}, "body.reason", "Field required", id="no-reason"),
        pytest.param({"reason": "x"}, "body", "exactly one of", id="neither-duration-nor-until"),
        pytest.param(
            {"duration": "1h", "until": "2030-01-01T00:00:00Z", "reason": "x"},
            "body",
            "exactly one of",
            id="both-duration-and-until",
        ),
        pytest.param(
            {"duration": "1h", "reason": "x", "why": "y"},
            "body.why",
            "Extra inputs",
            id="unknown-field",
        ),
    ],
)
def test_bad_exemption_requests_are_a_422_naming_the_field(
    rig: ApiRig, body: dict[str, Any], field: str, message: str
) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    response = rig.http.put(EXEMPTION, json=body, headers=rig.as_user("alice"))
    assert response.status_code == 422, response.text
    problems = response.json()["fields"]
    assert [p["field"] for p in problems] == [field]
    assert message in problems[0]["message"]
    assert not problems[0]["message"].startswith("Value error")  # pydantic's words, not ours
    assert annotations_of(rig.owner("team-a", "alice-rc")) == {}


def test_exempting_an_unknown_workload_is_a_404(rig: ApiRig) -> None:
    rig.cycle()
    response = rig.http.put(
        "/api/v1/workloads/team-a/nobody/exemption",
        json={"duration": "1h", "reason": "x"},
        headers=rig.as_user("alice"),
    )
    assert response.status_code == 404


def test_exempting_a_workload_exempt_indefinitely_by_hand_is_a_409(rig: ApiRig) -> None:
    rig.add_raycluster("team-a", "alice-rc", annotations={keys.EXEMPT: "true"})
    rig.cycle()
    response = rig.http.put(
        EXEMPTION, json={"duration": "1h", "reason": "x"}, headers=rig.as_user("alice")
    )
    assert response.status_code == 409
    assert "indefinitely" in response.json()["detail"]


def test_removing_an_exemption_clears_owner_and_workload_and_the_loop_acts_again(
    rig: ApiRig,
) -> None:
    name = rig.add_raycluster("team-a", "alice-rc", annotations={keys.EXEMPT: "true"})
    workload = rig.workload("team-a", name)
    workload["metadata"]["annotations"] = {
        keys.EXEMPT_UNTIL: time_text(rig.now + timedelta(hours=1))
    }
    rig.kube.store.put(workload)
    assert rig.cycle().workloads[0].decision.state == "exempt"
    response = rig.http.delete(EXEMPTION, headers=rig.as_user("alice"))
    assert response.status_code == 200
    assert response.json()["exemption"] is None
    assert annotations_of(rig.owner("team-a", "alice-rc")) == {}
    assert keys.EXEMPT_UNTIL not in annotations_of(rig.workload("team-a", name))
    assert rig.cycle().workloads[0].decision.state == "idle"


def test_removing_an_exemption_that_is_not_there_is_a_409(rig: ApiRig) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    response = rig.http.delete(EXEMPTION, headers=rig.as_user("alice"))
    assert response.status_code == 409
    assert "has no exemption" in response.json()["detail"]


def test_removing_a_neighbours_exemption_is_a_403(rig: ApiRig) -> None:
    rig.add_raycluster("team-a", "alice-rc", annotations={keys.EXEMPT: "true"})
    rig.cycle()
    response = rig.http.delete(EXEMPTION, headers=rig.as_user("bob"))
    assert response.status_code == 403
    assert annotations_of(rig.owner("team-a", "alice-rc")) == {keys.EXEMPT: "true"}


def test_a_kubectl_style_annotation_shows_up_in_the_api(rig: ApiRig) -> None:
    until = time_text(rig.now + timedelta(hours=6))
    rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    owner = rig.owner("team-a", "alice-rc")
    owner["metadata"]["annotations"] = {keys.EXEMPT_UNTIL: until}  # kubectl annotate
    rig.kube.store.put(owner)
    rig.cycle()
    shown = rig.reader.get("/api/v1/workloads/team-a/alice-rc").json()
    assert shown["state"] == "exempt"
    assert shown["exemption"] == {
        "until": until,
        "indefinite": False,
        "onOwner": True,
        "by": None,
        "reason": None,
        "setAt": None,
        "requestedUntil": None,
    }


def test_an_expired_exemption_stops_counting_by_itself(rig: ApiRig) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    rig.http.put(EXEMPTION, json={"duration": "1h", "reason": "x"}, headers=rig.as_user("alice"))
    assert rig.cycle().workloads[0].decision.state == "exempt"
    rig.clock.advance(timedelta(hours=1, seconds=1))
    assert rig.cycle().workloads[0].decision.state == "idle"
    assert rig.reader.get("/api/v1/workloads/team-a/alice-rc").json()["exemption"] is None


def test_an_over_long_hand_set_exemption_is_cut_once_to_the_maximum_keeping_the_original(
    rig: ApiRig,
) -> None:
    original = time_text(rig.now + timedelta(days=30))
    rig.add_raycluster("team-a", "alice-rc", annotations={keys.EXEMPT_UNTIL: original})
    rig.cycle()
    cut = time_text(rig.now + timedelta(days=7))
    assert annotations_of(rig.owner("team-a", "alice-rc")) == {
        keys.EXEMPT_UNTIL: cut,
        EXEMPT_UNTIL_REQUESTED: original,
    }
    rig.kube.requests.clear()
    rig.clock.advance(timedelta(minutes=1))
    assert rig.cycle().workloads[0].decision.state == "exempt"
    assert [r for r in rig.kube.requests.writes() if "rayclusters" in r.path] == []
    [record] = [
        r
        for r in rig.reader.get("/api/v1/decisions").json()["items"]
        if r["action"] == "cut-exemption"
    ]
    assert original in record["reason"]
    assert cut in record["reason"]


def test_removing_the_exemption_of_a_raycluster_we_suspend_ourselves_is_one_patch() -> None:
    """The row is the RayCluster itself: its own annotations are its owner's, written once."""
    with ApiRig(suspending=("kuberay",)) as rig:
        until = time_text(rig.now + timedelta(hours=1))
        plain = make_raycluster("team-a", "plain-rc").annotation(keys.EXEMPT_UNTIL, until)
        put_raycluster(rig.kube, plain)
        assert rig.cycle().workloads[0].decision.state == "exempt"
        rig.kube.requests.clear()
        response = rig.http.delete(
            "/api/v1/workloads/team-a/plain-rc/exemption", headers=rig.as_user("alice")
        )
        assert response.status_code == 200
        assert response.json()["annotated"] == "RayCluster team-a/plain-rc"
        assert len([r for r in rig.kube.requests.writes() if "rayclusters" in r.path]) == 1
        assert annotations_of(rig.owner("team-a", "plain-rc")) == {}
