"""The `status` blocks Kueue writes (kueue.x-k8s.io/v1beta2), rendered from the model.

Conditions follow Kueue's controllers: QuotaReserved and Admitted on admission; on
deactivation Evicted (reason Deactivated), Requeued=False and QuotaReserved=False; on
reactivation Requeued=True (Reactivated); on re-admission Evicted=False ("Previously: ...").
A preempted workload gets Evicted=True (reason Preempted) and Preempted=True (reason
InClusterQueue, InCohortReclamation...), both with Kueue's message naming the preemptor's
UID (kueue pkg/scheduler/preemption/preemption.go, IssuePreemptions), then, its job stopped,
QuotaReserved=False (PendingEvaluation), Admitted=False and Requeued=True (reason Preempted)
(pkg/controller/jobframework/reconciler.go, step 6); deactivating it then changes none of them
(pkg/controller/core/workload_controller.go evicts only a workload not already evicted). On
re-admission Evicted and Preempted turn False ("Previously: ...", pkg/workload/workload.go,
resetActiveCondition). A preemptor waiting for its victims shows QuotaReserved=False, reason
WaitingForPreemptedWorkloads ("... Pending the preemption of N workload(s)").
With fair sharing on, a ClusterQueue's status carries `fairSharing.weightedShare`: its
dominant resource share, rounded up to an integer (MaxInt64 for +inf), and none with fair
sharing off (pkg/controller/core/clusterqueue_controller.go, updateCqStatusIfChanged;
helpers.go, WeightedShare). Times are RFC 3339 UTC with a 'Z'. A status is meant to replace
the stored one, not be merged.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any, NamedTuple

from autoscaler.domain.models import WorkloadRef
from autoscaler.sim.admission import ledger, pending_reason, queue_usage
from autoscaler.sim.fair_sharing import dominant_resource_share
from autoscaler.sim.kueue_model import (
    DEACTIVATED_MESSAGE,
    Admission,
    KueueState,
    Phase,
    Preempted,
    Workload,
)
from autoscaler.sim.quota import PODS
from tests.support.quantity import format_quantity, rfc3339

ADMITTED = "The workload is admitted"
FINISHED = "Workload has finished"
REACTIVATED = "The workload was reactivated"


def workload_status(state: KueueState, ref: WorkloadRef) -> dict[str, Any]:
    """The v1beta2 `status` block Kueue would write for this workload (replace, not merge)."""
    workload = state.workload(ref)
    status: dict[str, Any] = {"conditions": _conditions(state, workload)}
    if workload.admission is not None:
        status["admission"] = _admission(state, workload, workload.admission)
    return status


def cluster_queue_status(state: KueueState, name: str) -> dict[str, Any]:
    """ClusterQueue `status` counters and per-resource reservation (total, borrowed)."""
    now_used = queue_usage(state, name)
    flavor = state.cluster_queues[name].flavor
    resources = [
        {
            "name": resource,
            "total": format_quantity(resource, total),
            "borrowed": format_quantity(resource, now_used.borrowed[resource]),
        }
        for resource, total in now_used.used.items()
    ]
    reservation = [{"name": flavor, "resources": resources}]
    status: dict[str, Any] = {
        "flavorsReservation": reservation,
        "flavorsUsage": reservation,
        "admittedWorkloads": now_used.admitted,
        "reservingWorkloads": now_used.admitted,
        "pendingWorkloads": now_used.pending,
    }
    if state.features.fair_sharing:
        share = dominant_resource_share(ledger(state), state.cluster_queues[name], {}).weighted
        weighted = 2**63 - 1 if share == math.inf else math.ceil(share)
        status["fairSharing"] = {"weightedShare": weighted}
    return status


class _Row(NamedTuple):
    type: str
    status: str
    reason: str
    message: str
    at: datetime


def _conditions(state: KueueState, workload: Workload) -> list[dict[str, str]]:
    """Kueue's conditions for the workload's phase, in a fixed order."""
    if workload.phase is Phase.ADMITTED and workload.admission is not None:
        rows = _admitted_rows(workload, workload.admission)
    elif workload.phase is Phase.FINISHED:
        rows = _finished_rows(workload)
    elif workload.evicted_by_preemption and workload.preempted is not None:
        rows = _preempted_rows(workload.preempted)
    else:
        rows = _waiting_rows(workload, pending_reason(state, workload.ref))
    if (
        workload.requeued_at is not None
        and workload.phase is not Phase.INACTIVE
        and not workload.evicted_by_preemption
    ):
        rows.append(_Row("Requeued", "True", "Reactivated", REACTIVATED, workload.requeued_at))
    return [
        {
            "type": row.type,
            "status": row.status,
            "reason": row.reason,
            "message": row.message,
            "lastTransitionTime": rfc3339(row.at),
        }
        for row in rows
    ]


def _reserved_rows(held: Admission) -> list[_Row]:
    message = f"Quota reserved in ClusterQueue {held.cluster_queue}"
    return [_Row("QuotaReserved", "True", "QuotaReserved", message, held.at)]


def _admitted_rows(workload: Workload, held: Admission) -> list[_Row]:
    rows = [*_reserved_rows(held), _Row("Admitted", "True", "Admitted", ADMITTED, held.at)]
    preempted = workload.preempted
    last_was_preemption = preempted is not None and preempted.at == workload.evicted_at
    if workload.evicted_at is not None:  # Kueue resets Evicted when it admits again
        why = preempted.message if last_was_preemption and preempted else DEACTIVATED_MESSAGE
        rows.append(_Row("Evicted", "False", "QuotaReserved", f"Previously: {why}", held.at))
    if preempted is not None:  # and Preempted, once, when it is admitted after it
        at = held.at if last_was_preemption else preempted.at
        previously = f"Previously: {preempted.message}"
        rows.append(_Row("Preempted", "False", "QuotaReserved", previously, at))
    return rows


def _preempted_rows(preempted: Preempted) -> list[_Row]:
    """Evicted by a preemption and requeued, whether pending or deactivated since."""
    at, message = preempted.at, preempted.message
    return [
        _Row("QuotaReserved", "False", "PendingEvaluation", message, at),
        _Row("Admitted", "False", "NoReservation", "The workload has no reservation", at),
        _Row("Evicted", "True", "Preempted", message, at),
        _Row("Preempted", "True", preempted.reason, message, at),
        _Row("Requeued", "True", "Preempted", message, at),
    ]


def _finished_rows(workload: Workload) -> list[_Row]:
    at = workload.phase_since or workload.created_at  # when it changed last
    held = [] if workload.admission is None else _reserved_rows(workload.admission)
    return [
        *held,
        _Row("Admitted", "False", "Finished", FINISHED, at),
        _Row("Finished", "True", "Succeeded", FINISHED, at),
    ]


def _waiting_rows(workload: Workload, pending: str | None) -> list[_Row]:
    """Pending or inactive: no quota, and evicted if it was ever deactivated."""
    at = workload.phase_since or workload.created_at  # when it changed last
    inactive = workload.phase is Phase.INACTIVE
    why = DEACTIVATED_MESSAGE if inactive else pending or ""
    reason = "Pending"
    if workload.awaiting_preemption is not None and not inactive:
        why, reason = workload.awaiting_preemption, "WaitingForPreemptedWorkloads"
    rows = [
        _Row("QuotaReserved", "False", reason, why, at),
        _Row("Admitted", "False", "NoReservation", "The workload has no reservation", at),
    ]
    evicted = workload.evicted_at or (at if inactive else None)
    if evicted is not None:
        rows.append(_Row("Evicted", "True", "Deactivated", DEACTIVATED_MESSAGE, evicted))
    if inactive and evicted is not None:
        rows.append(_Row("Requeued", "False", "Deactivated", DEACTIVATED_MESSAGE, evicted))
    return rows


def _admission(state: KueueState, workload: Workload, held: Admission) -> dict[str, Any]:
    cq = state.cluster_queues.get(held.cluster_queue)
    flavor = "default-flavor" if cq is None else cq.flavor
    assignments = []
    for pod_set in workload.pod_sets:
        used = {r: q for r, q in pod_set.total.items() if q > 0 and r in held.usage}
        if PODS in held.usage:
            used[PODS] = used.get(PODS, 0) + pod_set.count
        assignments.append(
            {
                "name": pod_set.name,
                "flavors": dict.fromkeys(sorted(used), flavor),
                "resourceUsage": {r: format_quantity(r, q) for r, q in sorted(used.items())},
                "count": pod_set.count,
            }
        )
    return {"clusterQueue": held.cluster_queue, "podSetAssignments": assignments}
