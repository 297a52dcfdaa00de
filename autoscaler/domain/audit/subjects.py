"""What a durable record says about the workload it is about, as it stood when acted on: the
rule that matched, its queues and owner, when its idle episode began, the waiting
Workload a contention-driven deactivation was for, and what the evidence signals saw (an
idle notebook's attached Ray driver, say: shown, never use). The savings report groups by
these, so a record keeps them even after the workload is gone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from autoscaler.domain.models import Decision, OwnerRef, State, WorkloadInfo
from autoscaler.domain.usage.assessment import held_class
from autoscaler.domain.usage.words import evidence_text


@dataclass(frozen=True)
class Subject:
    rule: str | None = None
    beneficiary: str | None = None  # "namespace/name" of the waiter it was for
    # The waiter's ClusterQueue: what a reader who may not read the waiter's namespace is
    # told of it (domain/tenant_names.py); None in records from before it.
    beneficiary_queue: str | None = None
    # The waiter's GPUs, on a follow-up's note of a Workload admitted into a stop's freed
    # quota: what of it that waiter took; None on other records and on notes from before it.
    beneficiary_gpus: int | None = None
    queue: str | None = None  # the Workload's LocalQueue
    cluster_queue: str | None = None
    # Its ClusterQueue's cohort, where a stop's freed quota may go; None when it has none,
    # and in records from before it was kept (no cohort known).
    cohort: str | None = None
    owner: str | None = None  # "Kind/name"
    idle_since: datetime | None = None  # Decision.idle_since: the idle episode's start
    evidence: str | None = None  # Decision.evidence on one line; None when nothing was seen
    # How its GPUs were held when acted on: "not-running" (admitted, no GPU pod running:
    # quota held without work); None for idle, and for records from before the class.
    held: str | None = None
    # What the stop followed: AFTER_KUEUE_PREEMPTION for the deactivation of a Workload Kueue
    # preempted after our via-kueue mark (its mark was the stop counted); None otherwise.
    stopped_after: str | None = None


AFTER_KUEUE_PREEMPTION = "kueue-preemption"


def owner_text(owner: OwnerRef | None) -> str | None:
    """An owner as the records keep it and the savings group by it: "Kind/name"."""
    return f"{owner.kind}/{owner.name}" if owner is not None else None


def subject_of(info: WorkloadInfo | None, decision: Decision | None) -> Subject | None:
    """None when neither is known (a record about a workload no longer read)."""
    if info is None and decision is None:
        return None
    owner = info.owner if info is not None else None
    beneficiary = decision.beneficiary if decision is not None else None
    held = held_class(decision)
    return Subject(
        rule=decision.rule.name if decision is not None else None,
        beneficiary=str(beneficiary) if beneficiary is not None else None,
        beneficiary_queue=decision.beneficiary_queue if decision is not None else None,
        queue=(info.queue or None) if info is not None else None,
        cluster_queue=info.cluster_queue if info is not None else None,
        cohort=info.cohort if info is not None else None,
        owner=owner_text(owner),
        idle_since=decision.idle_since if decision is not None else None,
        evidence=evidence_text(decision.evidence) if decision and decision.evidence else None,
        held=None if held is State.IDLE else held.value,  # idle: as records before the class
        stopped_after=AFTER_KUEUE_PREEMPTION
        if decision is not None and decision.kueue_preempted
        else None,
    )
