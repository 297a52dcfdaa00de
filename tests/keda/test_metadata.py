from __future__ import annotations

import pytest

from autoscaler.keda.metadata import MetadataError, parse_metadata
from autoscaler.keda.selectors import parse_selector
from autoscaler.keda.targets import Target

KEDA_SENDS = {
    "scalerAddress": "idle-gpu-autoscaler.idle-gpu-autoscaler.svc.cluster.local:9090",
    "enableTLS": "true",
    "unsafeSsl": "false",
}


def parse(raw: dict[str, str], *, default_namespace: str | None = "ml") -> Target:
    return parse_metadata(raw, default_namespace=default_namespace, profiles={"fast"}).target


def test_a_workload_is_selected_by_namespace_and_name_beside_kedas_own_keys() -> None:
    target = parse({**KEDA_SENDS, "namespace": "team-a", "workload": "rc-1"})
    assert target == Target("team-a", workload="rc-1")


def test_the_namespace_defaults_to_the_scaled_objects_own() -> None:
    assert parse({**KEDA_SENDS, "workload": "rc-1"}) == Target("ml", workload="rc-1")


def test_a_pod_selector_and_a_profile_select_gpu_pods_under_that_profile() -> None:
    target = parse({"podSelector": "app=llm", "profile": "fast"})
    assert target == Target("ml", selector=parse_selector("app=llm"), profile="fast")


def test_tls_keys_in_metadata_are_accepted_and_reported_as_ignored() -> None:
    raw = {"workload": "rc", "caCert": "/x/ca.pem", "tlsClientCert": "c", "tlsCertFile": "f"}
    parsed = parse_metadata(raw, default_namespace="ml", profiles=())
    assert parsed.ignored_tls_keys == ("caCert", "tlsCertFile", "tlsClientCert")


@pytest.mark.parametrize(
    ("raw", "complaint"),
    [
        pytest.param(
            {"workload": "rc", "treshold": "5"},
            "unknown scalerMetadata keys: treshold",
            id="typo-is-named",
        ),
        pytest.param({"name": "rc"}, "unknown scalerMetadata keys: name", id="name-is-not-a-key"),
        pytest.param({}, "exactly one of workload", id="nothing-selected"),
        pytest.param(
            {"workload": "rc", "podSelector": "app=x"},
            "exactly one of workload",
            id="both-selected",
        ),
        pytest.param({"podSelector": "app in (x"}, "podSelector: unbalanced", id="bad-selector"),
        pytest.param(
            {"workload": "rc", "profile": "slow"}, "unknown profile 'slow'", id="unknown-profile"
        ),
        pytest.param({"workload": "x" * 300}, "workload:", id="name-too-long"),
    ],
)
def test_bad_metadata_is_refused_with_a_message_naming_the_problem(
    raw: dict[str, str], complaint: str
) -> None:
    with pytest.raises(MetadataError, match=complaint):
        parse(raw)


def test_without_a_scaled_object_the_namespace_is_required() -> None:
    with pytest.raises(MetadataError, match="namespace"):
        parse({"workload": "rc"}, default_namespace=None)


def test_empty_values_count_as_not_given() -> None:
    assert parse({"workload": "rc", "podSelector": " ", "profile": ""}) == Target(
        "ml", workload="rc"
    )
