"""What Kueue's flavor assigner reads besides quotas, read into domain values; no I/O.

- a ResourceFlavor's spec.nodeLabels, spec.nodeTaints and spec.tolerations (`flavor_nodes`);
- a ClusterQueue's spec.flavorFungibility and spec.preemption (`admission_policy`), with
  Kueue's defaults (v1beta2 clusterqueue_types.go: whenCanBorrow MayStopSearch,
  whenCanPreempt TryNextFlavor, every preemption policy Never); v1beta1's `Borrow` and
  `Preempt` are its names for MayStopSearch;
- a pod set's template nodeSelector, required node affinity (matchExpressions) and
  tolerations (`placement_of`; Kueue ignores matchFields, and so does this).

Readers raise ValueError (or KeyError/TypeError) on a malformed object.
"""

from __future__ import annotations

from collections.abc import Mapping

from autoscaler.adapters.kubernetes.objects import Obj
from autoscaler.domain.queues.facts import (
    MAY_STOP_SEARCH,
    NEVER,
    TRY_NEXT_FLAVOR,
    AdmissionPolicy,
)
from autoscaler.domain.queues.placement import (
    FlavorNodes,
    NodeRequirement,
    Placement,
    Taint,
    Toleration,
)

MISSING_FLAVOR = FlavorNodes(missing=True)


def flavor_nodes(name: str, flavors: Mapping[str, Obj]) -> FlavorNodes:
    """The named ResourceFlavor's node constraints; `missing` when it does not exist."""
    flavor = flavors.get(name)
    if flavor is None:
        return MISSING_FLAVOR
    spec = flavor.get("spec") or {}
    return FlavorNodes(
        labels={str(k): str(v) for k, v in (spec.get("nodeLabels") or {}).items()},
        taints=tuple(
            Taint(str(t["key"]), str(t.get("value") or ""), str(t["effect"]))
            for t in spec.get("nodeTaints") or []
        ),
        tolerations=_tolerations(spec),
    )


def _fungibility(value: object, default: str) -> str:
    return TRY_NEXT_FLAVOR if value == TRY_NEXT_FLAVOR else (MAY_STOP_SEARCH if value else default)


def admission_policy(cluster_queue: Obj) -> AdmissionPolicy:
    spec = cluster_queue.get("spec") or {}
    fungibility = spec.get("flavorFungibility") or {}
    preemption = spec.get("preemption") or {}
    borrow = (preemption.get("borrowWithinCohort") or {}).get("policy") or NEVER
    return AdmissionPolicy(
        when_can_borrow=_fungibility(fungibility.get("whenCanBorrow"), MAY_STOP_SEARCH),
        when_can_preempt=_fungibility(fungibility.get("whenCanPreempt"), TRY_NEXT_FLAVOR),
        preemption_over_borrowing=fungibility.get("preference") == "PreemptionOverBorrowing",
        within_cluster_queue=str(preemption.get("withinClusterQueue") or NEVER),
        reclaim_within_cohort=str(preemption.get("reclaimWithinCohort") or NEVER),
        borrow_within_cohort=str(borrow),
    )


def _tolerations(spec: Obj) -> tuple[Toleration, ...]:
    return tuple(
        Toleration(
            key=str(t.get("key") or ""),
            operator=str(t.get("operator") or "Equal"),
            value=str(t.get("value") or ""),
            effect=str(t.get("effect") or ""),
        )
        for t in spec.get("tolerations") or []
    )


def _required_terms(spec: Obj) -> list[Obj] | None:
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    return None if affinity is None else list(affinity.get("nodeSelectorTerms") or [])


def placement_of(pod_set: Obj) -> Placement:
    spec = (pod_set.get("template") or {}).get("spec") or {}
    terms = _required_terms(spec)
    return Placement(
        node_selector={str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()},
        affinity_terms=None
        if terms is None
        else tuple(
            tuple(
                NodeRequirement(
                    str(e["key"]), str(e["operator"]), tuple(str(v) for v in e.get("values") or [])
                )
                for e in term.get("matchExpressions") or []
            )
            for term in terms
        ),
        tolerations=_tolerations(spec),
    )
