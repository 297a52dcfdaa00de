"""The metrics-api query is read exactly, and the OpenAPI document states that reading: what the
document lets through is taken, what it refuses is refused (a 400 naming the parameter)."""

from __future__ import annotations

import re

import jsonschema_rs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.engine.cycle.snapshots import SnapshotStore
from autoscaler.keda.metadata import MetadataError, parse_metadata, query_schema
from autoscaler.keda.selectors import SELECTOR_PATTERN, parse_selector
from tests.keda.test_http import AUTH, PATH, app_for, keda_only, reads_ml

PROFILES = ("fast",)


def taken(query: dict[str, str]) -> bool:
    try:
        parse_metadata(query, default_namespace=None, profiles=PROFILES, exact=True)
    except MetadataError:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(st.from_regex(re.compile(SELECTOR_PATTERN), fullmatch=True))
def test_every_selector_the_pattern_lets_through_parses_with_nothing_around_it(
    text: str,
) -> None:
    assert text == text.strip()
    parse_selector(text)


def values(*samples: str) -> st.SearchStrategy[str | None]:
    return st.none() | st.sampled_from(samples)


@settings(max_examples=400, deadline=None)
@given(
    namespace=values("ml", "team-a", " ml", "ml ", "", "ML", "a" * 63, "a" * 64, "ml\n"),
    workload=values("rc", "rc-1.a", "rc ", "\trc", "", "RC_1", "w" * 253, "w" * 254),
    pod_selector=values(
        "app=llm",
        "app = llm",
        "app=",
        "app= ",
        " app=llm",
        "app=llm\t",
        "app\t= llm",
        "tier in (gpu, cpu),!canary",
        "tier in ( )",
        "! canary",
        "tier in (gpu",
        "a=b," + "c" * 1020,
        "a=b," + "c" * 1021,
        "",
    ),
    profile=values("default", "fast", "slow", " fast", ""),
    extra=values("scalerAddress", "caCert", "treshold"),
)
def test_a_query_is_taken_exactly_when_the_document_lets_it_through(
    namespace: str | None,
    workload: str | None,
    pod_selector: str | None,
    profile: str | None,
    extra: str | None,
) -> None:
    given_values = {
        "namespace": namespace,
        "workload": workload,
        "podSelector": pod_selector,
        "profile": profile,
        extra or "": "x",
    }
    query = {key: value for key, value in given_values.items() if key and value is not None}
    documented = jsonschema_rs.validator_for(query_schema(PROFILES)).is_valid(query)
    assert taken(query) is documented, query


@pytest.mark.parametrize(
    ("query", "named"),
    [
        pytest.param({"namespace": " ml", "workload": "rc"}, "namespace", id="space-before"),
        pytest.param({"namespace": "ml", "workload": "rc\n"}, "workload", id="newline-after"),
        pytest.param({"namespace": "ml", "podSelector": "app=llm "}, "podSelector", id="selector"),
        pytest.param({"namespace": "ml", "workload": "rc", "profile": ""}, "profile", id="empty"),
    ],
)
def test_a_value_not_given_exactly_is_a_400_naming_its_parameter(
    query: dict[str, str], named: str
) -> None:
    client = app_for(SnapshotStore(), authenticate=keda_only, authorize=reads_ml)
    response = client.get(PATH, params=query, headers=AUTH)
    assert response.status_code == 400
    assert response.json()["detail"].startswith(f"{named}: ")


def test_trigger_metadata_is_still_forgiven_its_whitespace_and_kedas_own_keys() -> None:
    """gRPC: KEDA adds its own keys to the metadata; a stray space there is read as meant."""
    raw = {"scalerAddress": "x:9090", "workload": " rc ", "profile": ""}
    parsed = parse_metadata(raw, default_namespace="ml", profiles=PROFILES)
    assert (parsed.target.workload, parsed.target.profile) == ("rc", "default")
    with pytest.raises(MetadataError, match="unknown query parameters: scalerAddress"):
        exact = {"scalerAddress": "x:9090", "workload": "rc"}
        parse_metadata(exact, default_namespace="ml", profiles=PROFILES, exact=True)
