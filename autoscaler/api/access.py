"""Which Kubernetes permission each change needs, asked through the configured Authorizer.

- A change on one workload (exempt, unexempt, snooze, unsnooze, reactivate): `patch` on the
  Workload's owner (e.g. rayclusters.ray.io/my-cluster), or on the Workload when the owner is
  not a kind we know. So a data scientist can exempt her own RayCluster but not her
  neighbour's. Refused to a caller who may not read the namespace either, the answer is the
  same whatever the name matched (a Workload, an owner of one or of several, nothing): what
  the lookup found is told only to those who may change it, or read it anyway.
- Pausing or resuming one namespace: `patch` on workloads.kueue.x-k8s.io in that namespace.
- Pausing the whole service and "deactivate now": the admin permission of the settings,
  by default `update` on the runtime-state ConfigMap.
- Reading (unless `api.readsOpen`): `list` on workloads.kueue.x-k8s.io in the namespace
  read, or in every namespace for a listing that is not narrowed to one. Asked before any
  lookup, so a caller who may not read gets 403 whether the workload exists or not.
- Another namespace's Workload a reason or a judgement names (a stop's waiter, Kueue's
  preemptor, a head fair sharing serves first): named only to a caller who may read its
  namespace (`reading`), else told as "a Workload in ClusterQueue <cq>".
"""

from __future__ import annotations

import functools

from autoscaler.api.problems import ApiProblem
from autoscaler.core.ports import Authorizer
from autoscaler.domain.access import Identity, Target, read_target
from autoscaler.domain.models import WorkloadInfo, WorkloadRef
from autoscaler.domain.policy.owners import KUEUE_GROUP, WORKLOADS, known_owner
from autoscaler.domain.problem_types import ProblemType
from autoscaler.domain.tenant_names import MayRead
from autoscaler.settings.api import AdminVerbSettings

PATCH = "patch"


def admin_target(admin: AdminVerbSettings, *, config_map: str, namespace: str) -> Target:
    """The admin permission, defaulting to the runtime-state ConfigMap in our namespace."""
    return Target(
        verb=admin.verb,
        group=admin.group,
        resource=admin.resource,
        namespace=admin.namespace or namespace,
        name=admin.name or config_map,
    )


def workload_target(workload: WorkloadInfo) -> Target:
    namespace = workload.ref.namespace
    kind = known_owner(workload.owner)
    if workload.owner is not None and kind is not None:
        return Target(PATCH, kind.group, kind.plural, namespace, workload.owner.name)
    return Target(PATCH, KUEUE_GROUP, WORKLOADS, namespace, workload.ref.name)


def namespace_target(namespace: str) -> Target:
    return Target(PATCH, KUEUE_GROUP, WORKLOADS, namespace)


class Access:
    def __init__(self, authorizer: Authorizer, *, admin: Target, reads_open: bool) -> None:
        self._authorizer = authorizer
        self._admin = admin
        self._reads_open = reads_open

    def require(self, who: Identity, target: Target) -> None:
        """Raise a 403 carrying the review's reason unless `who` holds `target`."""
        verdict = self._authorizer.authorize(who, target)
        if not verdict.allowed:
            raise missing_right(who, target, reason=verdict.reason)

    def require_admin(self, who: Identity) -> None:
        self.require(who, self._admin)

    def is_admin(self, who: Identity | None) -> bool:
        return who is not None and self._authorizer.authorize(who, self._admin).allowed

    def may_read(self, who: Identity | None, namespace: str | None) -> bool:
        """Whether `who` may read one namespace (None: every namespace); no token may read
        only while reads are open."""
        if self._reads_open:
            return True
        return who is not None and self._authorizer.authorize(who, read_target(namespace)).allowed

    def reading(self, who: Identity | None) -> MayRead:
        """`may_read` bound to `who`, each namespace asked once: what the answer to one
        request may name of other namespaces (domain/tenant_names.py)."""
        return functools.cache(lambda namespace: self.may_read(who, namespace))

    def may_read_or_change(self, who: Identity, namespace: str) -> bool:
        """Whether `who` may read the namespace, or change (`patch`) its Workloads: asked of
        the namespace alone, before a lookup of a name there costs the cluster a read."""
        if self.may_read(who, namespace):
            return True
        return self._authorizer.authorize(who, namespace_target(namespace)).allowed

    def require_read(self, who: Identity | None, namespace: str | None) -> None:
        """Reads of one namespace (None: of every namespace), unless reads are open."""
        if self._reads_open:
            return
        if who is None:
            raise ApiProblem(401, "a bearer token is required to read")
        self.require(who, read_target(namespace))

    def require_audit_read(self, who: Identity | None, namespace: str | None) -> None:
        """The audit trail of one namespace needs its read right; the whole trail (actors
        and reasons of every namespace and of the service) the admin permission."""
        if namespace is not None or self._reads_open:
            self.require_read(who, namespace)
            return
        if who is None:
            raise ApiProblem(401, "a bearer token is required to read")
        self.require_admin(who)

    def require_workload_change(
        self, who: Identity, workload: WorkloadInfo, *, asked: WorkloadRef
    ) -> None:
        """`patch` on the workload's owner (or its Workload), `asked` being the name the caller
        gave. A caller who may read the namespace is told which right is missing; one who may
        not gets `unseen_change`, the same answer as for a name that matches nothing."""
        target = workload_target(workload)
        verdict = self._authorizer.authorize(who, target)
        if verdict.allowed:
            return
        if self.may_read(who, workload.ref.namespace):
            raise missing_right(who, target, reason=verdict.reason)
        raise unseen_change(who, asked)

    def require_namespace_change(self, who: Identity, namespace: str) -> None:
        self.require(who, namespace_target(namespace))


def missing_right(who: Identity, target: Target, *, reason: str) -> ApiProblem:
    """The 403 that names the right `who` lacks, with the review's reason."""
    return ApiProblem(
        403, f"{who.username} may not {target}: {reason}", type=ProblemType.MISSING_RIGHT
    )


def unseen_change(who: Identity, asked: WorkloadRef) -> ApiProblem:
    """The refusal of a change on `asked` to a caller who may neither change nor read it:
    built from the request alone, so it tells nothing the caller did not say (its type and
    shape are the same whatever the name matched, nothing included)."""
    return ApiProblem(
        403,
        f"{who.username} may not change workloads in {asked.namespace}: {asked} needs patch "
        "on its owner (or on its Workload)",
        type=ProblemType.UNSEEN_CHANGE,
    )
