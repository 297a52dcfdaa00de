"""Where the RayCluster rows are read from: one list of RayClusters and one of their pods per
cycle (`ListedRayClusters`), or watch caches of both (`cached_source.CachedRayClusters`).
The fresh read before acting GETs the RayCluster and lists its pods, either way."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from autoscaler.adapters.kuberay.rayclusters import RayPod, ray_pod
from autoscaler.adapters.kubernetes.cache import key_of
from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kubernetes.objects import MALFORMED
from autoscaler.adapters.kubernetes.pod_selectors import PodSelector
from autoscaler.adapters.kubernetes.resources import PODS, RAYCLUSTERS, Obj
from autoscaler.core.errors import NotFound
from autoscaler.domain.models import WorkloadRef
from autoscaler.domain.policy.owners import KNOWN_OWNERS
from autoscaler.settings.tree import ClusterSettings

NamespacedPod = tuple[str, RayPod]
PodsByCluster = Mapping[tuple[str, str], tuple[RayPod, ...]]


@dataclass(frozen=True)
class RayClusterRead:
    """One cycle's RayClusters and the pods of each, by (namespace, RayCluster name)."""

    clusters: tuple[Obj, ...]
    pods: PodsByCluster = field(default_factory=dict)

    def pods_of(self, namespace: str, name: str) -> tuple[RayPod, ...]:
        return tuple(self.pods.get((namespace, name), ()))


class RayClusterSource(Protocol):
    def read(self) -> RayClusterRead:
        """This cycle's RayClusters and their pods. Raises ClusterError."""
        ...

    def read_one(self, ref: WorkloadRef) -> tuple[Obj | None, tuple[RayPod, ...]]:
        """One RayCluster (None when gone) and its pods, read now, never from a cache."""
        ...


class ListedRayClusters:
    """Two list calls per cycle, whatever the number of RayClusters."""

    def __init__(
        self, *, client: KubeClient, settings: ClusterSettings, logger: logging.Logger
    ) -> None:
        self._client = client
        self._gpu_resources = settings.gpu_resources
        self._selector = pod_selector(settings)
        self._log = logger

    def read(self) -> RayClusterRead:
        try:
            clusters = self._client.list_objects(RAYCLUSTERS).items
        except NotFound:  # KubeRay's CRD is not installed: no RayCluster
            return RayClusterRead(())
        listed = self._client.list_objects(PODS, label_selector=self._selector.across_owners())
        pods = parse_pods(listed.items, self._gpu_resources, self._log)
        return RayClusterRead(clusters, group_pods(clusters, pods, self._selector))

    def read_one(self, ref: WorkloadRef) -> tuple[Obj | None, tuple[RayPod, ...]]:
        return read_one(self._client, ref, selector=self._selector, gpus=self._gpu_resources)


def read_one(
    client: KubeClient, ref: WorkloadRef, *, selector: PodSelector, gpus: Sequence[str]
) -> tuple[Obj | None, tuple[RayPod, ...]]:
    """GET the RayCluster and list its pods (one call each)."""
    try:
        found = client.get(RAYCLUSTERS, ref.name, namespace=ref.namespace)
    except NotFound:
        return None, ()
    listed = client.list_objects(
        PODS, namespace=ref.namespace, label_selector=selector.for_owner(ref.name)
    )
    parsed = parse_pods(listed.items, gpus, logging.getLogger(__name__))
    return found, tuple(pod for _, pod in parsed)


def pod_selector(settings: ClusterSettings) -> PodSelector:
    """The RayCluster owner kind's pod selector from the settings, else its row's (KubeRay's
    label)."""
    configured = settings.owner_kinds.get("RayCluster")
    default = KNOWN_OWNERS["RayCluster"].pod_selector
    template = (configured.pod_selector if configured is not None else None) or default
    return PodSelector.parse(template)


def parse_pods(
    found: Iterable[Obj], gpu_resources: Sequence[str], logger: logging.Logger
) -> list[NamespacedPod]:
    parsed = []
    for obj in found:
        pod = parse_pod(obj, gpu_resources, logger)
        if pod is not None:
            parsed.append(pod)
    return parsed


def parse_pod(
    obj: Obj, gpu_resources: Sequence[str], logger: logging.Logger
) -> NamespacedPod | None:
    try:
        return str(obj["metadata"]["namespace"]), ray_pod(obj, gpu_resources)
    except MALFORMED as exc:
        logger.warning("skipping malformed pod: %s", exc)
        return None


def group_pods(
    clusters: Iterable[Obj], pods: Iterable[NamespacedPod], selector: PodSelector
) -> dict[tuple[str, str], tuple[RayPod, ...]]:
    """Each RayCluster's pods, matched by its pod selector within its namespace."""
    by_namespace: dict[str, list[RayPod]] = defaultdict(list)
    for namespace, pod in pods:
        by_namespace[namespace].append(pod)
    grouped = {}
    for cluster in clusters:
        namespace, name = key_of(cluster)
        candidates = by_namespace.get(namespace, [])
        mine = [p for p in candidates if selector.matches(p.pod.labels, owner=name)]
        grouped[(namespace, name)] = tuple(mine)
    return grouped
