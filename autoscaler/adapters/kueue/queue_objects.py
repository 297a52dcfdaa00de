"""Kueue's queue objects read into the domain's queue values (domain/queues/facts.py); no I/O.

ClusterQueues give quotas (spec.resourceGroups, flavors in Kueue's order), the cohort
(`spec.cohortName` in v1beta2, `spec.cohort` in v1beta1) and usage (status.flavorsReservation,
the quota Kueue has reserved, else status.flavorsUsage). A pending Workload's requests are
Kueue's own figure when it recorded one (status.resourceRequests), else computed as Kueue
does: per pod the containers' sum (with restartable init containers, i.e. sidecars), at least
each init container's peak, plus the pod overhead; times the pod set's count.

Readers raise ValueError (or KeyError/TypeError) on a malformed object, so the caller can skip
and log that one object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from autoscaler.adapters.kubernetes.objects import Obj, priority_of, queue_name_of, required_time
from autoscaler.adapters.kueue.admission_objects import flavor_nodes, placement_of
from autoscaler.domain.models import WorkloadRef
from autoscaler.domain.queues.facts import (
    FlavorQuotas,
    PodSet,
    ResourceGroup,
    ResourceQuota,
    Waiter,
)
from autoscaler.domain.queues.quantity import parse_quantity

Requests = dict[str, int]
QuotaParts = tuple[str, str | None, tuple[ResourceGroup, ...], dict[tuple[str, str], int]]


def name_of(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def key_of(obj: Obj) -> tuple[str, str]:
    meta = obj["metadata"]
    return str(meta.get("namespace") or ""), str(meta["name"])


def cohort_of(cluster_queue: Obj) -> str | None:
    spec = cluster_queue.get("spec") or {}
    cohort = spec.get("cohortName") or spec.get("cohort")  # v1beta2, v1beta1
    return str(cohort) if cohort else None


def cohorts_by_queue(cluster_queues: Iterable[Obj]) -> dict[str, str | None]:
    """ClusterQueue name -> its cohort; a malformed one is left out."""
    found: dict[str, str | None] = {}
    for obj in cluster_queues:
        try:
            found[name_of(obj)] = cohort_of(obj)
        except (KeyError, TypeError):
            continue
    return found


def target_of(local_queue: Obj) -> str:
    """The ClusterQueue a LocalQueue sends its Workloads to (spec.clusterQueue)."""
    target = local_queue["spec"]["clusterQueue"]
    if not isinstance(target, str) or not target:
        raise ValueError("spec.clusterQueue is not a name")
    return target


def targets_by_local_queue(local_queues: Iterable[Obj]) -> dict[tuple[str, str], str]:
    """(namespace, LocalQueue) -> its ClusterQueue; a malformed one is left out."""
    found: dict[tuple[str, str], str] = {}
    for obj in local_queues:
        try:
            found[key_of(obj)] = target_of(obj)
        except (KeyError, TypeError, ValueError):
            continue
    return found


def quota_parts(cluster_queue: Obj, *, flavors: Mapping[str, Obj]) -> QuotaParts:
    """(name, cohort, resource groups, usage) of a ClusterQueue; `flavors`: the
    ResourceFlavors by name, whose node constraints each group's flavors carry."""
    spec, status = cluster_queue.get("spec") or {}, cluster_queue.get("status") or {}
    groups = tuple(_group(group, flavors) for group in spec.get("resourceGroups") or [])
    return name_of(cluster_queue), cohort_of(cluster_queue), groups, _usage(status)


def _group(group: Obj, objects: Mapping[str, Obj]) -> ResourceGroup:
    covered = tuple(str(resource) for resource in group.get("coveredResources") or [])
    flavors = tuple(
        FlavorQuotas(
            flavor=str(flavor["name"]),
            resources={str(r["name"]): _quota(r) for r in flavor.get("resources") or []},
            nodes=flavor_nodes(str(flavor["name"]), objects),
        )
        for flavor in group.get("flavors") or []
    )
    return ResourceGroup(covered=covered, flavors=flavors)


def _quota(resource: Obj) -> ResourceQuota:
    name = str(resource["name"])
    borrowing, lending = resource.get("borrowingLimit"), resource.get("lendingLimit")
    return ResourceQuota(
        nominal=parse_quantity(name, resource["nominalQuota"]),
        borrowing_limit=None if borrowing is None else parse_quantity(name, borrowing),
        lending_limit=None if lending is None else parse_quantity(name, lending),
    )


def _usage(status: Obj) -> dict[tuple[str, str], int]:
    flavors = status.get("flavorsReservation") or status.get("flavorsUsage") or []
    usage: dict[tuple[str, str], int] = {}
    for flavor in flavors:
        for resource in flavor.get("resources") or []:
            name = str(resource["name"])
            usage[(str(flavor["name"]), name)] = parse_quantity(name, resource.get("total", 0))
    return usage


def _condition_true(workload: Obj, kind: str) -> bool:
    conditions = (workload.get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def is_pending(workload: Obj) -> bool:
    """Active, not finished, and neither holding reserved quota nor admitted."""
    if (workload.get("spec") or {}).get("active", True) is False:
        return False
    return not any(_condition_true(workload, c) for c in ("Finished", "QuotaReserved", "Admitted"))


def waiter_of(workload: Obj, *, cluster_queue: str) -> Waiter:
    meta = workload["metadata"]
    created = required_time(meta.get("creationTimestamp"), "creationTimestamp")
    return Waiter(
        ref=WorkloadRef(str(meta["namespace"]), str(meta["name"])),
        uid=str(meta.get("uid", "")),
        local_queue=queue_name_of(workload),
        cluster_queue=cluster_queue,
        priority=priority_of(workload),
        created_at=created,
        requests=workload_requests(workload),
        pod_sets=pod_sets_of(workload),
    )


def pod_sets_of(workload: Obj) -> tuple[PodSet, ...]:
    """The pod sets in order, each with its requests for all of its pods: Kueue's figure
    where it recorded one (status.resourceRequests, by pod set name), else computed."""
    recorded = {
        str(entry.get("name")): {
            str(r): parse_quantity(str(r), q) for r, q in (entry.get("resources") or {}).items()
        }
        for entry in (workload.get("status") or {}).get("resourceRequests") or []
    }
    pod_sets = []
    for pod_set in (workload.get("spec") or {}).get("podSets") or []:
        name, count = str(pod_set.get("name", "main")), int(pod_set.get("count", 1))
        requests = recorded.get(name)
        if requests is None:
            requests = {r: q * count for r, q in pod_requests(pod_set).items()}
        min_count = pod_set.get("minCount")
        pod_sets.append(
            PodSet(
                name=name,
                count=count,
                requests=requests,
                placement=placement_of(pod_set),
                min_count=None if min_count is None else int(min_count),
            )
        )
    return tuple(pod_sets)


def workload_requests(workload: Obj) -> Requests:
    """The sum over pod sets of count × per-pod requests (Kueue's figure when recorded)."""
    recorded = (workload.get("status") or {}).get("resourceRequests") or []
    if recorded:
        return _add(
            {str(r): parse_quantity(str(r), q) for r, q in (entry.get("resources") or {}).items()}
            for entry in recorded
        )
    pod_sets = (workload.get("spec") or {}).get("podSets") or []
    return _add(
        {r: q * int(pod_set.get("count", 1)) for r, q in pod_requests(pod_set).items()}
        for pod_set in pod_sets
    )


def pod_requests(pod_set: Obj) -> Requests:
    """One pod's requests, as the scheduler and Kueue size a pod."""
    spec = (pod_set.get("template") or {}).get("spec") or {}
    regular = _add(_container(c) for c in spec.get("containers") or [])
    sidecars: Requests = {}
    peak: Requests = {}
    for init in spec.get("initContainers") or []:
        own = _container(init)
        if init.get("restartPolicy") == "Always":  # a sidecar runs beside the containers
            sidecars = _add([sidecars, own])
            peak = _max([peak, sidecars])
        else:
            peak = _max([peak, _add([sidecars, own])])
    overhead = {str(r): parse_quantity(str(r), q) for r, q in (spec.get("overhead") or {}).items()}
    return _add([_max([_add([regular, sidecars]), peak]), overhead])


def _container(container: Obj) -> Requests:
    resources = container.get("resources") or {}
    declared = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {str(r): parse_quantity(str(r), q) for r, q in declared.items()}


def _add(parts: Iterable[Mapping[str, int]]) -> Requests:
    total: Requests = {}
    for part in parts:
        for resource, amount in part.items():
            total[resource] = total.get(resource, 0) + amount
    return total


def _max(parts: Sequence[Mapping[str, int]]) -> Requests:
    top: Requests = {}
    for part in parts:
        for resource, amount in part.items():
            top[resource] = max(top.get(resource, 0), amount)
    return top


def visibility_order(summary: Obj) -> list[tuple[str, str]]:
    """(namespace, name) of a pendingworkloads answer's items, by position in the queue."""
    items = [item for item in summary.get("items") or [] if isinstance(item, Mapping)]
    items.sort(key=lambda item: int(item.get("positionInClusterQueue", 0)))
    return [key_of(item) for item in items]
