"""Which API resources the test server knows, and which group versions it serves right now.

A resource is stored once per (group, plural) whatever version it is read or written through, like
etcd keeps one copy of a CRD object. No field conversion happens between versions: a test that
simulates an older Kueue writes v1beta1-shaped objects itself.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

from autoscaler.domain.policy.owners import OWNER_KINDS
from tests.support.kubeflow_kinds import KUBEFLOW_GROUP, KUBEFLOW_KINDS

READ_WRITE_VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ResourceType:
    """One API resource, served under each of `versions` (a CRD may serve several)."""

    group: str  # "" for the core group
    versions: tuple[str, ...]
    kind: str
    plural: str
    namespaced: bool
    status_subresource: bool = False
    crd: bool = False  # validated against the upstream CRD schema
    review: bool = False  # create-only and never stored (TokenReview, SubjectAccessReview)

    @property
    def key(self) -> str:
        """kubectl's "plural.group" name, e.g. "workloads.kueue.x-k8s.io" or "pods"."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def verbs(self) -> tuple[str, ...]:
        return ("create",) if self.review else READ_WRITE_VERBS

    def group_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version


def _core(kind: str, plural: str, *, namespaced: bool = True, status: bool = False) -> ResourceType:
    return ResourceType("", ("v1",), kind, plural, namespaced, status_subresource=status)


def _crd(
    group: str,
    versions: tuple[str, ...],
    kind: str,
    *,
    namespaced: bool = True,
    status: bool = True,
) -> ResourceType:
    plural = kind.lower() + ("es" if kind.endswith("s") else "s")
    return ResourceType(
        group, versions, kind, plural, namespaced, status_subresource=status, crd=True
    )


KUEUE = "kueue.x-k8s.io"
KUEUE_VERSIONS = ("v1beta2", "v1beta1")  # preferred first
KAI = "scheduling.run.ai"

DEFAULT_RESOURCES: tuple[ResourceType, ...] = (
    _core("Pod", "pods", status=True),
    _core("Event", "events"),
    _core("ConfigMap", "configmaps"),
    _core("Namespace", "namespaces", namespaced=False, status=True),
    _crd(KUEUE, KUEUE_VERSIONS, "Workload"),
    _crd(KUEUE, KUEUE_VERSIONS, "ClusterQueue", namespaced=False),
    _crd(KUEUE, KUEUE_VERSIONS, "LocalQueue"),
    _crd(KUEUE, KUEUE_VERSIONS, "ResourceFlavor", namespaced=False, status=False),
    _crd(KUEUE, KUEUE_VERSIONS, "WorkloadPriorityClass", namespaced=False, status=False),
    # Cohort's CRD is not vendored (tests/crds): stored as written, never validated.
    ResourceType(KUEUE, KUEUE_VERSIONS, "Cohort", "cohorts", namespaced=False),
    _crd("ray.io", ("v1",), "RayCluster"),
    _crd("ray.io", ("v1",), "RayJob"),
    ResourceType("batch", ("v1",), "Job", "jobs", namespaced=True, status_subresource=True),
    # apps/v1: what Deployments, StatefulSets, LeaderWorkerSets and Notebooks make their pods
    # through (built-in kinds: stored as written, never validated).
    *(
        ResourceType("apps", ("v1",), kind, kind.lower() + "s", True, status_subresource=True)
        for kind in ("Deployment", "ReplicaSet", "StatefulSet")
    ),
    # The kinds Kueue queues besides Ray's, validated against their vendored CRDs.
    _crd("jobset.x-k8s.io", ("v1alpha2",), "JobSet"),
    # PyTorchJob and its siblings, MPIJob (tests/support/kubeflow_kinds.py).
    *(_crd(KUBEFLOW_GROUP, (row.version,), kind) for kind, row in KUBEFLOW_KINDS.items()),
    _crd("trainer.kubeflow.org", ("v1alpha1",), "TrainJob"),
    _crd(
        "trainer.kubeflow.org",
        ("v1alpha1",),
        "ClusterTrainingRuntime",
        namespaced=False,
        status=False,
    ),
    _crd("leaderworkerset.x-k8s.io", ("v1",), "LeaderWorkerSet"),
    _crd("workload.codeflare.dev", ("v1beta2",), "AppWrapper"),
    _crd("kubeflow.org", ("v1", "v1beta1", "v1alpha1"), "Notebook"),
    ResourceType("coordination.k8s.io", ("v1",), "Lease", "leases", namespaced=True),
    _crd("keda.sh", ("v1alpha1",), "ScaledObject"),
    _crd("keda.sh", ("v1alpha1",), "TriggerAuthentication"),
    # KAI Scheduler: Queue is cluster-scoped (scheduling.run.ai/v2), PodGroup namespaced (v2alpha2).
    _crd(KAI, ("v2",), "Queue", namespaced=False),
    _crd(KAI, ("v2alpha2",), "PodGroup"),
    ResourceType("events.k8s.io", ("v1",), "Event", "events", namespaced=True),
    ResourceType(
        "authentication.k8s.io",
        ("v1",),
        "TokenReview",
        "tokenreviews",
        namespaced=False,
        review=True,
    ),
    ResourceType(
        "authorization.k8s.io",
        ("v1",),
        "SubjectAccessReview",
        "subjectaccessreviews",
        namespaced=False,
        review=True,
    ),
)
# Every owner kind the service knows is installed: one its table adds (domain/policy/owners.py)
# is served at once, stored as written and never validated until its CRD is vendored above.
DEFAULT_RESOURCES += tuple(
    ResourceType(row.group, row.versions, row.kind, row.plural, namespaced=True)
    for row in OWNER_KINDS
    if not any((r.group, r.plural) == (row.group, row.plural) for r in DEFAULT_RESOURCES)
)


def split_api_version(api_version: str) -> tuple[str, str]:
    """("kueue.x-k8s.io", "v1beta2") from "kueue.x-k8s.io/v1beta2"; ("", "v1") from "v1"."""
    group, _, version = api_version.rpartition("/")
    return group, version


class Catalog:
    """The known resources plus a switchable set of served group versions (thread-safe)."""

    def __init__(
        self, resources: Iterable[ResourceType] = DEFAULT_RESOURCES, *, disabled: Iterable[str] = ()
    ) -> None:
        self.resources = tuple(resources)
        self._disabled = set(disabled)
        self._lock = threading.Lock()

    def disable(self, group_version: str) -> None:
        """Stop serving e.g. "keda.sh/v1alpha1" (404, absent from discovery), as if uninstalled."""
        with self._lock:
            self._disabled.add(group_version)

    def enable(self, group_version: str) -> None:
        with self._lock:
            self._disabled.discard(group_version)

    def is_served(self, resource: ResourceType, version: str) -> bool:
        with self._lock:
            return (
                version in resource.versions
                and resource.group_version(version) not in self._disabled
            )

    def served_versions(self, group: str) -> list[str]:
        """The group's served versions, preferred first."""
        versions: list[str] = []
        for resource in self.resources:
            for version in resource.versions:
                if (
                    resource.group == group
                    and version not in versions
                    and self.is_served(resource, version)
                ):
                    versions.append(version)
        return versions

    def served_groups(self) -> list[str]:
        groups = dict.fromkeys(r.group for r in self.resources if r.group)
        return [g for g in groups if self.served_versions(g)]

    def served_in(self, group: str, version: str) -> list[ResourceType]:
        return [r for r in self.resources if r.group == group and self.is_served(r, version)]

    def by_plural(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The served resource at /apis/<group>/<version>/<plural>, or None (a 404)."""
        return next((r for r in self.served_in(group, version) if r.plural == plural), None)

    def by_key(self, key: str) -> ResourceType:
        """Look up by kubectl's "plural.group" name, served or not (for direct store access)."""
        for resource in self.resources:
            if key in (resource.key, resource.kind):
                return resource
        raise KeyError(f"unknown resource {key!r}")

    def by_api_version(self, api_version: str, kind: str) -> ResourceType:
        group, version = split_api_version(api_version)
        for resource in self.resources:
            if (resource.group, resource.kind) == (group, kind) and version in resource.versions:
                return resource
        raise KeyError(f"unknown kind {kind!r} in {api_version!r}")
