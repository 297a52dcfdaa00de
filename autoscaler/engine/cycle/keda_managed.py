"""Which ScaledObjects use our signal: their targets are KEDA's, never patched by the loop.

A trigger points at us when its `scalerAddress` (external, external-push) or its `url` host
(metrics-api) names this service. Service names are compared fully qualified, resolved as
the ScaledObject's pod would resolve them: `idle-gpu-autoscaler:9090` in namespace `ml` is
`idle-gpu-autoscaler.ml.svc.cluster.local`, ours only when we run in `ml`. Ports are not
compared: every port of our Service is ours (gRPC and the REST API differ).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from autoscaler.domain.models import WorkloadInfo

GRPC_TRIGGERS = frozenset({"external", "external-push"})
HTTP_TRIGGERS = frozenset({"metrics-api"})


@dataclass(frozen=True, order=True)
class ManagedTarget:
    """A ScaledObject's scale target, and which ScaledObject makes it KEDA-managed."""

    namespace: str
    api_version: str
    kind: str
    name: str
    scaled_object: str


def keda_managed_targets(
    scaled_objects: Iterable[Mapping[str, Any]],
    *,
    self_addresses: Iterable[str],
    cluster_domain: str = "cluster.local",
) -> tuple[ManagedTarget, ...]:
    """The targets of ScaledObjects (as API dicts) with a trigger pointing at us, sorted."""
    ours = {_qualified(_host(a), namespace=None, domain=cluster_domain) for a in self_addresses}
    found = set()
    for obj in scaled_objects:
        target = _managed(obj, ours=ours, domain=cluster_domain)
        if target is not None:
            found.add(target)
    return tuple(sorted(found))


def _managed(obj: Mapping[str, Any], *, ours: set[str], domain: str) -> ManagedTarget | None:
    meta, spec = _mapping(obj.get("metadata")), _mapping(obj.get("spec"))
    namespace = str(meta.get("namespace") or "default")
    ref = _mapping(spec.get("scaleTargetRef"))
    if not ref.get("name"):
        return None
    for trigger in spec.get("triggers") or ():
        host = _trigger_host(_mapping(trigger))
        if host and _qualified(host, namespace=namespace, domain=domain) in ours:
            return ManagedTarget(
                namespace=namespace,
                api_version=str(ref.get("apiVersion") or "apps/v1"),
                kind=str(ref.get("kind") or "Deployment"),
                name=str(ref["name"]),
                scaled_object=str(meta.get("name") or ""),
            )
    return None


def _trigger_host(trigger: Mapping[str, Any]) -> str | None:
    kind, metadata = trigger.get("type"), _mapping(trigger.get("metadata"))
    if kind in GRPC_TRIGGERS:
        return _host(str(metadata.get("scalerAddress") or ""))
    if kind in HTTP_TRIGGERS:
        return urlsplit(str(metadata.get("url") or "")).hostname
    return None


def _host(address: str) -> str:
    """`host:port`, `host`, `[v6]:port` or a URL → the host, lowercase."""
    text = address.strip()
    if "://" in text:
        return urlsplit(text).hostname or ""
    return (urlsplit(f"//{text}").hostname or "") if text else ""


def _qualified(host: str, *, namespace: str | None, domain: str) -> str:
    """The name as a pod in `namespace` resolves it (None: already at least `svc.ns`)."""
    host = host.lower().rstrip(".")
    if not host or _is_ip(host):
        return host
    labels = host.split(".")
    if len(labels) == 1 and namespace is not None:
        labels.append(namespace)
    if len(labels) == 2:
        labels.append("svc")
    if len(labels) == 3 and labels[2] == "svc":
        labels.extend(domain.split("."))
    return ".".join(labels)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def mark_keda_managed(
    workloads: Iterable[WorkloadInfo], targets: Iterable[ManagedTarget]
) -> list[WorkloadInfo]:
    """Flag the workloads a ScaledObject scales, by the Workload itself or by its owner."""
    scaled = {(t.namespace, t.kind, t.name) for t in targets}

    def managed(info: WorkloadInfo) -> bool:
        namespace = info.ref.namespace
        owner = info.owner
        return (namespace, "Workload", info.ref.name) in scaled or (
            owner is not None and (namespace, owner.kind, owner.name) in scaled
        )

    return [replace(info, keda_managed=True) if managed(info) else info for info in workloads]
