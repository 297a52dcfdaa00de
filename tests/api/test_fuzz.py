"""Schema-driven fuzzing of the API against its own OpenAPI schema (schemathesis).

Every generated request, valid or not, with or without a token, must get a documented
status, never a 5xx, and a body that matches the schema. Examples are capped so the whole
module runs in well under a minute.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from autoscaler.engine.notify.links import LINK_PATH
from tests.api.rig import ApiRig

CHECKS = [
    negative_data_rejection,
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
FUZZ = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)


@pytest.fixture(scope="module")
def fuzz_rig() -> Iterator[ApiRig]:
    with ApiRig() as rig:
        rig.add_raycluster("team-a", "alice-rc")
        rig.add_raycluster("team-b", "bob-rc", peak=0.9)
        rig.cycle()
        yield rig
    assert rig.kube.errors == []


@pytest.fixture(scope="module")
def api_schema(fuzz_rig: ApiRig) -> Any:
    return schemathesis.openapi.from_dict(fuzz_rig.api.app.openapi())


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@FUZZ
def test_any_request_without_a_token_gets_a_documented_answer_and_never_a_5xx(
    case: Any, fuzz_rig: ApiRig
) -> None:
    response = case.call(base_url=fuzz_rig.url)
    case.validate_response(response, checks=CHECKS)
    signed_link = case.path.startswith(LINK_PATH)  # its token is its credential
    if case.method.upper() not in ("GET", "HEAD", "OPTIONS") and not signed_link:
        assert response.status_code == 401


@schema.parametrize()
@FUZZ
def test_any_request_from_an_admin_gets_a_documented_answer_and_never_a_5xx(
    case: Any, fuzz_rig: ApiRig
) -> None:
    headers = fuzz_rig.as_user("admin")
    response = case.call(base_url=fuzz_rig.url, headers=headers)
    case.validate_response(response, checks=CHECKS, headers=headers)
