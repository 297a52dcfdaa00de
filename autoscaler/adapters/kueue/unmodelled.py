"""Why Kueue's admission for a ClusterQueue cannot be modelled (QueueQuota.unmodelled).

Read, and only this: the ClusterQueue's admission checks (spec.admissionChecks, v1beta1, or
spec.admissionChecksStrategy.admissionChecks); fair sharing (spec.fairSharing on the
ClusterQueue or its Cohort object, or status.fairSharing, which Kueue records only when fair
sharing is on); hierarchical cohorts (its Cohort object has a parent, spec.parentName or
spec.parent, or is another Cohort's parent, or holds quota of its own in resourceGroups);
topology-aware scheduling (one of its flavors is a ResourceFlavor with spec.topologyName);
StrictFIFO queueing (a head that cannot fit blocks every waiter behind it, which the fit of
one waiter at a time does not see).
A cohort that is only a name (no Cohort object) is the plain, modelled case.
"""

from __future__ import annotations

from collections.abc import Mapping

from autoscaler.adapters.kubernetes.objects import Obj


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
        *_fair_sharing("ClusterQueue", cluster_queue),
        *_topology(spec, flavors),
        *_strict_fifo(spec),
    ]
    if cohort is not None and cohort in cohorts:
        reasons += _fair_sharing(f"Cohort {cohort}", cohorts[cohort])
        reasons += _hierarchy(cohort, cohorts)
    return tuple(reasons)


def _admission_checks(spec: Obj) -> list[str]:
    strategy = (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []
    names = [str(c) for c in spec.get("admissionChecks") or []]
    names += [str(rule.get("name")) for rule in strategy if isinstance(rule, Mapping)]
    return [f"admission checks: {', '.join(names)}"] if names else []


def _fair_sharing(what: str, obj: Obj) -> list[str]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if "fairSharing" in spec or "fairSharing" in status:
        return [f"fair sharing ({what})"]
    return []


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
