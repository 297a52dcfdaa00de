"""The `ClusterReader` port over Kueue: Workloads joined with their owners and the owners' pods.

A cycle costs a constant number of calls whatever the number of Workloads: one Workload list,
at most one pod list (by the one selector kind's label key, else every pod; `ownership.py`
finds each Workload's pods in it), one list per intermediate kind (Jobs, JobSets,
ReplicaSets, StatefulSets) pods are found through, one owner list per owner kind present
whose resource was not listed whole already (`owner_lists.py`: every resource is listed at
most once), one each of ClusterQueues, LocalQueues and namespaces, one of TriggeredScaleUp
Events and one of Kueue's Configuration ConfigMap (`configuration.py`; the via-kueue gate
shares it). The fresh read before acting reuses the cycle's Events and Configuration, and
lists its namespace's Events again only when one of its pods is unschedulable.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import datetime

from autoscaler.adapters.kubernetes import objects
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
    kueue_workloads,
    log_name,
)
from autoscaler.adapters.kueue.configuration import list_configuration
from autoscaler.adapters.kueue.context import (
    FoundPods,
    NamespaceMeta,
    Namespaces,
    PodChain,
    WorkloadContext,
    fresh_context,
    list_kueue,
    list_local_queues,
    list_namespaces,
    listed_context,
    parse_pods,
)
from autoscaler.adapters.kueue.context import namespace_meta as meta_of_namespace
from autoscaler.adapters.kueue.links import Links, list_links
from autoscaler.adapters.kueue.owner_lists import Owners, get_owner, list_owners
from autoscaler.adapters.kueue.ownership import PodFinder, PodTree
from autoscaler.adapters.kueue.queue_objects import cohorts_by_queue, targets_by_local_queue
from autoscaler.adapters.kueue.resources import (
    KUEUE_GROUP,
    KUEUE_VERSIONS,
    owner_resource,
)
from autoscaler.core.errors import (
    ClusterError,
    ClusterUnavailable,
    Forbidden,
    NotFound,
)
from autoscaler.domain.kueue_config import KueueConfiguration
from autoscaler.domain.models import (
    OwnerRef,
    Pauses,
    PodInfo,
    PodRecord,
    WorkloadInfo,
    WorkloadRef,
)
from autoscaler.settings.tree import ClusterSettings

ScaleUps = dict[tuple[str, str], datetime]  # the newest TriggeredScaleUp per (namespace, pod)


class KueueCluster:
    def __init__(
        self,
        *,
        client: KubeClient,
        settings: ClusterSettings,
        logger: logging.Logger | None = None,
        read_kueue: bool = True,
    ) -> None:
        """`read_kueue` False (`actuators.kueue.enabled: false`, a cluster without Kueue): no
        Workload or other kueue.x-k8s.io object is read; pods, namespaces, ScaledObjects and
        the pauses still are."""
        self._client = client
        self.reads_kueue = read_kueue
        self._settings = settings
        self._kueue_config = settings.kueue_configuration
        self._log = logger or logging.getLogger(__name__)
        self._finder = PodFinder(settings)
        self._gpu_resources = tuple(settings.gpu_resources)
        self._workloads: ApiResource | None = None
        self.cycle_kueue_config: KueueConfiguration | None = None  # latest cycle's; queues read it
        # The cycle's reading, until `kueue_configuration` hands it on (the via-kueue gate
        # reads it right after the Workloads): one list a cycle, not two.
        self._unshared_config: KueueConfiguration | None = None
        self._scale_ups: ScaleUps | None = None  # as the latest cycle read them

    def workload_resource(self) -> ApiResource:
        """Workloads at the newest Kueue API version the cluster serves (asked once)."""
        if not self.reads_kueue:
            raise ClusterUnavailable("Kueue is not read here (actuators.kueue.enabled: false)")
        if self._workloads is None:
            served = self._client.group_versions(KUEUE_GROUP)
            version = next((v for v in KUEUE_VERSIONS if v in served), None)
            if version is None:
                raise ClusterUnavailable(
                    f"Kueue is not installed: {KUEUE_GROUP} serves {served or 'nothing'}, "
                    f"expected one of {', '.join(KUEUE_VERSIONS)}"
                )
            self._workloads = kueue_workloads(version)
        return self._workloads

    def list_workloads(self) -> list[WorkloadInfo]:
        if not self.reads_kueue:
            return []
        raw = self._client.list_objects(self.workload_resource()).items
        context = self._context()
        parsed = [(obj, info) for obj in raw if (info := self._parse(obj)) is not None]
        pod_kinds = {i.owner.kind for _, i in parsed if i.owner and self._has_pods(i)}
        queued = any(self._finder.queued_pod(i) for _, i in parsed)
        pods, every_pod = self._list_pods(pod_kinds, queued=queued)
        links = self._list_links(pod_kinds, queued)
        tree = PodTree(pods, links)
        resolved = [(obj, *self._finder.resolve(info, tree)) for obj, info in parsed]
        owner_kinds = {i.owner.kind for _, i, _ in resolved if i.owner and self._readable(i.owner)}
        owners = list_owners(self._client, owner_kinds, links=links, pods=every_pod)
        joined = (
            self._join(obj, i, owners=owners, tree=tree, context=context, why=why)
            for obj, i, why in resolved
        )
        return [info for info in joined if info is not None]

    def kueue_objects(self, plural: str) -> tuple[Obj, ...]:
        """Every kueue.x-k8s.io object of `plural`; none when that kind is not served."""
        if not self.reads_kueue:
            return ()
        return list_kueue(self._client, version=self.workload_resource().version, plural=plural)

    def namespace_meta(self) -> Namespaces | None:
        """Each namespace's labels and annotations; None when they cannot be read."""
        return listed_context((), list_namespaces(self._client, self._log)).namespaces

    def list_gpu_pods(self) -> list[PodRecord]:
        """Running GPU pods in every namespace, in one list call."""
        running = self._client.list_objects(PODS, field_selector="status.phase=Running")
        pods = self._parse_pods(running.items)
        return [
            PodRecord(namespace, pod)
            for namespace, found in pods.by_namespace.items()
            for pod in found
            if pod.gpus > 0
        ]

    def list_scaled_objects(self) -> list[Obj]:
        """KEDA ScaledObjects in every namespace; none when KEDA's CRD is not installed."""
        try:
            return list(self._client.list_objects(SCALED_OBJECTS).items)
        except NotFound:
            return []

    def get_workload(self, ref: WorkloadRef) -> WorkloadInfo | None:
        if not self.reads_kueue:
            return None
        try:
            obj = self._client.get(self.workload_resource(), ref.name, namespace=ref.namespace)
        except NotFound:
            return None
        info = self._parse(obj)
        if info is None:
            raise ClusterError(f"workload {ref} is malformed; see the log")
        # A queued pod's Workload: its pods first, for the owner they lead up to.
        tree = self._fresh_tree(info) if self._finder.queued_pod(info) else None
        info, why = self._finder.resolve(info, tree) if tree is not None else (info, None)
        owner = get_owner(self._client, info)
        return self._joined(obj, info, owner=owner, tree=tree or self._fresh_tree(info), why=why)

    def _fresh_tree(self, info: WorkloadInfo) -> PodTree:
        """One Workload's pods and intermediates, listed now in its namespace."""
        queued, finds = self._finder.queued_pod(info), self._has_pods(info)
        if not queued and not finds:
            return PodTree(FoundPods(), Links())
        selector = None if queued else self._finder.selector_for(info)
        namespace = info.ref.namespace
        found = self._client.list_objects(PODS, namespace=namespace, label_selector=selector)
        kinds = {info.owner.kind} if finds and info.owner else set()
        links = self._list_links(kinds, queued, namespace=namespace)
        return PodTree(self._parse_pods(found.items), links)

    def workloads_in(self, namespace: str) -> tuple[Obj, ...]:
        """The Workloads of one namespace, listed now (never from a cache)."""
        if not self.reads_kueue:
            return ()
        return self._client.list_objects(self.workload_resource(), namespace=namespace).items

    def namespace_now(self, name: str) -> NamespaceMeta | None:
        """One namespace's labels and annotations, read now; None when unreadable."""
        try:
            return meta_of_namespace(self._client.get(NAMESPACES, name))
        except (Forbidden, NotFound):
            return None

    def _fresh_context(self, info: WorkloadInfo, *, pods: list[PodInfo]) -> WorkloadContext:
        context = fresh_context(
            self._client,
            version=self.workload_resource().version,
            namespace=info.ref.namespace,
            cluster_queue=info.cluster_queue,
            local_queue=info.queue,
        )
        # A scale-up decides only for a pod the scheduler cannot place ("starting", not
        # "held"): Events are listed again for that case alone, else the cycle's are reused.
        unschedulable = any(pod.unschedulable is not None for pod in pods)
        scale_ups = (
            self._list_scale_ups(namespace=info.ref.namespace) if unschedulable else self._scale_ups
        )
        return replace(
            context,
            scale_ups=scale_ups,
            gpu_resources=self._gpu_resources,
            kueue=self.cycle_kueue_config,  # the cycle's reading: no request per Workload
        )

    def _context(self) -> WorkloadContext:
        """This cycle's cohort of every ClusterQueue, labels of every namespace, ClusterQueue
        of every LocalQueue and node scale-ups of every pod."""
        cohorts = cohorts_by_queue(self.kueue_objects("clusterqueues"))
        return WorkloadContext(
            cohorts,
            self.namespace_meta(),
            scale_ups=self.scale_ups(),
            gpu_resources=self._gpu_resources,
            kueue=self._cycle_configuration(),
            local_queues=self.local_queues(),
        )

    def local_queues(self) -> Mapping[tuple[str, str], str] | None:
        """(namespace, LocalQueue) -> its ClusterQueue, one list; None when unreadable."""
        version = self.workload_resource().version
        found = list_local_queues(self._client, self._log, version=version)
        return None if found is None else targets_by_local_queue(found)

    def kueue_configuration(self) -> KueueConfiguration:
        """Kueue's Configuration: the cycle's reading, once, when the cycle's Workloads were
        just read with it (for the via-kueue gate, next in the cycle), else read now (one list
        call); unreadable says why. The start-up log says what it was (`compose/`)."""
        shared, self._unshared_config = self._unshared_config, None
        if shared is not None:
            return shared
        return self._kept(list_configuration(self._client, self._kueue_config))

    def _cycle_configuration(self) -> KueueConfiguration:
        """Read now for the cycle's Workloads, and kept for the next `kueue_configuration`."""
        self._unshared_config = self._kept(list_configuration(self._client, self._kueue_config))
        return self._unshared_config

    def _kept(self, config: KueueConfiguration) -> KueueConfiguration:
        self.cycle_kueue_config = config
        return config

    def scale_ups(self) -> ScaleUps | None:
        """The newest TriggeredScaleUp Event per (namespace, pod), in one list call; None
        when Events cannot be read (a pod a scale-up may be for is then never "stuck")."""
        self._scale_ups = self._list_scale_ups(namespace=None)
        return self._scale_ups

    def _list_scale_ups(self, *, namespace: str | None) -> ScaleUps | None:
        try:
            found = self._client.list_objects(
                EVENTS, namespace=namespace, field_selector=SCALE_UP_SELECTOR
            ).items
        except (Forbidden, NotFound) as exc:
            self._log.warning("node scale-up Events unreadable: %s", exc)
            return None
        return newest_scale_ups(s for e in found if (s := scale_up_of(e)) is not None)

    def namespace_exists(self, name: str) -> bool:
        try:
            self._client.get(NAMESPACES, name)
        except NotFound:
            return False
        return True

    def read_pauses(self) -> Pauses:
        try:
            config_map = self._get_state()
        except NotFound:
            return Pauses()
        try:
            return objects.pauses_from_data(config_map.get("data") or {})
        except MALFORMED as exc:  # fail safe: a garbled kill switch still stops actions
            self._log.error(
                "runtime state %s unreadable, pausing everything: %s",
                self._settings.runtime_state_config_map,
                exc,
            )
            return Pauses(everything=True)

    def _parse(self, obj: Obj, parsed: WorkloadInfo | str | None = None) -> WorkloadInfo | None:
        """The Workload (`parsed` already, or now); a malformed one is logged and skipped."""
        found = objects.parsed_or_why(obj) if parsed is None else parsed
        if isinstance(found, str):
            self._log.warning("skipping malformed workload %s: %s", log_name(obj), found)
            return None
        return found

    def _readable(self, owner: OwnerRef) -> bool:
        return owner_resource(owner) is not None

    def _has_pods(self, info: WorkloadInfo) -> bool:
        return info.admitted and self._finder.finds(info)

    def _list_pods(
        self, kinds: set[str], *, queued: bool
    ) -> tuple[FoundPods, tuple[Obj, ...] | None]:
        """At most one pod list a cycle: by the one selector kind's label key, else all (and
        then the list as read, for the owner kind Pod)."""
        if not kinds and not queued:
            return FoundPods(), None
        selector = None if queued else self._finder.selected_only(kinds)
        found = self._client.list_objects(PODS, label_selector=selector).items
        return self._parse_pods(found), (found if selector is None else None)

    def _list_links(self, kinds: set[str], queued: bool, *, namespace: str | None = None) -> Links:
        needed = self._finder.intermediates(kinds, queued_pods=queued)
        return list_links(self._client, needed, namespace=namespace)

    def _parse_pods(self, found: Iterable[Obj]) -> FoundPods:
        resources, kept = self._settings.gpu_resources, self._kept_for_cycle
        return parse_pods(found, gpu_resources=resources, kept=kept, logger=self._log)

    def _kept_for_cycle(self, pod: PodInfo) -> bool:
        """Listed or watched alike (`PodFinder.needs`); with Kueue not read, GPU pods only."""
        return pod.gpus > 0 or (self.reads_kueue and self._finder.needs(pod))

    def _join(
        self,
        obj: Obj,
        info: WorkloadInfo,
        *,
        owners: Owners,
        tree: PodTree,
        context: WorkloadContext,
        why: str | None,
    ) -> WorkloadInfo | None:
        if info.owner is None:
            return context.parse(obj)
        owner_obj = owners.of(info)
        try:
            joined = self._joined(obj, info, owner=owner_obj, tree=tree, why=why, context=context)
        except MALFORMED as exc:
            self._log.warning("skipping workload %s with a malformed owner: %s", info.ref, exc)
            return None
        unknown = owners.unknown(info)
        return joined if unknown is None else replace(joined, hands_off=unknown)

    def _joined(
        self,
        obj: Obj,
        info: WorkloadInfo,
        *,
        owner: Obj | None,
        tree: PodTree,
        why: str | None,
        context: WorkloadContext | None = None,
    ) -> WorkloadInfo:
        """The Workload parsed with its owner and the owner's pods when they are read at all
        (and how: `why` a queued pod's chain broke); `context` the cycle's, else one read now
        for this Workload alone."""
        pods: list[PodInfo] = []
        chain: PodChain | None = None
        read = self._has_pods(info)
        if read:
            pods, chain = self._finder.pods_of(info, tree, owner_found=owner is not None)
        if chain is not None and why is not None and chain.unsure is None:
            chain = replace(chain, unsure=why)
        if context is None:
            context = self._fresh_context(info, pods=pods)
        return context.parse(
            obj, owner=owner, pods=pods, pods_read=read, chain=chain, owner_ref=info.owner
        )

    def _get_state(self) -> Obj:
        return self._client.get(
            CONFIGMAPS,
            self._settings.runtime_state_config_map,
            namespace=self._settings.service_namespace,
        )
