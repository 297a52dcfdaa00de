"""Every error answer is RFC 9457 problem details: `application/problem+json` with `type`,
`title`, `status` and `detail`, from the one mapping place (`autoscaler/api/problems.py`); a
problem a client acts on names its kind in `type` (`ProblemType`, docs/API.md "Problem
types"), the rest are `about:blank`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from autoscaler.domain.problem_types import BLANK, PROBLEM_TYPES_PAGE, ProblemType
from tests.api.rig import ApiRig

REPO = Path(__file__).resolve().parents[2]
ALICE = {"Authorization": "Bearer alice-token"}
ADMIN = {"Authorization": "Bearer admin-token"}
BOB = {"Authorization": "Bearer bob-token"}
EXEMPT = {"duration": "1h", "reason": "x"}
ERRORS = [
    pytest.param(
        "PUT", "/api/v1/workloads/team-a/alice-rc/exemption", {}, None, 401, BLANK, id="401"
    ),
    pytest.param(
        "POST", "/api/v1/pause", ALICE, {"reason": "x"}, 403, ProblemType.MISSING_RIGHT, id="403"
    ),
    pytest.param(
        "PUT",
        "/api/v1/workloads/team-a/alice-rc/exemption",
        BOB,
        EXEMPT,
        403,
        ProblemType.UNSEEN_CHANGE,
        id="403-unseen",
    ),
    pytest.param(
        "GET",
        "/api/v1/workloads/team-a/ghost",
        ALICE,
        None,
        404,
        ProblemType.NO_SUCH_WORKLOAD,
        id="404-workload",
    ),
    pytest.param(
        "POST",
        "/api/v1/namespaces/no-such-team/pause",
        ADMIN,
        {"reason": "x"},
        404,
        ProblemType.NO_SUCH_NAMESPACE,
        id="404-namespace",
    ),
    pytest.param("GET", "/api/v1/nowhere", ALICE, None, 404, BLANK, id="404-route"),
    pytest.param("PATCH", "/api/v1/pauses", ALICE, None, 405, BLANK, id="405"),
    pytest.param(
        "POST",
        "/api/v1/workloads/team-a/alice-rc/reactivate",
        ALICE,
        {"reason": "x"},
        409,
        ProblemType.ALREADY_ACTIVE,
        id="409",
    ),
    pytest.param(
        "DELETE",
        "/api/v1/workloads/team-a/alice-rc/snooze",
        ALICE,
        None,
        409,
        ProblemType.NOTHING_TO_REMOVE,
        id="409-not-snoozed",
    ),
    pytest.param(
        "PUT",
        "/api/v1/workloads/team-a/alice-rc/exemption",
        ALICE,
        {"reason": "x" * 70000},
        413,
        BLANK,
        id="413",
    ),
    pytest.param(
        "PUT",
        "/api/v1/workloads/team-a/alice-rc/exemption",
        ALICE,
        {"reason": ""},
        422,
        BLANK,
        id="422",
    ),
]


@pytest.mark.parametrize(("method", "path", "headers", "body", "status", "problem_type"), ERRORS)
def test_every_error_is_a_problem_details_document(  # noqa: PLR0917 (the table's columns)
    shared: ApiRig,
    method: str,
    path: str,
    headers: dict[str, str],
    body: dict[str, str] | None,
    status: int,
    problem_type: str,
) -> None:
    response = shared.http.request(method, path, json=body, headers=headers)
    assert response.status_code == status
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["type"] == problem_type
    assert problem["status"] == status
    assert problem["title"]
    assert problem["detail"]


def test_the_openapi_document_describes_errors_as_problem_json(shared: ApiRig) -> None:
    schema = shared.http.get("/openapi.json").json()
    answers = schema["paths"]["/api/v1/workloads/{namespace}/{name}"]["get"]["responses"]
    assert "application/problem+json" in answers["404"]["content"]
    assert "type" in schema["components"]["schemas"]["Problem"]["properties"]


def test_a_refused_change_tells_nothing_of_whether_the_workload_exists(shared: ApiRig) -> None:
    """bob may not read team-a: his change on alice's RayCluster and on a name that matches
    nothing get the same answer, type and all, but for the name he gave."""
    answers = {
        name: shared.http.put(
            f"/api/v1/workloads/team-a/{name}/exemption", json=EXEMPT, headers=BOB
        )
        for name in ("alice-rc", "ghost")
    }
    found, missing = (answers[name].json() for name in ("alice-rc", "ghost"))
    assert answers["alice-rc"].status_code == answers["ghost"].status_code == 403
    assert found["type"] == ProblemType.UNSEEN_CHANGE
    assert missing == {**found, "detail": found["detail"].replace("alice-rc", "ghost")}
    assert answers["alice-rc"].headers.keys() == answers["ghost"].headers.keys()


def test_the_openapi_document_lists_every_problem_type(shared: ApiRig) -> None:
    schema = shared.http.get("/openapi.json").json()
    kind = schema["components"]["schemas"]["Problem"]["properties"]["type"]
    assert set(kind["examples"]) == {BLANK, *(t.value for t in ProblemType)}
    assert kind["default"] == BLANK
    assert "Problem types" in kind["description"]


def test_each_problem_type_is_the_address_of_its_row_in_the_api_docs() -> None:
    """Under the chart's home (its repository), on the default branch, each with its anchor
    on docs/API.md, so that looking a type up finds what it means and what to do."""
    chart = yaml.safe_load((REPO / "charts/idle-gpu-autoscaler/Chart.yaml").read_text())
    assert f"{chart['home']}/blob/main/docs/API.md" == PROBLEM_TYPES_PAGE
    page = (REPO / "docs" / "API.md").read_text(encoding="utf-8")
    rows = re.findall(r'^\| <a name="([\w-]+)"></a>`\1` \|', page, flags=re.MULTILINE)
    assert rows == [t.value.removeprefix(f"{PROBLEM_TYPES_PAGE}#") for t in ProblemType]
