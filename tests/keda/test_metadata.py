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
        pytest.param({"workload": "RC_1"}, "workload: String should match", id="name-not-dns"),
        pytest.param(
            {"workload": "rc", "namespace": "Team A"},
            "namespace: String should match",
            id="namespace-not-a-label",
        ),
        pytest.param({"workload": "rc\x1b[2J"}, "workload:", id="name-with-escape"),
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


def test_an_unknown_key_error_names_a_few_keys_and_counts_the_rest() -> None:
    raw = {"workload": "rc", **{f"key{i:04d}": "x" for i in range(2000)}}
    with pytest.raises(MetadataError) as caught:
        parse(raw)
    message = str(caught.value)
    assert "key0000, key0001, key0002, key0003, key0004 and 1995 more" in message
    assert len(message) < 300


def test_an_unknown_key_is_named_escaped_and_clipped() -> None:
    with pytest.raises(MetadataError) as caught:
        parse({"workload": "rc", "\x1b]0;pwned\x07" + "k" * 500: "x"})
    message = str(caught.value)
    assert "\x1b" not in message
    assert "\\x1b]0;pwned\\x07" in message
    assert len(message) < 200
