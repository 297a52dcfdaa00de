"""RayClusters and their pods from watch caches: a steady cycle makes no list call.

Two watches, started on the first read: RayClusters, kept trimmed to what a row is read from
(metadata, spec.suspend, the worker groups' sizes, the head template's priority class), and
the pods carrying the RayCluster pod label, kept parsed. A cache that is failing or not
filled yet makes the read raise ClusterUnavailable, as a failed list would.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, TypeGuard

from autoscaler.adapters.kuberay.rayclusters import RayPod, head_priority_class
from autoscaler.adapters.kuberay.source import (
    NamespacedPod,
    RayClusterRead,
    group_pods,
    parse_pod,
    pod_selector,
    read_one,
)
from autoscaler.adapters.kubernetes.cache import (
    WatchCache,
    require_fresh,
    stop_all,
    without_managed_fields,
)
from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kubernetes.resources import PODS, RAYCLUSTERS, Obj
from autoscaler.core.errors import ClusterUnavailable
from autoscaler.domain.models import WorkloadRef
from autoscaler.settings.ha import WatchCacheSettings
from autoscaler.settings.tree import ClusterSettings

_GROUP_FIELDS = ("groupName", "replicas", "minReplicas", "numOfHosts")


class CachedRayClusters:
    def __init__(
        self,
        *,
        client: KubeClient,
        settings: ClusterSettings,
        cache: WatchCacheSettings,
        logger: logging.Logger,
    ) -> None:
        self._client = client
        self._gpu_resources = settings.gpu_resources
        self._selector = pod_selector(settings)
        self._settings = cache
        self._log = logger
        self._lock = threading.Lock()
        self._caches: tuple[WatchCache[Obj], WatchCache[NamespacedPod]] | None = None
        self._stopped = False

    def read(self) -> RayClusterRead:
        clusters, pods = self._started()
        require_fresh((clusters, pods), self._settings.sync_timeout)
        found = clusters.items()
        return RayClusterRead(found, group_pods(found, pods.items(), self._selector))

    def read_one(self, ref: WorkloadRef) -> tuple[Obj | None, tuple[RayPod, ...]]:
        return read_one(self._client, ref, selector=self._selector, gpus=self._gpu_resources)

    def stop(self, timeout: timedelta | None = None) -> bool:
        """Stop both caches at once, then join them; True when all threads ended."""
        with self._lock:
            self._stopped = True  # stale from now on: never read again
            caches: tuple[WatchCache[Any], ...] = self._caches or ()
        return stop_all(caches, timeout)

    def _started(self) -> tuple[WatchCache[Obj], WatchCache[NamespacedPod]]:
        with self._lock:
            if self._stopped:
                raise ClusterUnavailable("the RayCluster watch caches are stopped")
            if self._caches is None:
                clusters = WatchCache(
                    client=self._client,
                    resource=RAYCLUSTERS,
                    settings=self._settings,
                    convert=trimmed,
                    logger=self._log.getChild("cache"),
                    missing_is_empty=True,  # KubeRay's CRD not installed: no RayCluster
                )
                pods = WatchCache(
                    client=self._client,
                    resource=PODS,
                    settings=self._settings,
                    convert=self._pod,
                    logger=self._log.getChild("cache"),
                    label_selector=self._selector.across_owners(),
                )
                clusters.start()
                pods.start()
                self._caches = (clusters, pods)
            return self._caches

    def _pod(self, obj: Obj) -> NamespacedPod | None:
        return parse_pod(obj, self._gpu_resources, self._log)


def trimmed(obj: Obj) -> Obj:
    """What a row is read from: the metadata (less managedFields), spec.suspend, each worker
    group's size and the head template's priority class. The rest of a RayCluster (its pod
    templates) is often large and never read here."""
    meta = without_managed_fields(obj).get("metadata")
    meta = meta if _is_map(meta) else {}
    spec = obj.get("spec")
    spec = spec if _is_map(spec) else {}
    kept: dict[str, Any] = {}
    if "suspend" in spec:
        kept["suspend"] = spec["suspend"]
    groups = spec.get("workerGroupSpecs")
    if isinstance(groups, list):
        kept["workerGroupSpecs"] = [
            {k: g[k] for k in _GROUP_FIELDS if k in g} for g in groups if _is_map(g)
        ]
    head_class = head_priority_class(spec)
    if head_class is not None:
        kept["headGroupSpec"] = {"template": {"spec": {"priorityClassName": head_class}}}
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": meta,
        "spec": kept,
    }


def _is_map(value: object) -> TypeGuard[Mapping[str, Any]]:
    return isinstance(value, Mapping)
