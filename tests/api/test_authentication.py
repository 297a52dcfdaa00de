"""Who may change what: TokenReview, then SubjectAccessReview, from the test API server.

Authentication comes first, in a middleware that never reads the body: a change without a
valid token is a 401 whatever it carries.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoscaler.settings.api import ApiSettings, AuthSettings
from tests.api.rig import ApiRig

CHANGES = [
    ("PUT", "/api/v1/workloads/team-a/alice-rc/exemption"),
    ("DELETE", "/api/v1/workloads/team-a/alice-rc/exemption"),
    ("POST", "/api/v1/workloads/team-a/alice-rc/reactivate"),
    ("POST", "/api/v1/workloads/team-a/alice-rc/deactivate"),
    ("POST", "/api/v1/pause"),
    ("POST", "/api/v1/resume"),
    ("POST", "/api/v1/namespaces/team-a/pause"),
    ("POST", "/api/v1/namespaces/team-a/resume"),
]
REVIEWS = "/apis/authorization.k8s.io"


@pytest.mark.parametrize(("method", "path"), CHANGES, ids=[f"{m} {p}" for m, p in CHANGES])
@pytest.mark.parametrize(
    "authorization",
    [
        pytest.param(None, id="no-header"),
        pytest.param("Bearer not-a-known-token", id="unknown-token"),
        pytest.param("Bearer", id="scheme-without-token"),
        pytest.param("Basic YWxpY2U6c2VjcmV0", id="basic-auth"),
        pytest.param("alice-token", id="no-scheme"),
    ],
)
def test_a_change_without_a_valid_bearer_token_is_a_401(
    shared: ApiRig, method: str, path: str, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization is not None else {}
    response = shared.http.request(method, path, json={"reason": "x"}, headers=headers)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert response.json()["title"] == "Unauthorized"


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    change=st.sampled_from([*CHANGES, ("PATCH", "/api/v1/nowhere"), ("POST", "/healthz")]),
    body=st.binary(max_size=512),
    content_type=st.sampled_from(
        ["application/json", "text/plain", "application/x-www-form-urlencoded", "", "%%%"]
    ),
    token=st.sampled_from([None, "Bearer wrong", "Bearer " + "x" * 20000]),
)
def test_malformed_changes_without_a_valid_token_get_401_before_any_parsing(
    shared: ApiRig, change: tuple[str, str], body: bytes, content_type: str, token: str | None
) -> None:
    method, path = change
    headers = {"Content-Type": content_type}
    if token is not None:
        headers["Authorization"] = token
    shared.kube.requests.clear()
    response = shared.http.request(method, path, content=body, headers=headers)
    # a method the path does not take (POST /healthz) is a 405 even before the token is asked for
    assert response.status_code == (405 if change == ("POST", "/healthz") else 401)
    assert shared.kube.requests.matching("POST", REVIEWS) == []
    assert [r for r in shared.kube.requests.writes() if "tokenreviews" not in r.path] == []


def test_a_refusal_is_a_403_carrying_the_reason_from_the_access_review(rig: ApiRig) -> None:
    """To a caller who may read the namespace: one who may not is told nothing the lookup
    found (tests/api/test_authorization_matrix.py)."""
    rig.kube.reviews.allow(user="bob", verb="list", resource="workloads", namespace="team-a")
    rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    response = rig.http.put(
        "/api/v1/workloads/team-a/alice-rc/exemption",
        json={"duration": "1h", "reason": "not mine"},
        headers=rig.as_user("bob"),
    )
    assert response.status_code == 403
    assert response.json()["detail"] == (
        "bob may not patch rayclusters.ray.io team-a/alice-rc: no test rule allows this request"
    )


def test_the_access_review_asks_about_the_callers_user_and_the_workloads_owner(
    shared: ApiRig,
) -> None:
    shared.kube.requests.clear()
    shared.http.put(
        "/api/v1/workloads/team-a/alice-rc/exemption",
        json={"duration": "1h", "reason": "mine"},
        headers=shared.as_user("alice"),
    )
    [review] = shared.kube.requests.matching("POST", REVIEWS)
    assert review.body["spec"]["user"] == "alice"
    assert review.body["spec"]["groups"] == ["system:authenticated"]
    assert review.body["spec"]["resourceAttributes"] == {
        "verb": "patch",
        "group": "ray.io",
        "resource": "rayclusters",
        "namespace": "team-a",
        "name": "alice-rc",
    }


def test_a_token_that_cannot_be_reviewed_is_a_503_not_a_guess(rig: ApiRig) -> None:
    """A fresh service: no answer cached yet for this token or question."""
    rig.kube.faults.fail_next("POST", "/apis/authentication.k8s.io", status=500)
    response = rig.http.post(
        "/api/v1/namespaces/team-a/pause", json={"reason": "x"}, headers=rig.as_user("alice")
    )
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "5"


def test_an_access_review_that_fails_is_a_503_and_changes_nothing(rig: ApiRig) -> None:
    """A fresh service: no answer cached yet for this token or question."""
    rig.kube.faults.fail_next("POST", REVIEWS, status=503)
    response = rig.http.post(
        "/api/v1/namespaces/team-a/pause", json={"reason": "x"}, headers=rig.as_user("alice")
    )
    assert response.status_code == 503
    assert rig.reader.get("/api/v1/pauses").json()["paused"] == []


STATIC_TOKENS = """
tokens:
  - token: alice-static-token-0123456789
    username: alice
    namespaces: [team-a]
  - token: admin-static-token-0123456789
    username: root
    namespaces: ["*"]
    admin: true
"""


def test_static_tokens_grant_exactly_the_listed_namespaces_and_admin(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(STATIC_TOKENS)
    auth = AuthSettings(mode="static", static_tokens_file=tokens)
    with ApiRig(settings=ApiSettings(host="127.0.0.1", port=0, auth=auth)) as rig:
        rig.add_raycluster("team-a", "alice-rc")
        rig.add_raycluster("team-b", "bob-rc")
        rig.cycle()
        rig.kube.requests.clear()
        alice = {"Authorization": "Bearer alice-static-token-0123456789"}
        root = {"Authorization": "Bearer admin-static-token-0123456789"}
        exempt = {"duration": "1h", "reason": "demo"}

        def put(path: str, headers: dict[str, str]) -> httpx.Response:
            return rig.http.put(path, json=exempt, headers=headers)

        assert put("/api/v1/workloads/team-a/alice-rc/exemption", alice).status_code == 200
        refused = put("/api/v1/workloads/team-b/bob-rc/exemption", alice)
        assert refused.status_code == 403
        assert "may not change workloads in team-b" in refused.json()["detail"]
        why = {"reason": "maintenance"}
        assert rig.http.post("/api/v1/pause", json=why, headers=alice).status_code == 403
        assert rig.http.post("/api/v1/pause", json=why, headers=root).status_code == 200
        assert (
            put("/api/v1/workloads/team-a/alice-rc/exemption", rig.as_user("alice")).status_code
            == 401
        )
        assert [
            r.path
            for r in rig.kube.requests.all()
            if "authentication" in r.path or "authorization" in r.path
        ] == []


def test_a_token_used_for_several_requests_is_reviewed_once(rig: ApiRig) -> None:
    rig.cycle()
    rig.kube.requests.clear()
    for _ in range(3):
        response = rig.http.get("/api/v1/workloads?namespace=team-a", headers=rig.as_user("alice"))
        assert response.status_code == 200
    assert len(rig.kube.requests.matching("POST", "/apis/authentication.k8s.io")) == 1
    assert len(rig.kube.requests.matching("POST", REVIEWS)) == 1
