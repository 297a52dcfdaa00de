"""Kueue's classical preemption: which admitted workloads a pending one evicts to fit.

Follows kubernetes-sigs/kueue at ff69552e, for a flat cohort (ClusterQueues with a
`cohortName`, no Cohort objects):
- candidates (pkg/scheduler/preemption/classical/hierarchical_preemption.go): workloads of
  the preemptor's own queue that its `withinClusterQueue` policy allows, and workloads of the
  cohort's other queues that are above their nominal quota in a resource the preemptor needs
  and that its `reclaimWithinCohort` policy allows; a cohort candidate is a *hierarchical
  reclaim* when the preemptor would stay within its own nominal quota, else it may only be
  taken when the preemptor would not borrow afterwards (unless `borrowWithinCohort` allows);
- the policies compare effective priorities (pkg/scheduler/preemption/common/
  preemption_policy.go): LowerPriority, LowerOrNewerEqualPriority (equal priority and
  created later than the preemptor), Any;
- ordering (pkg/scheduler/preemption/common/ordering.go, CandidatesOrdering): other
  queues' workloads before the preemptor's own, lower effective priority first, then the
  most recently admitted, then UID;
- the minimal set (pkg/scheduler/preemption/preemption.go, classicalPreemptions): remove
  candidates in order until the preemptor fits, then add back, from the last-but-one
  backwards, every one it still fits without.

Fair-sharing preemption (`fairPreemptions`) is a different algorithm and is not emulated:
`preemption_targets` refuses to guess when fair sharing is on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum

from autoscaler.sim.kueue_model import KueueState, Phase, Workload
from autoscaler.sim.quota import ClusterQueue, Ledger, PreemptionPolicy

IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"

# preemption.go, HumanReadablePreemptionReasons.
_HUMAN_READABLE = {
    IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    IN_COHORT_RECLAMATION: "reclamation within the cohort",
    IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
}


class _Variant(IntEnum):  # hierarchical_preemption.go, preemptionVariant
    WITHIN_CQ = 1
    HIERARCHICAL_RECLAIM = 2
    RECLAIM_WITHOUT_BORROWING = 3
    RECLAIM_WHILE_BORROWING = 4


_REASONS = {
    _Variant.WITHIN_CQ: IN_CLUSTER_QUEUE,
    _Variant.HIERARCHICAL_RECLAIM: IN_COHORT_RECLAMATION,
    _Variant.RECLAIM_WITHOUT_BORROWING: IN_COHORT_RECLAMATION,
    _Variant.RECLAIM_WHILE_BORROWING: IN_COHORT_RECLAIM_WHILE_BORROWING,
}


@dataclass(frozen=True)
class Target:
    """An admitted workload to evict, the queue it holds quota in, and Kueue's reason."""

    workload: Workload
    cluster_queue: str
    reason: str

    @property
    def usage(self) -> Mapping[str, int]:
        return {} if self.workload.admission is None else self.workload.admission.usage


@dataclass(frozen=True)
class _Context:
    state: KueueState
    preemptor: Workload
    cq: ClusterQueue
    charge: Mapping[str, int]
    needs: tuple[str, ...]  # resources the preemptor lacks: the ones preemption must free


def resources_needing_preemption(
    book: Ledger, cq: ClusterQueue, charge: Mapping[str, int]
) -> tuple[str, ...]:
    """Resources that do not fit now but would with nobody else's usage (flavorassigner.go,
    fitsResourceQuota: mode Preempt); () when any resource exceeds what the queue could
    ever hold (NoFit: no preemption helps)."""
    short = tuple(r for r, v in sorted(charge.items()) if v > book.available(cq.name, r))
    if any(charge[r] > book.potential_available(cq.name, r) for r in short):
        return ()
    return short


def preemption_targets(
    state: KueueState,
    book: Ledger,
    *,
    preemptor: Workload,
    cq: ClusterQueue,
    charge: Mapping[str, int],
) -> tuple[Target, ...]:
    """The workloads Kueue would preempt so `preemptor` fits in `cq`; () when none would do."""
    needs = resources_needing_preemption(book, cq, charge)
    if not needs or not _may_preempt(cq):
        return ()
    if state.features.fair_sharing:
        raise NotImplementedError(
            f"ClusterQueue {cq.name}: Kueue's fair-sharing preemption is not emulated"
        )
    ctx = _Context(state, preemptor, cq, charge, needs)
    same_queue = _ordered(ctx, _same_queue_candidates(ctx))
    hierarchy, by_priority = _cohort_candidates(ctx, book)
    hierarchy, by_priority = _ordered(ctx, hierarchy), _ordered(ctx, by_priority)
    candidates = [*hierarchy, *by_priority, *same_queue]
    forbidden = not cq.preemption.borrow_within_cohort
    if not (hierarchy or by_priority) or (forbidden and not _under_nominal(ctx, book)):
        attempts: tuple[bool, ...] = (True,)
    elif forbidden and not hierarchy:
        attempts = (False, True)
    else:
        attempts = (True, False)
    for borrowing in attempts:
        found = _minimal_set(ctx, book, candidates, borrowing=borrowing)
        if found:
            return found
    return ()


def preemption_message(state: KueueState, preemptor: Workload, target: Target) -> str:
    """The Evicted and Preempted conditions' message (preemption.go, preemptionMessage)."""
    preemptor_queue = state.cluster_queue_name(preemptor) or ""
    return (
        f"Preempted to accommodate a workload (UID: {preemptor.uid or 'UNKNOWN'}, "
        f"JobUID: {preemptor.job_uid or 'UNKNOWN'}) due to {_HUMAN_READABLE[target.reason]}; "
        f"preemptor path: {_path(state, preemptor_queue)}; "
        f"preemptee path: {_path(state, target.cluster_queue)}"
    )


def satisfies_policy(
    state: KueueState, preemptor: Workload, candidate: Workload, policy: PreemptionPolicy
) -> bool:
    """common/preemption_policy.go, SatisfiesPreemptionPolicy (queue-order timestamp: the
    creation time)."""
    mine, theirs = state.effective_priority(preemptor), state.effective_priority(candidate)
    if policy is PreemptionPolicy.LOWER_PRIORITY:
        return mine > theirs
    if policy is PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY:
        return mine > theirs or (mine == theirs and preemptor.created_at < candidate.created_at)
    return policy is PreemptionPolicy.ANY


# Helpers.


@dataclass(frozen=True)
class _Candidate:
    workload: Workload
    cluster_queue: str
    variant: _Variant


def _may_preempt(cq: ClusterQueue) -> bool:
    policy = cq.preemption
    return (
        policy.within_cluster_queue is not PreemptionPolicy.NEVER
        or policy.reclaim_within_cohort is not PreemptionPolicy.NEVER
    )


def _same_queue_candidates(ctx: _Context) -> list[_Candidate]:
    if ctx.cq.preemption.within_cluster_queue is PreemptionPolicy.NEVER:
        return []
    return _candidates_in(ctx, ctx.cq.name, advantage=False)


def _cohort_candidates(ctx: _Context, book: Ledger) -> tuple[list[_Candidate], list[_Candidate]]:
    """(hierarchy, priority) candidates: collectCandidatesForHierarchicalReclaim."""
    cq = ctx.cq
    if cq.cohort is None or cq.preemption.reclaim_within_cohort is PreemptionPolicy.NEVER:
        return [], []
    # QuantitiesFitInQuota on the queue's own node: the preemptor stays within nominal.
    advantage = all(
        book.used(cq.name, r) + v <= (cq.quotas[r].nominal if r in cq.quotas else 0)
        for r, v in ctx.charge.items()
    )
    found: list[_Candidate] = []
    for member in book.cohort_members(cq.cohort):
        if member.name != cq.name and not book.within_nominal(member.name, ctx.needs):
            found += _candidates_in(ctx, member.name, advantage=advantage)
    return (found, []) if advantage else ([], found)


def _candidates_in(ctx: _Context, queue: str, *, advantage: bool) -> list[_Candidate]:
    found = []
    for workload in ctx.state.in_phase(Phase.ADMITTED, queue):
        variant = _classify(ctx, workload, queue, advantage=advantage)
        if variant is not None:
            found.append(_Candidate(workload, queue, variant))
    return found


def _classify(ctx: _Context, workload: Workload, queue: str, *, advantage: bool) -> _Variant | None:
    """hierarchical_preemption.go, classifyPreemptionVariant (None: Never)."""
    held = {} if workload.admission is None else workload.admission.usage
    if not any(held.get(r, 0) > 0 for r in ctx.needs):
        return None
    same = queue == ctx.cq.name
    policy = ctx.cq.preemption
    rule = policy.within_cluster_queue if same else policy.reclaim_within_cohort
    if not satisfies_policy(ctx.state, ctx.preemptor, workload, rule):
        return None
    if same:
        return _Variant.WITHIN_CQ
    if advantage:
        return _Variant.HIERARCHICAL_RECLAIM
    if _above_borrowing_threshold(ctx, workload):
        return _Variant.RECLAIM_WITHOUT_BORROWING
    return _Variant.RECLAIM_WHILE_BORROWING


def _above_borrowing_threshold(ctx: _Context, workload: Workload) -> bool:
    """Not to be taken while the preemptor borrows: `borrowWithinCohort` is Never, or the
    candidate's priority is not lower or above `maxPriorityThreshold`
    (hierarchical_preemption.go, isAboveBorrowingThreshold)."""
    policy = ctx.cq.preemption
    if not policy.borrow_within_cohort:
        return True
    theirs = ctx.state.effective_priority(workload)
    if theirs >= ctx.state.effective_priority(ctx.preemptor):
        return True
    threshold = policy.max_priority_threshold
    return threshold is not None and theirs > threshold


def _ordered(ctx: _Context, candidates: list[_Candidate]) -> list[_Candidate]:
    """common/ordering.go, CandidatesOrdering (no candidate is already evicted here: an
    evicted workload's quota is released at once in this model)."""

    def key(c: _Candidate) -> tuple[bool, int, float, str, str]:
        admitted = c.workload.admission.at.timestamp() if c.workload.admission else 0.0
        return (
            c.cluster_queue == ctx.cq.name,
            ctx.state.effective_priority(c.workload),
            -admitted,
            c.workload.uid or "",
            f"{c.workload.namespace}/{c.workload.name}",
        )

    return sorted(candidates, key=key)


def _under_nominal(ctx: _Context, book: Ledger) -> bool:
    """preemption.go, queueUnderNominalInResourcesNeedingPreemption (strictly below)."""
    quotas = ctx.cq.quotas
    return all(book.used(ctx.cq.name, r) < quotas[r].nominal for r in ctx.needs if r in quotas)


def _valid(ctx: _Context, candidate: _Candidate, trial: Ledger, *, borrowing: bool) -> bool:
    """classical/candidate_generator.go, candidateIsValid (flat cohort: the lowest common
    ancestor is the cohort itself)."""
    if candidate.cluster_queue == ctx.cq.name:
        return True
    if borrowing and candidate.variant is _Variant.RECLAIM_WITHOUT_BORROWING:
        return False
    return not trial.within_nominal(candidate.cluster_queue, ctx.needs)


def _fits(ctx: _Context, trial: Ledger, *, borrowing: bool) -> bool:
    """preemption.go, workloadFits."""
    queue, quotas = ctx.cq.name, ctx.cq.quotas
    for resource, amount in ctx.charge.items():
        nominal = quotas[resource].nominal if resource in quotas else 0
        if not borrowing and trial.used(queue, resource) + amount > nominal:
            return False
        if amount > trial.available(queue, resource):
            return False
    return True


def _minimal_set(
    ctx: _Context, book: Ledger, candidates: Sequence[_Candidate], *, borrowing: bool
) -> tuple[Target, ...]:
    trial = book
    taken: list[_Candidate] = []
    for candidate in candidates:
        if not _valid(ctx, candidate, trial, borrowing=borrowing):
            continue
        trial = trial.discharged(candidate.cluster_queue, _usage(candidate))
        taken.append(candidate)
        if _fits(ctx, trial, borrowing=borrowing):
            return _fill_back(ctx, trial, taken, borrowing=borrowing)
    return ()


def _fill_back(
    ctx: _Context, trial: Ledger, taken: list[_Candidate], *, borrowing: bool
) -> tuple[Target, ...]:
    """preemption.go, fillBackWorkloads, including its swap-with-last removal."""
    for i in range(len(taken) - 2, -1, -1):
        back = trial.charged(taken[i].cluster_queue, _usage(taken[i]))
        if _fits(ctx, back, borrowing=borrowing):
            trial = back
            taken[i] = taken[-1]
            taken.pop()
    return tuple(Target(c.workload, c.cluster_queue, _REASONS[c.variant]) for c in taken)


def _usage(candidate: _Candidate) -> Mapping[str, int]:
    held = candidate.workload.admission
    return {} if held is None else held.usage


def _path(state: KueueState, queue: str) -> str:
    """preemption.go, buildCQPath: "/cohort/queue" or "/queue"; UNKNOWN when unnamed."""
    if not queue:
        return "UNKNOWN"
    cq = state.cluster_queues.get(queue)
    return f"/{queue}" if cq is None or cq.cohort is None else f"/{cq.cohort}/{queue}"
