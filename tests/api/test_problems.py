"""Every error answer is RFC 9457 problem details: `application/problem+json` with `type`,
`title`, `status` and `detail`, from the one mapping place (`autoscaler/api/problems.py`)."""

from __future__ import annotations

import pytest

from tests.api.rig import ApiRig

ALICE = {"Authorization": "Bearer alice-token"}
ERRORS = [
    pytest.param("PUT", "/api/v1/workloads/team-a/alice-rc/exemption", {}, None, 401, id="401"),
    pytest.param("POST", "/api/v1/pause", ALICE, {"reason": "x"}, 403, id="403"),
    pytest.param("GET", "/api/v1/workloads/team-a/ghost", ALICE, None, 404, id="404-workload"),
    pytest.param("GET", "/api/v1/nowhere", ALICE, None, 404, id="404-route"),
    pytest.param("PATCH", "/api/v1/pauses", ALICE, None, 405, id="405"),
    pytest.param(
        "POST",
        "/api/v1/workloads/team-a/alice-rc/reactivate",
        ALICE,
        {"reason": "x"},
        409,
        id="409",
    ),
    pytest.param(
        "PUT",
        "/api/v1/workloads/team-a/alice-rc/exemption",
        ALICE,
        {"reason": "x" * 70000},
        413,
        id="413",
    ),
    pytest.param(
        "PUT",
        "/api/v1/workloads/team-a/alice-rc/exemption",
        ALICE,
        {"reason": ""},
        422,
        id="422",
    ),
]


@pytest.mark.parametrize(("method", "path", "headers", "body", "status"), ERRORS)
def test_every_error_is_a_problem_details_document(  # noqa: PLR0917 (the table's columns)
    shared: ApiRig,
    method: str,
    path: str,
    headers: dict[str, str],
    body: dict[str, str] | None,
    status: int,
) -> None:
    response = shared.http.request(method, path, json=body, headers=headers)
    assert response.status_code == status
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["type"] == "about:blank"
    assert problem["status"] == status
    assert problem["title"]
    assert problem["detail"]


def test_the_openapi_document_describes_errors_as_problem_json(shared: ApiRig) -> None:
    schema = shared.http.get("/openapi.json").json()
    answers = schema["paths"]["/api/v1/workloads/{namespace}/{name}"]["get"]["responses"]
    assert "application/problem+json" in answers["404"]["content"]
    assert "type" in schema["components"]["schemas"]["Problem"]["properties"]
