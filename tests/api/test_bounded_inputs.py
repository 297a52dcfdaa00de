"""No input reaches a 5xx: every duration and time a caller sends is bounded and refused with a
422 naming the field and the bound, and a 422 stays small whatever was sent. (The signed
links' bounds are in test_links.py, the schema's statement of them in test_openapi.py.)"""

from __future__ import annotations

import json
from typing import Any

import pytest

from autoscaler.domain.text import SHOWN_PROBLEMS
from tests.api.rig import ApiRig

WORKLOAD = "/api/v1/workloads/team-a/alice-rc"


@pytest.mark.parametrize(
    ("method", "path", "sent", "field", "bound"),
    [
        pytest.param(
            "POST",
            f"{WORKLOAD}/snooze",
            {"json": {"duration": "99999999h", "reason": "x"}},
            "body.duration",
            "longer than the maximum, 36500d",
            id="snooze-past-now-plus-it",
        ),
        pytest.param(
            "PUT",
            f"{WORKLOAD}/exemption",
            {"json": {"duration": "99999999h", "reason": "x"}},
            "body.duration",
            "longer than the maximum, 36500d",
            id="exemption-duration",
        ),
        pytest.param(
            "PUT",
            f"{WORKLOAD}/exemption",
            {"json": {"until": "9999-12-31T23:59:59-23:59", "reason": "x"}},
            "body.until",
            "years 2 to 9998",
            id="exemption-until-past-the-calendar-in-utc",
        ),
        pytest.param(
            "GET",
            "/api/v1/report",
            {"params": {"since": "91d"}},
            "since",
            "longer than the maximum, 90d",
            id="report-since",
        ),
        pytest.param(
            "GET",
            "/api/v1/report",
            {"params": {"since": "9" * 400 + "s"}},
            "since",
            "longer than the maximum, 90d",
            id="report-since-past-a-float",
        ),
    ],
)
def test_a_duration_or_time_past_its_bound_is_a_422_naming_the_field_and_the_bound(  # noqa: PLR0917 (the table's columns)
    shared: ApiRig, method: str, path: str, sent: dict[str, Any], field: str, bound: str
) -> None:
    shared.kube.requests.clear()
    answer = shared.http.request(method, path, headers=shared.as_user("admin"), **sent)

    assert answer.status_code == 422, answer.text
    [problem] = answer.json()["fields"]
    assert problem["field"] == field
    assert bound in problem["message"]
    assert [r.path for r in shared.kube.requests.writes() if "k8s.io/v1/" not in r.path] == []


def test_64_kib_of_unknown_keys_is_a_small_422_naming_the_first_few(shared: ApiRig) -> None:
    body = {f"key{i:05}-{'x' * 40}": 1 for i in range(1100)}
    body["reason"] = "x"
    sent = json.dumps(body).encode()
    assert len(sent) > 60_000  # and below the 64 KiB a body may have

    answer = shared.http.post(
        "/api/v1/pause",
        content=sent,
        headers={**shared.as_user("admin"), "Content-Type": "application/json"},
    )

    assert answer.status_code == 422
    assert len(answer.content) < 2048
    problem = answer.json()
    assert len(problem["fields"]) == SHOWN_PROBLEMS
    assert problem["fields"][0]["field"] == f"body.key00000-{'x' * 40}"
    assert problem["detail"].endswith(f"and {1100 - SHOWN_PROBLEMS} more")


def test_a_key_of_many_kilobytes_is_echoed_clipped(shared: ApiRig) -> None:
    key = "k" * 60_000
    answer = shared.http.post(
        "/api/v1/pause", json={key: 1, "reason": "x"}, headers=shared.as_user("admin")
    )

    assert answer.status_code == 422
    assert len(answer.content) < 1024
    [problem] = answer.json()["fields"]
    assert problem["field"].startswith("body.kkk")
    assert problem["field"].endswith("…")
