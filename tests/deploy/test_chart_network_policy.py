"""The NetworkPolicy is on by default and admits exactly: the REST API's callers (a namespace
selector, every namespace by default), the monitoring namespace's scrapes of /metrics and KEDA's
namespace on the gRPC scaler and the metrics-api endpoint. Each rule is read from the rendered
policy: the namespace selectors that may reach a named port."""

from __future__ import annotations

from typing import Any

import pytest

from tests.deploy.tooling import CHART, Manifest, find, one, render, template_result, values_args

KEDA_ON = ("--set", "keda.enabled=true")
NAMESPACE_NAME = "kubernetes.io/metadata.name"


def policy(*args: str) -> Manifest:
    spec: Manifest = one(render(*args), "NetworkPolicy")["spec"]
    return spec


def peers_reaching(spec: Manifest, port: str) -> list[dict[str, Any]]:
    """Every `from` peer of the rules that open `port`."""
    return [
        peer
        for rule in spec["ingress"]
        if port in {p["port"] for p in rule["ports"]}
        for peer in rule["from"]
    ]


def named_namespaces(spec: Manifest, port: str) -> set[str]:
    """Namespaces admitted to `port` by name (kubernetes.io/metadata.name)."""
    return {
        labels[NAMESPACE_NAME]
        for peer in peers_reaching(spec, port)
        if NAMESPACE_NAME
        in (labels := (peer.get("namespaceSelector") or {}).get("matchLabels", {}))
    }


def namespace_selectors(spec: Manifest, port: str) -> list[dict[str, Any]]:
    return [
        peer["namespaceSelector"]
        for peer in peers_reaching(spec, port)
        if "namespaceSelector" in peer
    ]


@pytest.mark.real
def test_the_policy_is_on_by_default_and_selects_the_service_pods() -> None:
    manifests = render()
    spec = one(manifests, "NetworkPolicy")["spec"]
    pod_labels = one(manifests, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert spec["policyTypes"] == ["Ingress"]
    assert spec["podSelector"]["matchLabels"].items() <= pod_labels.items()


@pytest.mark.real
def test_it_can_be_turned_off() -> None:
    assert not find(render("--set", "networkPolicy.enabled=false"), "NetworkPolicy")


@pytest.mark.real
def test_the_api_is_reachable_from_every_namespace_by_default() -> None:
    peers = peers_reaching(policy(), "http")
    assert {"namespaceSelector": {}} in peers
    assert {"podSelector": {}} in peers


@pytest.mark.real
def test_the_api_namespace_selector_is_rendered_as_given() -> None:
    selector = {"matchLabels": {"team": "ml"}}
    spec = policy("--set", "networkPolicy.apiNamespaceSelector.matchLabels.team=ml")
    assert selector in namespace_selectors(spec, "http")
    assert {} not in namespace_selectors(spec, "http")


@pytest.mark.real
@pytest.mark.parametrize(
    ("args", "scrapers"),
    [
        pytest.param((), {"monitoring"}, id="monitoring-by-default"),
        pytest.param(
            ("--set", "networkPolicy.metricsFromNamespaces={openshift-monitoring}"),
            {"openshift-monitoring"},
            id="openshift-monitoring",
        ),
    ],
)
def test_the_monitoring_namespace_scrapes_metrics_whatever_the_api_selector(
    args: tuple[str, ...], scrapers: set[str]
) -> None:
    narrowed = ("--set", "networkPolicy.apiNamespaceSelector.matchLabels.team=ml")
    spec = policy(*narrowed, "--set", "serviceMonitor.enabled=true", *args)
    assert named_namespaces(spec, "http") == scrapers


@pytest.mark.real
def test_the_service_monitor_scrapes_the_port_the_policy_opens_to_monitoring() -> None:
    manifests = render("--set", "serviceMonitor.enabled=true")
    (endpoint,) = one(manifests, "ServiceMonitor")["spec"]["endpoints"]
    spec = one(manifests, "NetworkPolicy")["spec"]
    assert "monitoring" in named_namespaces(spec, endpoint["port"])


@pytest.mark.real
def test_a_service_monitor_without_a_monitoring_namespace_fails_the_install() -> None:
    code, _, err = template_result(
        "--set", "serviceMonitor.enabled=true", "--set", "networkPolicy.metricsFromNamespaces=null"
    )
    assert code != 0
    assert "networkPolicy.metricsFromNamespaces" in err


@pytest.mark.real
@pytest.mark.parametrize(
    ("args", "keda_namespaces"),
    [
        pytest.param((), set(), id="scaler-off-keeps-grpc-closed"),
        pytest.param(KEDA_ON, {"keda"}, id="keda-namespace-by-default"),
        pytest.param(
            (*KEDA_ON, "--set", "networkPolicy.grpcFromNamespaces={openshift-keda}"),
            {"openshift-keda"},
            id="openshift-keda",
        ),
    ],
)
def test_only_kedas_namespace_reaches_the_grpc_scaler(
    args: tuple[str, ...], keda_namespaces: set[str]
) -> None:
    spec = policy(*args)
    assert named_namespaces(spec, "grpc") == keda_namespaces
    assert namespace_selectors(spec, "grpc") == [
        {"matchLabels": {NAMESPACE_NAME: name}} for name in sorted(keda_namespaces)
    ]


@pytest.mark.real
@pytest.mark.parametrize(
    ("args", "keda_reaches_http"),
    [
        pytest.param((), False, id="scaler-off"),
        pytest.param(KEDA_ON, True, id="scaler-on"),
    ],
)
def test_keda_namespaces_reach_the_metrics_api_only_when_it_is_served(
    args: tuple[str, ...], keda_reaches_http: bool
) -> None:
    assert ("keda" in named_namespaces(policy(*args), "http")) is keda_reaches_http


@pytest.mark.real
def test_the_all_optional_values_narrow_the_api_to_labelled_namespaces() -> None:
    spec = policy(*values_args(CHART / "ci" / "all-optional-on-values.yaml"))
    selectors = namespace_selectors(spec, "http")
    assert {} not in selectors
    assert any(s.get("matchLabels") == {"idle-gpu-autoscaler.io/api": "true"} for s in selectors)
