"""What a Workload is read with besides itself and its owner: the cohort of its ClusterQueue
and the labels of its namespace, for rules that select on them (issue 14), the namespace's
annotations, which name its notification targets (issue 15), and each LocalQueue's
ClusterQueue, the ClusterQueue of a Workload not admitted. Each comes from one list or watch
a cycle: no request per Workload."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime

from autoscaler.adapters.kubernetes import objects
from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kubernetes.pod_starts import PodsRead
from autoscaler.adapters.kubernetes.resources import NAMESPACES, Obj, kueue_resource, log_name
from autoscaler.adapters.kueue.queue_objects import cohorts_by_queue, targets_by_local_queue
from autoscaler.core.errors import ClusterError, Forbidden, NotFound
from autoscaler.domain.annotations import NOTIFY
from autoscaler.domain.kueue_config import KueueConfiguration
from autoscaler.domain.models import OwnerRef, PodInfo, WorkloadInfo


@dataclass(frozen=True)
class NamespaceMeta:
    """What a Workload is read with of its namespace."""

    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)


Namespaces = Mapping[str, NamespaceMeta]
NAMESPACE_ANNOTATIONS = (NOTIFY,)  # what `domain.routing` reads of a namespace
UNLISTED = NamespaceMeta()  # a namespace missing from a list that was read: none of either


def namespace_meta(obj: Obj) -> NamespaceMeta:
    """Every label (rules select on any), but only the annotations the domain reads: the
    watch cache keeps this for every namespace, and annotations can be large (kubectl's
    last-applied-configuration)."""
    annotations = objects.annotations_of(obj)
    kept = {key: annotations[key] for key in NAMESPACE_ANNOTATIONS if key in annotations}
    return NamespaceMeta(labels=objects.labels_of(obj), annotations=kept)


def kept_namespace(obj: Obj) -> NamespaceMeta | None:
    """What the namespaces' watch cache keeps; None for a malformed namespace."""
    try:
        return namespace_meta(obj)
    except objects.MALFORMED:
        return None


@dataclass(frozen=True)
class WorkloadContext:
    """The cohort of each ClusterQueue and the labels and annotations of each namespace
    (None: namespaces unreadable, so every Workload's namespace_labels and
    namespace_annotations are None, never an empty mapping)."""

    cohorts: Mapping[str, str | None]
    namespaces: Namespaces | None
    # The newest TriggeredScaleUp Event per (namespace, pod); None: the Events are unreadable.
    scale_ups: Mapping[tuple[str, str], datetime] | None = None
    gpu_resources: Sequence[str] = ()
    kueue: KueueConfiguration | None = None  # Kueue's Configuration, read once a cycle
    # (namespace, LocalQueue) -> its ClusterQueue; None: LocalQueues unreadable, so a Workload
    # not admitted has no ClusterQueue known (rules matching ClusterQueues or cohorts miss it).
    local_queues: Mapping[tuple[str, str], str] | None = None

    def parse(
        self,
        obj: Obj,
        *,
        owner: Obj | None = None,
        pods: Iterable[PodInfo] = (),
        pods_read: bool = False,
        chain: PodChain | None = None,
        owner_ref: OwnerRef | None = None,
    ) -> WorkloadInfo:
        """`pods_read`: `pods` are the owner's pods, as its kind's row finds them (not
        merely none read); `chain` says how, and why some may have been missed; `owner_ref`
        the owner found above a queued pod (else the Workload's own)."""
        name = str(obj["metadata"]["namespace"])
        meta = None if self.namespaces is None else self.namespaces.get(name, UNLISTED)
        found_by, unsure = (chain.found_by, chain.unsure) if chain is not None else ("", None)
        read = PodsRead(pods_read, self.gpu_resources, self.scale_ups, self.kueue, found_by, unsure)
        return objects.parse_workload(
            obj,
            owner=owner,
            owner_ref=owner_ref,
            pods=pods,
            namespace_labels=None if meta is None else meta.labels,
            namespace_annotations=None if meta is None else meta.annotations,
            cohorts=self.cohorts,
            pods_read=read,
            local_queues=self.local_queues,
        )


@dataclass
class FoundPods:
    """The pods read for owners, by namespace, and the namespaces where a pod was skipped as
    malformed ("" when its namespace could not be read either)."""

    by_namespace: dict[str, list[PodInfo]] = field(default_factory=dict)
    malformed_in: set[str] = field(default_factory=set)

    def add(self, namespace: str, pod: PodInfo) -> None:
        self.by_namespace.setdefault(namespace, []).append(pod)

    def skipped_in(self, namespace: str) -> bool:
        return namespace in self.malformed_in or "" in self.malformed_in


# A pod kept for the cycle; None for one skipped as malformed, kept so that "no GPU pod
# found" in its namespace is not taken for "none created".
NamespacedPod = tuple[str, PodInfo | None]


def parse_pods(
    found: Iterable[Obj],
    *,
    gpu_resources: Sequence[str],
    kept: Callable[[PodInfo], bool],
    logger: logging.Logger,
) -> FoundPods:
    """The listed pods the cycle keeps (`kept`), parsed; a malformed one noted, skipped."""
    parsed = FoundPods()
    for obj in found:
        try:
            pod = objects.parse_pod(obj, gpu_resources)
            namespace = str(obj["metadata"]["namespace"])
        except objects.MALFORMED as exc:
            logger.warning("skipping malformed pod %s: %s", log_name(obj), exc)
            parsed.malformed_in.add(namespace_of(obj))
            continue
        if kept(pod):
            parsed.add(namespace, pod)
    return parsed


def by_namespace(pods: tuple[NamespacedPod, ...]) -> FoundPods:
    grouped = FoundPods()
    for namespace, pod in pods:
        if pod is None:
            grouped.malformed_in.add(namespace)
        else:
            grouped.add(namespace, pod)
    return grouped


def namespace_of(obj: object) -> str:
    """An object's namespace; "" when it cannot be read (a malformed object)."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    return str(meta.get("namespace") or "") if isinstance(meta, Mapping) else ""


@dataclass(frozen=True)
class PodChain:
    """How a Workload's pods were found, and why that may have missed some (None: the chain
    was followed: its owner object found, no pod skipped as malformed)."""

    found_by: str
    unsure: str | None = None


def pod_chain(
    owner: OwnerRef, *, selector: str, owner_found: bool, skipped: bool, namespace: str
) -> PodChain:
    """A pod selector that matches nothing, an owner deleted, a pod we could not read: each
    leaves a Workload with no pod found, which is not the same as none created."""
    found_by = f"pod selector {selector}"
    if not owner_found:
        return PodChain(found_by, f"its {owner.kind} {owner.name} was not found")
    if skipped:
        return PodChain(found_by, f"a pod in {namespace} was skipped as malformed (see the log)")
    return PodChain(found_by)


def listed_context(
    cluster_queues: Iterable[Obj],
    namespaces: Iterable[Obj] | None,
    local_queues: Iterable[Obj] | None = None,
) -> WorkloadContext:
    found = None
    if namespaces is not None:
        found = {str(ns["metadata"]["name"]): namespace_meta(ns) for ns in namespaces}
    targets = None if local_queues is None else targets_by_local_queue(local_queues)
    return WorkloadContext(cohorts_by_queue(cluster_queues), found, local_queues=targets)


def list_local_queues(
    client: KubeClient, logger: logging.Logger, *, version: str
) -> tuple[Obj, ...] | None:
    """Every LocalQueue, one list call; None when they cannot be read (the ClusterQueue of a
    Workload not admitted is then unknown: no rule by ClusterQueue matches it)."""
    try:
        return list_kueue(client, version=version, plural="localqueues")
    except ClusterError as exc:
        logger.warning("LocalQueues unreadable: %s", exc)
        return None


def list_kueue(client: KubeClient, *, version: str, plural: str) -> tuple[Obj, ...]:
    """Every kueue.x-k8s.io object of `plural` at `version`; none when it is not served
    (Cohorts, before Kueue serves them at that version)."""
    try:
        return client.list_objects(kueue_resource(version, plural)).items
    except NotFound:
        return ()


def list_namespaces(client: KubeClient, logger: logging.Logger) -> tuple[Obj, ...] | None:
    """Every namespace; None when they cannot be read (forbidden)."""
    try:
        return client.list_objects(NAMESPACES).items
    except (Forbidden, NotFound) as exc:
        logger.warning("namespace labels unreadable: %s", exc)
        return None


def fresh_context(
    client: KubeClient,
    *,
    version: str,
    namespace: str,
    cluster_queue: str | None,
    local_queue: str = "",
) -> WorkloadContext:
    """One Workload's namespace labels and ClusterQueue cohort, read now (one get each); not
    admitted (`cluster_queue` None), its ClusterQueue through its LocalQueue, from one list of
    its namespace's LocalQueues (what RBAC grants on them is list and watch)."""
    found: Obj | None = None
    with suppress(Forbidden, NotFound):
        found = client.get(NAMESPACES, namespace)
    local: tuple[Obj, ...] | None = None
    if cluster_queue is None and local_queue:
        with suppress(ClusterError):
            resource = kueue_resource(version, "localqueues")
            local = client.list_objects(resource, namespace=namespace).items
        cluster_queue = targets_by_local_queue(local or ()).get((namespace, local_queue))
    queues: tuple[Obj, ...] = ()
    if cluster_queue:
        with suppress(NotFound):
            queues = (client.get(kueue_resource(version, "clusterqueues"), cluster_queue),)
    return listed_context(queues, None if found is None else [found], local)
