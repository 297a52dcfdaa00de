"""KueueCluster whose cycle reads come from watch caches: a steady cycle makes no list call.

Cached, one watch each: Workloads, ClusterQueues, LocalQueues (the ClusterQueue of a Workload
not admitted), the owners of the *enabled* owner kinds, the intermediate kinds their pods are
found through (each object's uid and controller owner only; an owner kind's cache serves its
kind as an intermediate too: a RayJob's RayClusters are watched once), every pod (kept only
when the cycle may need it, as the uncached reader keeps it: `PodFinder.needs`; stored
parsed), the node autoscaler's TriggeredScaleUp Events (by field selector, stored as (pod,
time)), Kueue's Configuration ConfigMap (by name, in Kueue's namespace, stored interpreted),
KEDA ScaledObjects (started on first use). Owners of kinds that are not enabled are not read:
the policy leaves their Workloads alone whatever the owner says. With Kueue not read
(`actuators.kueue.enabled: false`), there is no Workload, ClusterQueue or owner cache; pods
are kept only for their GPUs.

Everything else is KueueCluster's own: `get_workload`, the fresh read before acting, still GETs
the Workload and its owner and lists that owner's pods; an action writes the audit annotations,
the deactivation patch and the Events. A cache not filled yet or failing makes the cycle's
reads raise ClusterUnavailable, as a failed list would, but for the optional ones: an owner
kind's (its Workloads unknown, `owner_lists.py`), an intermediate kind's, the namespaces',
LocalQueues', Events' and Kueue's Configuration's. The caches keep namespaces and pods parsed,
other objects less their managedFields, owners as their metadata (ownerReferences included).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from autoscaler.adapters.kubernetes import objects
from autoscaler.adapters.kubernetes.cache import (
    Key,
    WatchCache,
    not_following,
    require_fresh,
    stop_all,
    without_managed_fields,
)
from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kubernetes.objects import MALFORMED
from autoscaler.adapters.kubernetes.pod_starts import (
    SCALE_UP_SELECTOR,
    newest_scale_ups,
    scale_up_of,
)
from autoscaler.adapters.kubernetes.resources import (
    CONFIGMAPS,
    EVENTS,
    NAMESPACES,
    PODS,
    SCALED_OBJECTS,
    ApiResource,
    Obj,
    kueue_resource,
    log_name,
)
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.adapters.kueue.configuration import (
    cached_configuration,
    configuration_of,
    name_selector,
    source_of,
)
from autoscaler.adapters.kueue.context import (
    UNLISTED,
    NamespacedPod,
    NamespaceMeta,
    WorkloadContext,
    by_namespace,
    kept_namespace,
    namespace_of,
)
from autoscaler.adapters.kueue.links import Link, cached_links, intermediate_resource, link_of
from autoscaler.adapters.kueue.owner_lists import cached_owners, owner_metadata, split_link_kinds
from autoscaler.adapters.kueue.ownership import PodTree
from autoscaler.adapters.kueue.queue_objects import targets_by_local_queue
from autoscaler.adapters.kueue.resources import OWNER_RESOURCES
from autoscaler.core.errors import ClusterUnavailable
from autoscaler.domain.kueue_config import KueueConfiguration, unreadable
from autoscaler.domain.models import PodInfo, PodRecord, WorkloadInfo
from autoscaler.domain.policy.owners import INTERMEDIATES
from autoscaler.settings.ha import WatchCacheSettings
from autoscaler.settings.tree import ClusterSettings

# The calls the owner caches need beyond today's ALLOWED_CALLS (and the chart's RBAC).
OWNER_WATCH_CALLS: frozenset[tuple[str, str, str]] = frozenset(
    (resource.group, resource.plural, "watch") for resource in OWNER_RESOURCES.values()
)

ScaleUp = tuple[tuple[str, str], datetime]  # ((namespace, pod), when)
T = TypeVar("T")


@dataclass(frozen=True)
class _KueueCaches:
    workloads: WatchCache[Obj]
    cluster_queues: WatchCache[Obj]
    local_queues: WatchCache[Obj]  # never required: failing, no LocalQueue's target is known
    # The node autoscaler's TriggeredScaleUp Events on pods; never required: failing or not
    # filled, scale-ups are unreadable (None) and no unschedulable pod counts as stuck.
    scale_ups: WatchCache[ScaleUp]
    # Kueue's Configuration ConfigMap, watched by name in Kueue's namespace; never required:
    # failing, empty or not filled, it is unreadable and Kueue's deadline unknown.
    configuration: WatchCache[KueueConfiguration]


@dataclass
class _Caches:
    # Never required: failing, the Workloads of that kind are unknown. Empty when Kueue is
    # not read: no Workload has one.
    owners: dict[str, WatchCache[Obj]]
    # The intermediate kinds' links, never required: failing, their kind is unreadable and the
    # Workloads whose pods are found through it are unsure.
    links: dict[str, WatchCache[Link]]
    # The intermediate kinds whose links come from their owner kind's cache (`owners`).
    shared_links: tuple[str, ...]
    pods: WatchCache[NamespacedPod]
    namespaces: WatchCache[NamespaceMeta]  # never required: failing or not filled: None
    kueue: _KueueCaches | None = None  # None: Kueue is not read (actuators.kueue.enabled)
    scaled_objects: WatchCache[Obj] | None = None
    queue_objects: dict[str, WatchCache[Obj]] = field(default_factory=dict)  # started on use
    started: list[WatchCache[Any]] = field(default_factory=list)

    def cycle_caches(self) -> list[WatchCache[Any]]:
        if self.kueue is None:
            return [self.pods]
        return [self.kueue.workloads, self.pods, self.kueue.cluster_queues]


def parsed_workloads(found: Mapping[Key, Obj]) -> tuple[tuple[Obj, WorkloadInfo | str], ...]:
    """Each cached Workload parsed (or why not), once per change of the cache, not per cycle."""
    return tuple((obj, objects.parsed_or_why(obj)) for obj in found.values())


class CachedKueueCluster(KueueCluster):
    def __init__(
        self,
        *,
        client: KubeClient,
        settings: ClusterSettings,
        cache: WatchCacheSettings,
        logger: logging.Logger | None = None,
        read_kueue: bool = True,
    ) -> None:
        super().__init__(client=client, settings=settings, logger=logger, read_kueue=read_kueue)
        self._cache_settings = cache
        self._caches: _Caches | None = None
        self._stopped = False
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the cycle's caches now (Kueue discovery included); raises ClusterError."""
        self._cycle_caches()

    def wait_synced(self, timeout: timedelta) -> bool:
        """True once every started cache holds its first list (`timeout` for each)."""
        caches = self._cycle_caches()
        return all(cache.wait_synced(timeout.total_seconds()) for cache in caches.started)

    def stop(self, timeout: timedelta | None = None) -> bool:
        """Stop every cache at once, then join them; True when all threads ended."""
        with self._lock:
            self._stopped = True  # stale from now on: never read again
            started = list(self._caches.started) if self._caches else []
        return stop_all(started, timeout)

    def list_workloads(self) -> list[WorkloadInfo]:
        caches = self._cycle_caches()
        self._require_fresh(caches.cycle_caches())
        if caches.kueue is None:
            return []
        read = caches.kueue.workloads.view(parsed_workloads)
        parsed = [(obj, info) for obj, said in read if (info := self._parse(obj, said)) is not None]
        wait = self._cache_settings.sync_timeout
        owners = cached_owners(caches.owners, wait)
        context = self._context()
        shared = {kind: caches.owners[kind] for kind in caches.shared_links}
        links = cached_links(caches.links, wait, owners=shared)
        tree = PodTree(by_namespace(caches.pods.items()), links)
        resolved = [(obj, *self._finder.resolve(info, tree)) for obj, info in parsed]
        joined = (
            self._join(obj, i, owners=owners, tree=tree, context=context, why=why)
            for obj, i, why in resolved
        )
        return [info for info in joined if info is not None]

    def list_gpu_pods(self) -> list[PodRecord]:
        pods = self._cycle_caches().pods
        self._require_fresh([pods])
        return [
            PodRecord(namespace, pod)
            for namespace, pod in pods.items()
            if pod is not None and pod.gpus > 0 and pod.phase == "Running"
        ]

    def list_scaled_objects(self) -> list[Obj]:
        """KEDA ScaledObjects; none while KEDA's CRD is not installed."""
        scaled = self._scaled_objects_cache()
        self._require_fresh([scaled])
        return list(scaled.items())

    def kueue_objects(self, plural: str) -> tuple[Obj, ...]:
        """From the caches: Workloads and ClusterQueues follow every cycle, the other queue
        kinds (PendingWork's) start on first use; a kind not served is empty."""
        caches = self._cycle_caches()
        if caches.kueue is None:
            return ()
        followed = {
            "workloads": caches.kueue.workloads,
            "clusterqueues": caches.kueue.cluster_queues,
            "localqueues": caches.kueue.local_queues,
        }
        if plural in followed:
            cache = followed[plural]
        else:
            cache = self._queue_objects_cache(caches, plural)
        self._require_fresh([cache])
        return cache.items()

    def namespace_meta(self) -> dict[str, NamespaceMeta] | None:
        """None while the namespaces cannot be read (forbidden, failing, not listed yet)."""
        namespaces = self._cycle_caches().namespaces
        if not_following(namespaces, self._cache_settings.sync_timeout) is not None:
            return None
        return {name: meta for (_, name), meta in namespaces.snapshot().items()}

    def scale_ups(self) -> dict[tuple[str, str], datetime] | None:
        """From the Events cache; None while it is failing or not filled."""
        kueue = self._cycle_caches().kueue
        if kueue is None:
            return None
        if not_following(kueue.scale_ups, self._cache_settings.sync_timeout) is not None:
            return None
        return newest_scale_ups(kueue.scale_ups.items())

    def local_queues(self) -> dict[tuple[str, str], str] | None:
        """From the LocalQueues cache; None while it is failing or not filled."""
        kueue = self._cycle_caches().kueue
        if kueue is None:
            return None
        if not_following(kueue.local_queues, self._cache_settings.sync_timeout) is not None:
            return None
        return targets_by_local_queue(kueue.local_queues.items())

    def namespace_now(self, name: str) -> NamespaceMeta | None:
        """From the namespaces cache, as the cycle's: no request."""
        found = self.namespace_meta()
        return None if found is None else found.get(name, UNLISTED)

    def _fresh_context(self, info: WorkloadInfo, *, pods: list[PodInfo]) -> WorkloadContext:
        """From the caches, like the cycle's: the fresh read adds no request for them."""
        return self._context()

    def _queue_objects_cache(self, caches: _Caches, plural: str) -> WatchCache[Obj]:
        with self._lock:
            if plural not in caches.queue_objects:
                version = self.workload_resource().version
                cache = self._cache(
                    kueue_resource(version, plural), without_managed_fields, missing_is_empty=True
                )
                caches.queue_objects[plural] = cache
                self._start(caches, [cache])
            return caches.queue_objects[plural]

    def _cycle_caches(self) -> _Caches:
        with self._lock:
            if self._stopped:
                raise ClusterUnavailable("the watch caches are stopped")
            if self._caches is None:
                owner_kinds = self._enabled_owner_kinds()
                own, shared = split_link_kinds(owner_kinds, self._intermediate_kinds())
                caches = _Caches(
                    owners={
                        kind: self._cache(OWNER_RESOURCES[kind], owner_metadata)
                        for kind in owner_kinds
                    },
                    links={
                        kind: self._cache(
                            intermediate_resource(INTERMEDIATES[kind]),
                            link_of,
                            missing_is_empty=True,
                        )
                        for kind in own
                    },
                    shared_links=tuple(shared),
                    pods=self._cache(PODS, self._kept_pod),
                    namespaces=self._cache(NAMESPACES, kept_namespace),
                )
                if self.reads_kueue:
                    self._add_kueue_caches(caches)
                optional: list[WatchCache[Any]] = [caches.namespaces, *caches.owners.values()]
                optional += caches.links.values()
                if caches.kueue is not None:
                    kueue = caches.kueue
                    optional += [kueue.local_queues, kueue.scale_ups, kueue.configuration]
                self._start(caches, [*caches.cycle_caches(), *optional])
                self._caches = caches
            return self._caches

    def _add_kueue_caches(self, caches: _Caches) -> None:
        workloads = self.workload_resource()  # discovery: may raise, retried next cycle
        queues = kueue_resource(workloads.version, "clusterqueues")
        caches.kueue = _KueueCaches(
            workloads=self._cache(workloads, without_managed_fields),
            cluster_queues=self._cache(queues, without_managed_fields, missing_is_empty=True),
            local_queues=self._cache(
                kueue_resource(workloads.version, "localqueues"),
                without_managed_fields,
                missing_is_empty=True,
            ),
            scale_ups=self._cache(EVENTS, scale_up_of, field_selector=SCALE_UP_SELECTOR),
            configuration=self._configuration_cache(),
        )

    def _configuration_cache(self) -> WatchCache[KueueConfiguration]:
        settings = self._settings.kueue_configuration
        source = source_of(settings)
        return self._cache(
            CONFIGMAPS,
            lambda obj: configuration_of(obj, source=source),
            field_selector=name_selector(settings),
            namespace=settings.namespace,
        )

    def kueue_configuration(self) -> KueueConfiguration:
        """From its watch cache: no request; unreadable while failing, empty or not filled."""
        source = source_of(self._settings.kueue_configuration)
        kueue = self._cycle_caches().kueue
        if kueue is None:
            return self._kept(unreadable(source, "Kueue is not read"))
        wait = self._cache_settings.sync_timeout
        return self._kept(cached_configuration(kueue.configuration, source=source, wait=wait))

    def _cycle_configuration(self) -> KueueConfiguration:
        return self.kueue_configuration()  # from the cache: nothing to share

    def _scaled_objects_cache(self) -> WatchCache[Obj]:
        caches = self._cycle_caches()
        with self._lock:
            if caches.scaled_objects is None:
                caches.scaled_objects = self._cache(
                    SCALED_OBJECTS, without_managed_fields, missing_is_empty=True
                )
                self._start(caches, [caches.scaled_objects])
            return caches.scaled_objects

    def _start(self, caches: _Caches, new: list[WatchCache[Any]]) -> None:
        for cache in new:
            cache.start()
            caches.started.append(cache)

    def _cache(
        self,
        resource: ApiResource,
        convert: Callable[[Obj], T | None],
        *,
        missing_is_empty: bool = False,
        field_selector: str | None = None,
        namespace: str | None = None,
    ) -> WatchCache[T]:
        return WatchCache(
            client=self._client,
            resource=resource,
            settings=self._cache_settings,
            convert=convert,
            logger=self._log.getChild("cache"),
            missing_is_empty=missing_is_empty,
            field_selector=field_selector,
            namespace=namespace,
        )

    def _require_fresh(self, caches: list[WatchCache[Any]]) -> None:
        """Wait (up to syncTimeout) for a first list; raise unless each cache is following."""
        require_fresh(caches, self._cache_settings.sync_timeout)

    def _enabled_owner_kinds(self) -> list[str]:
        """Owners are read for the Workloads they own: none while Kueue is not read."""
        if not self.reads_kueue:
            return []
        kinds = self._settings.owner_kinds
        return sorted(k for k in OWNER_RESOURCES if k in kinds and kinds[k].enabled)

    def _intermediate_kinds(self) -> list[str]:
        """Those the enabled kinds' pods are found through (and queued pods' owners above)."""
        kinds = self._enabled_owner_kinds()
        return self._finder.intermediates(kinds, queued_pods=bool(kinds))

    def _kept_pod(self, obj: Obj) -> NamespacedPod | None:
        """The parsed pod when the cycle may need it (as the uncached reader keeps it); None
        otherwise: the cache holds only those, parsed."""
        try:
            namespace = str(obj["metadata"]["namespace"])
            pod = objects.parse_pod(obj, self._settings.gpu_resources)
        except MALFORMED as exc:
            self._log.warning("skipping malformed pod %s: %s", log_name(obj), exc)
            return namespace_of(obj), None
        return (namespace, pod) if self._kept_for_cycle(pod) else None
