"""Prometheus configuration mimicking what prometheus-operator renders for a ServiceMonitor.

The operator discovers the exporter through Kubernetes and copies `__meta_kubernetes_*` labels
into namespace/pod/container/service/endpoint/job with relabel rules. We hand the same `__meta_*`
labels to a static target and keep the operator's rules, so Prometheus itself renames the workload
labels the exporter exposes to `exported_*` when honor_labels is false (keeps them when true).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

SCRAPE_INTERVAL = "1s"

_META_TO_TARGET = {
    "__meta_kubernetes_namespace": "namespace",
    "__meta_kubernetes_service_name": "service",
    "__meta_kubernetes_pod_name": "pod",
    "__meta_kubernetes_pod_container_name": "container",
    "__meta_kubernetes_endpoint_port_name": "endpoint",
}


class ScrapeTarget(Protocol):
    @property
    def address(self) -> str: ...

    def scrape_labels(self) -> dict[str, str]: ...

    @property
    def honor_labels(self) -> bool: ...


def scrape_config(exporters: Sequence[ScrapeTarget]) -> dict[str, Any]:
    jobs = [
        _job(honor, [e for e in exporters if e.honor_labels is honor]) for honor in (False, True)
    ]
    return {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "scrape_timeout": SCRAPE_INTERVAL},
        "scrape_configs": [job for job in jobs if job["static_configs"]],
    }


def _job(honor_labels: bool, exporters: Sequence[ScrapeTarget]) -> dict[str, Any]:
    suffix = "honor-labels" if honor_labels else "0"
    return {
        "job_name": f"serviceMonitor/nvidia-gpu-operator/nvidia-dcgm-exporter/{suffix}",
        "honor_labels": honor_labels,
        "static_configs": [_static_target(e) for e in exporters],
        "relabel_configs": _operator_relabelling(),
    }


def _static_target(exporter: ScrapeTarget) -> dict[str, Any]:
    target = exporter.scrape_labels()
    meta = {meta: target[label] for meta, label in _META_TO_TARGET.items()}
    meta["__meta_kubernetes_pod_ip"] = target["instance"].rsplit(":", 1)[0]
    meta["__meta_kubernetes_pod_container_port_number"] = target["instance"].rsplit(":", 1)[1]
    return {"targets": [exporter.address], "labels": meta}


def _operator_relabelling() -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = [
        {"source_labels": [meta], "target_label": label} for meta, label in _META_TO_TARGET.items()
    ]
    rules.append({"source_labels": ["__meta_kubernetes_service_name"], "target_label": "job"})
    # The real instance is podIP:port; ours is 127.0.0.1:<random>, so rebuild the pod's address.
    rules.append(
        {
            "source_labels": [
                "__meta_kubernetes_pod_ip",
                "__meta_kubernetes_pod_container_port_number",
            ],
            "separator": ":",
            "target_label": "instance",
        }
    )
    return rules
