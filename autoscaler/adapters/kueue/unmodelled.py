"""Why Kueue's admission for a ClusterQueue cannot be modelled (QueueQuota.unmodelled), and
what fair sharing the model needs (`fair_sharing_of`).

Unmodelled, read and only this: the ClusterQueue's admission checks (spec.admissionChecks,
v1beta1, or spec.admissionChecksStrategy.admissionChecks); hierarchical cohorts (its Cohort
object has a parent, spec.parentName or spec.parent, or is another Cohort's parent, or holds
quota of its own in resourceGroups); topology-aware scheduling (one of its flavors is a
ResourceFlavor with spec.topologyName); StrictFIFO queueing (a head that cannot fit blocks
every waiter behind it, which the fit of one waiter at a time does not see).
A cohort that is only a name (no Cohort object) is the plain, modelled case.

Fair sharing is modelled (domain/queues/fair_sharing.py). Kueue writes status.fairSharing on
every ClusterQueue and Cohort when its Configuration turns fair sharing on, and removes it
when off (pkg/controller/core/clusterqueue_controller.go, cohort_controller.go): one such
status says fair sharing is on for every cohort. Each ClusterQueue's weight is its
spec.fairSharing.weight (a quantity, default 1, fair_sharing.go `parseFairWeight`); a weight
that cannot be read makes that queue unmodelled. Admission fair sharing
(spec.admissionScope.admissionMode UsageBasedAdmissionFairSharing) orders a queue's waiters
by their LocalQueues' usage, which is not read: its waiters' order is unknown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from autoscaler.adapters.kubernetes.objects import Obj
from autoscaler.domain.queues.fair_sharing import DEFAULT_WEIGHT
from autoscaler.domain.queues.quantity import parse_quantity

USAGE_BASED_AFS = "UsageBasedAdmissionFairSharing"


def unmodelled_reasons(
    cluster_queue: Obj,
    *,
    flavors: Mapping[str, Obj],
    cohorts: Mapping[str, Obj],
    cohort: str | None,
) -> tuple[str, ...]:
    spec = cluster_queue.get("spec") or {}
    reasons = [
        *_admission_checks(spec),
        *_topology(spec, flavors),
        *_strict_fifo(spec),
    ]
    if cohort is not None and cohort in cohorts:
        reasons += _hierarchy(cohort, cohorts)
    return tuple(reasons)


def _admission_checks(spec: Obj) -> list[str]:
    strategy = (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []
    names = [str(c) for c in spec.get("admissionChecks") or []]
    names += [str(rule.get("name")) for rule in strategy if isinstance(rule, Mapping)]
    return [f"admission checks: {', '.join(names)}"] if names else []


def fair_sharing_on(cluster_queues: Iterable[Obj], cohorts: Iterable[Obj]) -> bool:
    """Whether Kueue runs with fair sharing: it writes status.fairSharing only then."""
    return any("fairSharing" in (obj.get("status") or {}) for obj in (*cluster_queues, *cohorts))


def fair_weight(obj: Obj) -> float | None:
    """spec.fairSharing.weight (default 1); None when Kueue's quantity cannot be read."""
    raw = ((obj.get("spec") or {}).get("fairSharing") or {}).get("weight")
    if raw is None:
        return DEFAULT_WEIGHT
    try:
        milli = parse_quantity("cpu", raw)  # a quantity, read to the milli-unit
    except ValueError:
        return None
    return milli / 1000 if milli >= 0 else None


def order_unknown(cluster_queue: Obj, *, fair_sharing: bool) -> tuple[str, ...]:
    """Why Kueue's order of this queue's waiters, or of its head in its cohort, is unknown."""
    reasons = []
    scope = (cluster_queue.get("spec") or {}).get("admissionScope") or {}
    if scope.get("admissionMode") == USAGE_BASED_AFS:
        reasons.append("admission fair sharing orders its waiters by their LocalQueues' usage")
    if fair_sharing and fair_weight(cluster_queue) is None:
        raw = cluster_queue["spec"]["fairSharing"]["weight"]
        reasons.append(f"its fair-sharing weight {raw!r} is not a quantity Kueue reads")
    return tuple(reasons)


def _parent(cohort: Obj) -> str | None:
    spec = cohort.get("spec") or {}
    parent = spec.get("parentName") or spec.get("parent")  # v1beta2, earlier versions
    return str(parent) if parent else None


def _hierarchy(name: str, cohorts: Mapping[str, Obj]) -> list[str]:
    cohort = cohorts[name]
    reasons = []
    if (parent := _parent(cohort)) is not None:
        reasons.append(f"hierarchical cohorts: {name} has the parent {parent}")
    children = sorted(other for other, obj in cohorts.items() if _parent(obj) == name)
    if children:
        reasons.append(f"hierarchical cohorts: {name} is the parent of {', '.join(children)}")
    if (cohort.get("spec") or {}).get("resourceGroups"):
        reasons.append(f"hierarchical cohorts: the Cohort {name} holds quota of its own")
    return reasons


def _topology(spec: Obj, flavors: Mapping[str, Obj]) -> list[str]:
    names = [
        str(flavor.get("name"))
        for group in spec.get("resourceGroups") or []
        for flavor in group.get("flavors") or []
    ]
    tas = [n for n in names if ((flavors.get(n) or {}).get("spec") or {}).get("topologyName")]
    return [f"topology-aware scheduling: flavor {', '.join(tas)}"] if tas else []


def _strict_fifo(spec: Obj) -> list[str]:
    if spec.get("queueingStrategy") == "StrictFIFO":
        return ["StrictFIFO queueing: a head that cannot fit blocks the waiters behind it"]
    return []
