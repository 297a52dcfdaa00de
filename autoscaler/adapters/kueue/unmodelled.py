"""Why Kueue's admission for a ClusterQueue cannot be modelled (QueueQuota.unmodelled), and
what fair sharing the model needs (`fair_sharing_of`).

Unmodelled, read and only this: the ClusterQueue's admission checks (spec.admissionChecks,
v1beta1, or spec.admissionChecksStrategy.admissionChecks); hierarchical cohorts (its Cohort
object has a parent, spec.parentName or spec.parent, or is another Cohort's parent, or holds
quota of its own in resourceGroups); topology-aware scheduling (one of its flavors is a
ResourceFlavor with spec.topologyName); StrictFIFO queueing (a head that cannot fit blocks
every waiter behind it, which the fit of one waiter at a time does not see).
A cohort that is only a name (no Cohort object) is the plain, modelled case.

Fair sharing is modelled (domain/queues/fair_sharing.py), and `read_fair_sharing` says
whether it is on: Kueue's Configuration (`fairSharing`, domain/kueue_config.py) where it is
readable and says; else the status Kueue writes on every ClusterQueue and Cohort when fair
sharing is on, and removes when off (pkg/controller/core/clusterqueue_controller.go,
cohort_controller.go): one such status says it is on for every cohort. The order of the
heads follows the feature gates FairSharingPrioritizeNonBorrowing and
PrioritySortingWithinCohort as the Configuration sets them, else Kueue's defaults (both on).
Each ClusterQueue's weight is its spec.fairSharing.weight (a quantity, default 1,
fair_sharing.go `parseFairWeight`); a weight that cannot be read makes its waiters' order
unknown. Admission fair sharing (spec.admissionScope.admissionMode
UsageBasedAdmissionFairSharing) orders a queue's waiters by their LocalQueues' usage, which
is not read: its waiters' order is unknown, unless the Configuration says admission fair
sharing is off (no `admissionFairSharing`, or its feature gate off), when Kueue ignores the
queue's admissionMode (scheduler.go `afs.Enabled`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from autoscaler.adapters.kubernetes.objects import Obj
from autoscaler.domain.kueue_config import (
    PRIORITIZE_NON_BORROWING,
    PRIORITY_SORTING_WITHIN_COHORT,
    KueueConfiguration,
    gate_or_default,
)
from autoscaler.domain.queues.facts import FairSharingOrder
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


@dataclass(frozen=True)
class FairSharingRead:
    """Whether Kueue runs with fair sharing, how it orders the heads, whether admission fair
    sharing is on (None: unknown), and while it is on, a line that says which source said
    so and how the heads are ordered."""

    on: bool
    order: FairSharingOrder
    admission: bool | None
    notes: tuple[str, ...] = ()


def read_fair_sharing(
    config: KueueConfiguration | None, cluster_queues: Iterable[Obj], cohorts: Iterable[Obj]
) -> FairSharingRead:
    """Kueue's Configuration where it says; else the status.fairSharing Kueue writes."""
    said = config.fair_sharing_on() if config is not None else None
    if said is not None and config is not None:
        on, source = said, f"Kueue's Configuration {config.source}"
    else:
        on, source = _status_says(cluster_queues, cohorts)
        source += f" ({_why_not(config)})"
    gates = [
        gate_or_default(config, g)
        for g in (PRIORITIZE_NON_BORROWING, PRIORITY_SORTING_WITHIN_COHORT)
    ]
    order = FairSharingOrder(gates[0][0], gates[1][0], source if on else "")
    admission = config.admission_fair_sharing_on() if config is not None else None
    if not on:
        return FairSharingRead(on, order, admission)
    ordered = ", ".join(text for _, text in gates)
    return FairSharingRead(
        on, order, admission, (f"fair sharing on per {source}; heads ordered with {ordered}",)
    )


def _status_says(cluster_queues: Iterable[Obj], cohorts: Iterable[Obj]) -> tuple[bool, str]:
    kinds = [("ClusterQueue", o) for o in cluster_queues] + [("Cohort", o) for o in cohorts]
    for kind, obj in kinds:
        if "fairSharing" in (obj.get("status") or {}):
            name = (obj.get("metadata") or {}).get("name")
            return True, f"status.fairSharing on {kind} {name}"
    return False, "no status.fairSharing on any ClusterQueue or Cohort"


def _why_not(config: KueueConfiguration | None) -> str:
    if config is None:
        return "Kueue's Configuration not read this cycle"
    if config.problem is not None:
        return config.problem
    return f"{config.source}: fairSharing not readable"


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


def order_unknown(
    cluster_queue: Obj, *, fair_sharing: bool, admission_fair_sharing: bool | None
) -> tuple[str, ...]:
    """Why Kueue's order of this queue's waiters, or of its head in its cohort, is unknown.
    `admission_fair_sharing`: whether Kueue's Configuration turns it on; None: unknown."""
    reasons = []
    scope = (cluster_queue.get("spec") or {}).get("admissionScope") or {}
    if scope.get("admissionMode") == USAGE_BASED_AFS and admission_fair_sharing is not False:
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
