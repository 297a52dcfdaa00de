"""The Kubernetes resources the service calls, and the calls it may make on them.

`ALLOWED_CALLS` is what the chart's RBAC grants (a test compares them); the client refuses
any other call before sending it, so the two cannot drift apart silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from autoscaler.domain.policy.owners import INTERMEDIATES, KNOWN_OWNERS, OWNER_KINDS, OwnerKind

Obj = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"
# Read only to tell where Kueue's admission can be modelled (domain/queues/facts.py, `unmodelled`).
_QUEUE_READS = ("localqueues", "resourceflavors", "cohorts")


def log_name(obj: object) -> str:
    """How a log line names an object that may be malformed: `namespace/name`, or the name
    alone when cluster-scoped."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    if not isinstance(meta, Mapping):
        return "<no metadata>"
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name', '?')}" if namespace else str(meta.get("name", "?"))


@dataclass(frozen=True)
class ApiResource:
    group: str  # "" for the core group
    version: str
    plural: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, *, namespace: str | None = None, name: str | None = None) -> str:
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace is not None:
            root += f"/namespaces/{quote(namespace, safe='')}"
        root += f"/{self.plural}"
        return root + (f"/{quote(name, safe='')}" if name is not None else "")

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


PODS = ApiResource("", "v1", "pods")
NAMESPACES = ApiResource("", "v1", "namespaces", namespaced=False)
EVENTS = ApiResource("", "v1", "events")
CONFIGMAPS = ApiResource("", "v1", "configmaps")
LEASES = ApiResource("coordination.k8s.io", "v1", "leases")
SCALED_OBJECTS = ApiResource("keda.sh", "v1alpha1", "scaledobjects")
TOKEN_REVIEWS = ApiResource("authentication.k8s.io", "v1", "tokenreviews", namespaced=False)
ACCESS_REVIEWS = ApiResource("authorization.k8s.io", "v1", "subjectaccessreviews", namespaced=False)
KAI_QUEUES = ApiResource("scheduling.run.ai", "v2", "queues", namespaced=False)
KAI_PODGROUPS = ApiResource("scheduling.run.ai", "v2alpha2", "podgroups")


def owner_resource_of(kind: OwnerKind) -> ApiResource:
    """Where an owner kind of the domain's table lives: its newest served version."""
    return ApiResource(kind.group, kind.versions[0], kind.plural)


RAYCLUSTERS = owner_resource_of(KNOWN_OWNERS["RayCluster"])  # the KubeRay adapter's rows
# KAI Scheduler's queues and PodGroups: who waits under KAI (adapters/kai/queues.py), read
# only with the KAI actuator enabled (the chart grants them only then).
KAI_READS: frozenset[tuple[str, str, str]] = frozenset(
    (resource.group, resource.plural, "list") for resource in (KAI_QUEUES, KAI_PODGROUPS)
)

# The node autoscaler's TriggeredScaleUp Events on pods (by field selector), which say a pod
# is starting, not holding quota without work; read with Kueue's Workloads only (the chart
# grants them with Kueue's actuator).
SCALE_UP_READS: frozenset[tuple[str, str, str]] = frozenset(
    ("", "events", verb) for verb in ("list", "watch")
)

# Kueue's Configuration ConfigMap (cluster.kueueConfiguration), listed and watched by its name
# (a metadata.name field selector, so RBAC can grant it by resourceNames) in Kueue's
# namespace; read with Kueue's Workloads only.
KUEUE_CONFIG_READS: frozenset[tuple[str, str, str]] = frozenset(
    ("", "configmaps", verb) for verb in ("list", "watch")
)

ALLOWED_CALLS: frozenset[tuple[str, str, str]] = frozenset(
    {
        *(("kueue.x-k8s.io", "workloads", v) for v in ("get", "list", "watch", "patch")),
        # every owner kind of the table: read, and annotated (its patch only when enabled;
        # never a pod's: its Workload is annotated instead)
        *((k.group, k.plural, v) for k in OWNER_KINDS for v in ("get", "list", "watch")),
        *((k.group, k.plural, "patch") for k in OWNER_KINDS if k.annotated),
        # the kinds between an owner and its pods, read for their ownerReferences only
        *((k.group, k.plural, v) for k in INTERMEDIATES.values() for v in ("list", "watch")),
        ("ray.io", "rayclusters", "delete"),  # rule action `delete` only (opt-in, ISSUE 15)
        *(("", "pods", v) for v in ("list", "watch")),
        *(("", "namespaces", v) for v in ("get", "list", "watch")),
        *(("kueue.x-k8s.io", "clusterqueues", v) for v in ("get", "list", "watch")),
        *(("kueue.x-k8s.io", plural, v) for plural in _QUEUE_READS for v in ("list", "watch")),
        ("visibility.kueue.x-k8s.io", "clusterqueues/pendingworkloads", "get"),
        ("", "events", "create"),
        *SCALE_UP_READS,
        *KUEUE_CONFIG_READS,
        *(("", "configmaps", v) for v in ("get", "create", "update")),
        *(("keda.sh", "scaledobjects", v) for v in ("list", "watch")),
        *(("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")),
        ("authentication.k8s.io", "tokenreviews", "create"),
        ("authorization.k8s.io", "subjectaccessreviews", "create"),
        *KAI_READS,
    }
)
# Calls only ever made on the one object the settings name, so RBAC limits them with
# resourceNames: the runtime-state ConfigMap (cluster.runtimeStateConfigMap), the Lease
# (leaderElection.leaseName) and Kueue's Configuration (cluster.kueueConfiguration.name). A
# create cannot be limited by name and is not among them.
NAMED_CALLS: dict[tuple[str, str, str], str] = {
    ("", "configmaps", "get"): "cluster.runtimeStateConfigMap",
    ("", "configmaps", "update"): "cluster.runtimeStateConfigMap",
    ("coordination.k8s.io", "leases", "get"): "leaderElection.leaseName",
    ("coordination.k8s.io", "leases", "update"): "leaderElection.leaseName",
    ("", "configmaps", "list"): "cluster.kueueConfiguration.name",
    ("", "configmaps", "watch"): "cluster.kueueConfiguration.name",
}


@dataclass(frozen=True)
class ObjectList:
    """A list call's items and the resourceVersion a watch continues from."""

    items: tuple[Obj, ...]
    resource_version: str


def kueue_workloads(version: str) -> ApiResource:
    return ApiResource("kueue.x-k8s.io", version, "workloads")


def kueue_resource(version: str, plural: str) -> ApiResource:
    """A Kueue resource at `version`; listed across namespaces, scope does not matter."""
    return ApiResource("kueue.x-k8s.io", version, plural)


VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"


@dataclass(frozen=True)
class Subresource(ApiResource):
    """A subresource such as "clusterqueues/pendingworkloads": RBAC names it so, and its path
    puts the object's name between the two."""

    def path(self, *, namespace: str | None = None, name: str | None = None) -> str:
        plural, _, sub = self.plural.partition("/")
        parent = ApiResource(self.group, self.version, plural, self.namespaced)
        return f"{parent.path(namespace=namespace, name=name)}/{sub}"


def pending_workloads(version: str) -> ApiResource:
    """Kueue's visibility API: GET /apis/visibility.kueue.x-k8s.io/<version>/clusterqueues/
    <name>/pendingworkloads (a PendingWorkloadsSummary, by position in the queue)."""
    return Subresource(VISIBILITY_GROUP, version, "clusterqueues/pendingworkloads", False)
