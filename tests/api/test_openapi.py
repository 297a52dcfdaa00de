"""The OpenAPI document tells the truth: every operation named once, the token each needs, the
methods each path takes (a 405 says the same), and each documented bound the very one the
validation applies: what the document lets through, the API takes; what it refuses, the API
refuses too."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from autoscaler.api.context import SnoozeNotifications
from autoscaler.api.routes.links import MAX_TOKEN
from autoscaler.api.schemas.requests import ExemptionRequest, ReasonRequest, SnoozeRequest
from autoscaler.engine.cycle.snapshots import SnapshotStore
from autoscaler.engine.notify.links import LinkSigner
from autoscaler.keda.http import keda_router
from autoscaler.settings.api import ApiSettings
from tests.api.rig import ApiRig
from tests.keda.rig import FakeClock, make_answers
from tests.support.domain_builders import HOUR, NOW

OPERATIONS = ("get", "put", "post", "delete", "patch")


@pytest.fixture(scope="module")
def with_keda() -> Iterator[ApiRig]:
    """The API as served with KEDA and the keep-it links on: every route there is."""
    answers = make_answers(SnapshotStore(), FakeClock(NOW))
    links = LinkSigner(key=b"k" * 32, base_url="https://x.example", ttl=HOUR, choices=[HOUR])
    with ApiRig(
        routers=[keda_router(answers=answers)], notices=SnoozeNotifications(links=links)
    ) as rig:
        yield rig


@pytest.fixture(scope="module")
def document(with_keda: ApiRig) -> dict[str, Any]:
    return dict(with_keda.http.get("/openapi.json").json())


class Bodies:
    """Validators of the document's request bodies, as schemathesis validates (jsonschema_rs:
    JSON Schema 2020-12 with its formats, ECMA-262 patterns)."""

    def __init__(self, document: dict[str, Any]) -> None:
        self._document = document

    def __repr__(self) -> str:  # not the whole document in a failure's report
        return "Bodies(the served document)"

    def takes(self, name: str, body: dict[str, Any]) -> bool:
        schema = {**self._document["components"]["schemas"][name]}
        schema["components"] = self._document["components"]
        return bool(
            jsonschema_rs.Draft202012Validator(schema, validate_formats=True).is_valid(body)
        )


@pytest.fixture(scope="module")
def bodies(document: dict[str, Any]) -> Bodies:
    return Bodies(document)


def operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            if method in OPERATIONS:
                yield path, method, operation


def test_every_operation_id_is_unique(document: dict[str, Any]) -> None:
    counted = Counter(operation["operationId"] for _, _, operation in operations(document))
    assert [name for name, count in counted.items() if count > 1] == []
    assert {"metrics", "keda_metrics"} <= set(counted)


def test_the_operations_that_need_a_token_declare_it_as_the_server_asks_it(
    document: dict[str, Any],
) -> None:
    secured = {
        (method, path)
        for path, method, operation in operations(document)
        if operation.get("security") == [{"bearer": []}]
    }
    assert ("get", "/api/v1/workloads") in secured  # reads are closed by default
    assert ("post", "/api/v1/workloads/{namespace}/{name}/snooze") in secured
    assert {
        ("get", "/healthz"),
        ("get", "/metrics"),
        ("post", "/v1/links/snooze/{token}"),
    }.isdisjoint(secured)
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"


def test_the_document_is_built_when_the_app_is_set_up_and_the_first_request_finds_it() -> None:
    """Not lazily by a first request on the server's thread (where its `ast`-heavy build
    raced other threads' parses on CPython 3.11.7, tests/support/ast_parse_guard.py)."""
    with ApiRig() as rig:
        app = rig.api.app
        built = app.openapi_schema
        assert built is not None  # before any request
        assert "bearer" in built["components"]["securitySchemes"]  # ours, not FastAPI's bare
        first = rig.http.request("TRACE", "/healthz")  # the 405 reads the document's methods
        served = rig.http.get("/openapi.json").json()
    assert (first.status_code, first.headers["allow"]) == (405, "GET")
    assert app.openapi_schema is built  # found built, never made again
    assert served == built


def test_with_reads_open_only_changes_declare_a_token() -> None:
    with ApiRig(settings=ApiSettings(reads_open=True)) as rig:
        opened = rig.http.get("/openapi.json").json()
    secured = {method for _, method, operation in operations(opened) if "security" in operation}
    assert secured == {"put", "post", "delete"}


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        pytest.param("TRACE", "/healthz", "GET", id="an-open-probe"),
        pytest.param("OPTIONS", "/api/v1/workloads/team-a/x/exemption", "DELETE, PUT", id="two"),
        pytest.param("PATCH", "/v1/links/snooze/abc.def", "GET, POST", id="a-link"),
        pytest.param("POST", "/api/v1/workloads", "GET", id="a-read-without-a-token"),
    ],
)
def test_a_method_the_path_does_not_take_is_a_405_listing_the_documented_ones_first(
    with_keda: ApiRig, document: dict[str, Any], method: str, path: str, allowed: str
) -> None:
    answer = with_keda.http.request(method, path)  # no token: the 405 comes before the 401
    assert answer.status_code == 405
    assert answer.headers["allow"] == allowed
    assert answer.headers["content-type"] == "application/problem+json"


def validates(model: type[BaseModel], body: dict[str, Any]) -> bool:
    try:
        model.model_validate(body)
    except ValidationError:
        return False
    return True


DURATIONS = st.text(alphabet="0123456789.dhms -", max_size=40) | st.sampled_from(
    [
        "36500d",
        "36501d",
        "876000h",
        "876000.5h",
        "99999999h",
        "0s",
        "1h90m",
        "1h30m",
        "4h",
        "1.5h",
        "0.000001s",
        "0000000000000000000000000000004h",
        "00000000000000000000000000000004h",
    ]
)
REASONS = st.text(max_size=300) | st.sampled_from(
    [" ", "\u3000\u2028", "ok\x1b[2J", "\u202eevil", "a" * 256, "a" * 257, "\ufeff"]
)
TIMES = st.sampled_from(
    [
        "2030-01-01T18:00:00Z",
        "2030-01-01t18:00:00.123456789z",
        "2030-01-01T18:00:00+23:59",
        "2030-02-30T18:00:00Z",
        "2030-01-01T24:00:00Z",
        "2030-01-01T18:00:00",
        "9999-12-31T23:59:59-23:59",
        "0001-01-01T00:00:00+01:00",
        "0002-01-01T00:00:00+01:00",
        "9998-12-31T23:59:59-23:59",
    ]
)


@settings(max_examples=300, deadline=None)
@given(duration=DURATIONS, reason=REASONS)
def test_a_snooze_body_is_taken_exactly_when_the_document_lets_it_through(
    bodies: Bodies, duration: str, reason: str
) -> None:
    body = {"duration": duration, "reason": reason}
    assert bodies.takes("SnoozeRequest", body) == validates(SnoozeRequest, body)


@settings(max_examples=200, deadline=None)
@given(
    duration=st.none() | DURATIONS,
    until=st.none() | TIMES,
    left_out=st.sampled_from([(), ("duration",), ("until",), ("duration", "until")]),
)
def test_an_exemption_body_is_taken_exactly_when_the_document_lets_it_through(
    bodies: Bodies, duration: str | None, until: str | None, left_out: tuple[str, ...]
) -> None:
    body = {"duration": duration, "until": until, "reason": "training"}
    body = {key: value for key, value in body.items() if key not in left_out}
    assert bodies.takes("ExemptionRequest", body) == validates(ExemptionRequest, body)


@settings(max_examples=300, deadline=None)
@given(reason=REASONS)
def test_a_reason_is_taken_exactly_when_the_document_lets_it_through(
    bodies: Bodies, reason: str
) -> None:
    body = {"reason": reason}
    assert bodies.takes("ReasonRequest", body) == validates(ReasonRequest, body)


@pytest.mark.parametrize(
    ("since", "taken"),
    [
        pytest.param("90d", True, id="the-longest"),
        pytest.param("2160h", True, id="the-longest-in-hours"),
        pytest.param("91d", False, id="past-the-longest"),
        pytest.param("0s", False, id="nothing"),
        pytest.param("yesterday", False, id="a-word"),
    ],
)
def test_the_reports_period_is_taken_exactly_when_the_document_lets_it_through(
    with_keda: ApiRig, document: dict[str, Any], since: str, taken: bool
) -> None:
    [parameter] = [
        p for p in document["paths"]["/api/v1/report"]["get"]["parameters"] if p["name"] == "since"
    ]
    documented = jsonschema_rs.Draft202012Validator(parameter["schema"]).is_valid(since)
    answer = with_keda.reader.get("/api/v1/report", params={"since": since})
    assert documented is taken
    assert (answer.status_code == 200) is taken, answer.text


@pytest.mark.parametrize(
    "token",
    [
        pytest.param("abc.def", id="a-links-shape"),
        pytest.param("A" * (MAX_TOKEN - 2) + ".B", id="the-longest"),
        pytest.param("A" * MAX_TOKEN + ".B", id="too-long"),
        pytest.param("abc", id="no-signature"),
        pytest.param("a.b.c", id="two-dots"),
    ],
)
def test_a_link_token_is_read_exactly_when_the_document_lets_it_through(
    with_keda: ApiRig, document: dict[str, Any], token: str
) -> None:
    [parameter] = document["paths"]["/v1/links/snooze/{token}"]["get"]["parameters"]
    documented = jsonschema_rs.Draft202012Validator(parameter["schema"]).is_valid(token)
    page = with_keda.http.get(f"/v1/links/snooze/{token}")
    assert page.status_code == 403  # none is signed with the key
    assert ("not a link&#x27;s token" not in page.text) is documented, page.text
