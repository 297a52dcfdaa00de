from __future__ import annotations

from typing import Any

import pytest

from autoscaler.engine.cycle.keda_managed import ManagedTarget, keda_managed_targets
from autoscaler.settings.keda import default_self_addresses

OURS = default_self_addresses("gpu-ops", port=9090)


def scaled_object(
    *triggers: dict[str, Any], namespace: str = "ml", target: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "so", "namespace": namespace},
        "spec": {"scaleTargetRef": target or {"name": "llm"}, "triggers": list(triggers)},
    }


def external(address: str, kind: str = "external") -> dict[str, Any]:
    return {"type": kind, "metadata": {"scalerAddress": address, "workload": "rc"}}


def metrics_api(url: str) -> dict[str, Any]:
    return {"type": "metrics-api", "metadata": {"url": url, "valueLocation": "value"}}


@pytest.mark.parametrize(
    ("trigger", "namespace", "ours"),
    [
        pytest.param(
            external("idle-gpu-autoscaler.gpu-ops.svc.cluster.local:9090"),
            "ml",
            True,
            id="fully-qualified-address",
        ),
        pytest.param(
            external("idle-gpu-autoscaler.gpu-ops.svc:9090", "external-push"),
            "ml",
            True,
            id="external-push-with-svc-name",
        ),
        pytest.param(
            external("idle-gpu-autoscaler.gpu-ops:9090"), "ml", True, id="service-dot-namespace"
        ),
        pytest.param(
            external("IDLE-GPU-AUTOSCALER.gpu-ops.svc.cluster.local.:9090"),
            "ml",
            True,
            id="case-and-trailing-dot",
        ),
        pytest.param(
            external("idle-gpu-autoscaler:9090"), "gpu-ops", True, id="short-name-in-our-namespace"
        ),
        pytest.param(
            external("idle-gpu-autoscaler:9090"),
            "ml",
            False,
            id="short-name-in-another-namespace-is-another-service",
        ),
        pytest.param(external("other-scaler.gpu-ops.svc:9090"), "ml", False, id="another-scaler"),
        pytest.param(
            metrics_api(
                "http://idle-gpu-autoscaler.gpu-ops.svc:8080/api/v1/keda/metrics?namespace=ml"
            ),
            "ml",
            True,
            id="metrics-api-url-host-any-port",
        ),
        pytest.param(
            metrics_api("https://prometheus.monitoring.svc:9090/api/v1/query"),
            "ml",
            False,
            id="metrics-api-elsewhere",
        ),
        pytest.param(
            {
                "type": "prometheus",
                "metadata": {"serverAddress": "http://idle-gpu-autoscaler.gpu-ops.svc:9090"},
            },
            "ml",
            False,
            id="other-trigger-types-are-ignored",
        ),
    ],
)
def test_a_target_is_keda_managed_when_a_trigger_points_at_us(
    trigger: dict[str, Any], namespace: str, ours: bool
) -> None:
    found = keda_managed_targets([scaled_object(trigger, namespace=namespace)], self_addresses=OURS)
    assert bool(found) is ours


def test_the_managed_target_names_kind_api_version_and_the_scaled_object() -> None:
    workload = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "name": "rc-abc"}
    cpu = {"type": "cpu", "metadata": {"value": "50"}}
    obj = scaled_object(cpu, external(OURS[1]), namespace="demo", target=workload)
    assert keda_managed_targets([obj], self_addresses=OURS) == (
        ManagedTarget("demo", "kueue.x-k8s.io/v1beta2", "Workload", "rc-abc", "so"),
    )


def test_the_scale_target_defaults_to_an_apps_v1_deployment() -> None:
    [found] = keda_managed_targets([scaled_object(external(OURS[0]))], self_addresses=OURS)
    assert (found.api_version, found.kind, found.name) == ("apps/v1", "Deployment", "llm")


def test_configured_self_addresses_may_be_ip_addresses() -> None:
    found = keda_managed_targets(
        [scaled_object(external("10.0.0.7:9090"))], self_addresses=["10.0.0.7:9090"]
    )
    assert len(found) == 1


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param({}, id="empty"),
        pytest.param({"metadata": None, "spec": None}, id="nulls"),
        pytest.param({"spec": {"triggers": [external(OURS[0])]}}, id="no-scale-target"),
        pytest.param(
            {"spec": {"scaleTargetRef": {"name": "x"}, "triggers": [None, {"type": "external"}]}},
            id="odd-triggers",
        ),
    ],
)
def test_malformed_scaled_objects_are_skipped(obj: dict[str, Any]) -> None:
    assert keda_managed_targets([obj], self_addresses=OURS) == ()
