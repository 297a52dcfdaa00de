"""Would Kueue admit this pending Workload without preempting anything? Its quota fit, as
Kueue's scheduler computes it (kubernetes-sigs/kueue pkg/scheduler/flavorassigner/
flavorassigner.go and pkg/cache/scheduler/resource_node.go), for flat cohorts only.

    fit(waiter, queues, freed) -> Fit   # outcome FITS / DOES_NOT_FIT / UNKNOWN, with a reason

`freed` is what stopping some admitted workloads would give back: per ClusterQueue, per
(flavor, resource). The model:
- the waiter's pod sets are assigned in order, each counting what the earlier ones already
  took (`assignFlavors`); when the ClusterQueue covers `pods`, a pod set requests one per
  pod (`assignFlavors` sets ResourcePods to the pod set's count);
- for each resource group a pod set requests, the flavors are tried in the queue's order
  (`domain/queues/flavor_search.py`): a flavor whose taints the pod set does not tolerate,
  or whose node labels its node selector or required affinity exclude, is skipped
  (`domain/queues/placement.py`); `flavorFungibility` and the ClusterQueue's preemption
  policies decide as Kueue's `findFlavorForPodSets` does;
- available quota is Kueue's `available()`: the queue's unused kept part (`nominal -
  lendingLimit`) plus what its cohort has left, which is negative when the cohort already
  uses more than it holds (quotas cut, a queue moved) and then eats into the kept part; a
  borrowing limit caps what comes from the cohort. A request beyond `potentialAvailable()`
  (kept part plus all the cohort lends, capped by the borrowing limit) never fits;
- where the quota falls short, Kueue simulates preemption when the request is within the
  nominal quota, or while borrowing when `canPreemptWhileBorrowing`: `borrowWithinCohort`
  is not Never, or fair sharing is on and `reclaimWithinCohort` is not Never (`QueueQuota.
  fair_sharing`). The simulation finds no candidate (a known answer) when no policy could
  pick an admitted workload in that flavor and resource: ours (`withinClusterQueue`) in the
  queue, or a borrowing cohort member's under `reclaimWithinCohort` (with fair sharing only
  that one, preemption.go `findCandidates`; without, `borrowWithinCohort` too).
Fair sharing changes nothing else in the fit (the order in which Kueue serves the heads is
`domain/queues/fair_sharing.py`'s).
UNKNOWN, with the reason: the queue or a cohort member is marked `unmodelled` (hierarchical
cohorts, topology, admission checks, StrictFIFO); the waiter is (`Waiter.unmodelled`, e.g.
an affinity the adapter cannot read); the answer depends on a preemption simulation that
may find candidates (classical, or fair sharing's strategies LessThanOrEqualToFinalShare /
LessThanInitialShare over per-workload shares, which are not modelled); Kueue cannot
evaluate a pod set's affinity; or it does not fit whole, a pod set has a `minCount` and the
waiter fits with its minCount pods (partial admission admits some count in between, which
is not modelled; when even the minCount pods do not fit, it does not fit). Not modelled at
all: Kueue resuming a waiter's flavor search where its last attempt stopped (which matters
only where that attempt stopped at a preemption, an answer this model gives as unknown),
and `quotaCheckStrategy: IgnoreUndeclared`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum

from autoscaler.domain.queues.facts import (
    NEVER,
    FlavorQuotas,
    FlavorResource,
    PodSet,
    QueueQuota,
    ResourceGroup,
    ResourceQuota,
    Waiter,
)
from autoscaler.domain.queues.flavor_search import (
    MAYBE,
    Granular,
    Mode,
    Trial,
    choose_flavor,
)
from autoscaler.domain.queues.placement import PlacementError, flavor_mismatch

Freed = Mapping[str, Mapping[FlavorResource, int]]  # ClusterQueue -> (flavor, resource) -> qty
NOTHING_FREED: Freed = {}
PODS = "pods"


class FitOutcome(StrEnum):
    FITS = "fits"
    DOES_NOT_FIT = "does not fit"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Fit:
    """The outcome, why, and for a fit: the flavor of each resource of each pod set, what
    the admission charges its ClusterQueue per (flavor, resource), and how much of that it
    would borrow beyond the queue's nominal quota."""

    outcome: FitOutcome
    reason: str
    pod_sets: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # -> resource -> flavor
    charged: Mapping[FlavorResource, int] = field(default_factory=dict)
    borrowing: Mapping[FlavorResource, int] = field(default_factory=dict)

    @property
    def fits(self) -> bool:
        return self.outcome is FitOutcome.FITS

    @property
    def flavors(self) -> dict[str, str]:
        """resource -> flavor over every pod set (where pod sets differ, the last one's)."""
        return {name: flavor for each in self.pod_sets.values() for name, flavor in each.items()}

    def charge(self) -> dict[FlavorResource, int]:
        """What the admission would charge its ClusterQueue, per (flavor, resource)."""
        return dict(self.charged)


def quota_of(queue: QueueQuota, key: FlavorResource) -> ResourceQuota | None:
    """The queue's quota for one (flavor, resource); None where the queue does not define it."""
    return next((quota for defined, quota in queue.quotas() if defined == key), None)


def fit(waiter: Waiter, queues: Mapping[str, QueueQuota], freed: Freed = NOTHING_FREED) -> Fit:
    """Whether `waiter` fits its ClusterQueue once `freed` is given back (see the module)."""
    queue = queues.get(waiter.cluster_queue)
    if queue is None:
        return Fit(FitOutcome.UNKNOWN, f"ClusterQueue {waiter.cluster_queue} is not known")
    ledger = _Ledger(queue, cohort_of(queue, queues), freed)
    doubts = [f"ClusterQueue {q.name}: {why}" for q in ledger.members for why in q.unmodelled]
    doubts += [f"Workload {waiter.ref}: {why}" for why in waiter.unmodelled]
    if doubts:
        return Fit(FitOutcome.UNKNOWN, "; ".join(doubts))
    result = _assign(waiter, ledger)
    partial = [p.name for p in waiter.pod_sets if p.min_count is not None and p.min_count < p.count]
    if result.outcome is not FitOutcome.DOES_NOT_FIT or not partial:
        return result
    # Kueue's partial admission (scheduler.go, PodSetReducer) looks for counts down to each
    # minCount: if even those pods do not fit, no count does (fewer pods never fit worse).
    fewest = replace(waiter, pod_sets=tuple(_at_min_count(p) for p in waiter.pod_sets))
    reduced = _assign(fewest, ledger)
    if reduced.outcome is FitOutcome.DOES_NOT_FIT:
        return Fit(FitOutcome.DOES_NOT_FIT, f"{result.reason}; not even with the minCount pods")
    why = f"partial admission (minCount of pod set {', '.join(partial)}) is not modelled"
    return Fit(FitOutcome.UNKNOWN, f"{result.reason}; {why}")


def _at_min_count(pod_set: PodSet) -> PodSet:
    """The pod set scaled down to its minCount, as Kueue's PodSetResources.ScaledTo does."""
    if pod_set.min_count is None or pod_set.min_count >= pod_set.count or pod_set.count <= 0:
        return pod_set
    per_pod = {name: qty // pod_set.count for name, qty in pod_set.requests.items()}
    scaled = {name: qty * pod_set.min_count for name, qty in per_pod.items()}
    return replace(pod_set, count=pod_set.min_count, requests=scaled)


def demand_of(waiter: Waiter, queue: QueueQuota) -> list[tuple[PodSet, dict[str, int]]]:
    """Each pod set with what it requests of the queue: `pods` added when the queue covers
    it; a waiter read without pod sets is one demand, its requests taken as they are."""
    if not waiter.pod_sets:
        return [(PodSet("main", 1, waiter.requests), dict(sorted(waiter.requests.items())))]
    covers_pods = any(PODS in group.covered for group in queue.groups)
    demand = []
    for pod_set in waiter.pod_sets:
        requests = dict(pod_set.requests)
        if covers_pods:
            requests[PODS] = pod_set.count
        demand.append((pod_set, dict(sorted(requests.items()))))
    return demand


def _assign(waiter: Waiter, ledger: _Ledger) -> Fit:
    queue = ledger.queue
    assigned: dict[FlavorResource, int] = {}
    chosen: dict[str, dict[str, str]] = {}
    covered = {name for group in queue.groups for name in group.covered}
    for pod_set, requests in demand_of(waiter, queue):
        uncovered = [name for name, qty in requests.items() if name not in covered and qty > 0]
        if uncovered:
            why = f"{queue.name} does not cover {', '.join(uncovered)}"
            return Fit(FitOutcome.DOES_NOT_FIT, why)
        flavors: dict[str, str] = {}
        for group in queue.groups:
            wanted = {name: requests[name] for name in group.covered if name in requests}
            if not wanted:
                continue
            try:
                trials = [
                    ledger.trial(quotas, pod_set, wanted, assigned) for quotas in group.flavors
                ]
            except PlacementError as exc:
                return Fit(FitOutcome.UNKNOWN, f"pod set {pod_set.name}: {exc}")
            choice = choose_flavor(trials, queue.policy)
            if choice.unknown is not None:
                return Fit(FitOutcome.UNKNOWN, f"pod set {pod_set.name}: {choice.unknown}")
            if choice.flavor is None:
                misses = [m for t in trials for m in (t.misses or (t.skipped or "",)) if m]
                return Fit(FitOutcome.DOES_NOT_FIT, "; ".join(misses) or _no_flavor(group))
            flavors.update({name: choice.flavor for name in wanted})
        for name, flavor in flavors.items():
            assigned[(flavor, name)] = assigned.get((flavor, name), 0) + requests[name]
        chosen[pod_set.name] = flavors
    return _fits(chosen, assigned, ledger)


def _no_flavor(group: ResourceGroup) -> str:
    return f"the resource group of {', '.join(group.covered)} has no flavor"


def cohort_of(queue: QueueQuota, queues: Mapping[str, QueueQuota]) -> tuple[QueueQuota, ...]:
    """The members of the queue's cohort: the queue first, then the others by name; only the
    queue when it has no cohort."""
    if queue.cohort is None:
        return (queue,)
    others = (q for q in queues.values() if q.cohort == queue.cohort and q.name != queue.name)
    return (queue, *sorted(others, key=lambda q: q.name))


def _fits(
    chosen: Mapping[str, Mapping[str, str]], charged: Mapping[FlavorResource, int], ledger: _Ledger
) -> Fit:
    borrowing = {
        key: borrowed
        for key, qty in charged.items()
        if (borrowed := ledger.borrowing(key, qty)) > 0
    }
    parts = []
    for pod_set, flavors in chosen.items():
        by_flavor: dict[str, list[str]] = {}
        for name, flavor in flavors.items():
            by_flavor.setdefault(flavor, []).append(name)
        named = "; ".join(
            f"flavor {flavor} for {', '.join(names)}" for flavor, names in by_flavor.items()
        )
        parts.append(named if len(chosen) == 1 else f"pod set {pod_set}: {named}")
    lent = [f"{qty} {name} in {flavor}" for (flavor, name), qty in borrowing.items()]
    reason = "fits: " + "; ".join(parts) + (f", borrowing {', '.join(lent)}" if lent else "")
    return Fit(FitOutcome.FITS, reason, chosen, dict(charged), borrowing)


@dataclass(frozen=True)
class _Ledger:
    """Quota and usage, after the frees, of one ClusterQueue and its cohort's members, read
    as Kueue's resource nodes (pkg/cache/scheduler/resource_node.go) read them."""

    queue: QueueQuota
    members: tuple[QueueQuota, ...]  # the queue first; only the queue without a cohort
    freed: Freed

    def used(self, member: QueueQuota, key: FlavorResource) -> int:
        given_back = self.freed.get(member.name, {}).get(key, 0)
        return max(0, member.usage.get(key, 0) - given_back)

    def available(self, key: FlavorResource, quota: ResourceQuota) -> int:
        """clusterqueue_snapshot.go `Available()`: resource_node.go `available()`, whose
        cohort part is negative when the cohort is oversubscribed, clamped at zero last."""
        used = self.used(self.queue, key)
        if self.queue.cohort is None:
            return max(0, quota.nominal - used)
        kept = quota.kept
        from_cohort = self._cohort_available(key)
        if quota.borrowing_limit is not None:
            stored = quota.nominal - kept
            from_cohort = min(stored - max(0, used - kept) + quota.borrowing_limit, from_cohort)
        return max(0, max(0, kept - used) + from_cohort)

    def potential(self, key: FlavorResource, quota: ResourceQuota) -> int:
        """resource_node.go `potentialAvailable()`: the most the queue could ever hold."""
        if self.queue.cohort is None:
            return quota.nominal
        most = quota.kept + self._cohort_quota(key)
        if quota.borrowing_limit is not None:
            most = min(quota.nominal + quota.borrowing_limit, most)
        return most

    def _cohort_quota(self, key: FlavorResource) -> int:
        return sum(q.nominal - q.kept for m in self.members if (q := quota_of(m, key)) is not None)

    def _cohort_available(self, key: FlavorResource) -> int:
        drawn = sum(
            max(0, self.used(m, key) - q.kept)
            for m in self.members
            if (q := quota_of(m, key)) is not None
        )
        return self._cohort_quota(key) - drawn

    def borrows(self, key: FlavorResource, total: int) -> bool:
        quota = quota_of(self.queue, key)
        nominal = quota.nominal if quota is not None else 0
        return self.queue.cohort is not None and self.used(self.queue, key) + total > nominal

    def trial(
        self,
        quotas: FlavorQuotas,
        pod_set: PodSet,
        wanted: Mapping[str, int],
        assigned: Mapping[FlavorResource, int],
    ) -> Trial:
        """One flavor tried for a pod set's group (flavorassigner.go `fitsResourceQuota`)."""
        flavor = quotas.flavor
        if skipped := flavor_mismatch(flavor, quotas.nodes, pod_set.placement):
            return Trial(flavor, skipped=skipped)
        modes: dict[str, Granular | None] = {}
        misses: list[str] = []
        for name, qty in wanted.items():
            key = (flavor, name)
            total = assigned.get(key, 0) + qty
            mode, miss = self._mode(key, total)
            modes[name] = mode
            if miss:
                misses.append(miss)
        return Trial(flavor, modes=modes, misses=tuple(misses))

    def _mode(self, key: FlavorResource, total: int) -> tuple[Granular | None, str | None]:
        flavor, name = key
        quota = quota_of(self.queue, key)
        if quota is None:
            return Granular(Mode.NO_FIT, 0), f"flavor {flavor} has no quota for {name}"
        level = 1 if self.borrows(key, total) else 0
        available = self.available(key, quota)
        if total <= available:
            return Granular(Mode.FIT, level), None
        miss = f"needs {total} {name} in flavor {flavor}, {available} available: " + self._numbers(
            key, quota, available
        )
        if total > self.potential(key, quota):
            return Granular(Mode.NO_FIT, 0), miss
        if quota.nominal >= total or self._preempts_while_borrowing():
            return (MAYBE if self._candidates(key) else Granular(Mode.NO_CANDIDATES, level)), miss
        return Granular(Mode.NO_FIT, level), miss

    def _preempts_while_borrowing(self) -> bool:
        """flavorassigner.go `canPreemptWhileBorrowing`: with fair sharing, any
        reclaimWithinCohort but Never lets Kueue preempt while borrowing, as
        borrowWithinCohort does with or without it."""
        policy = self.queue.policy
        if policy.borrow_within_cohort != NEVER:
            return True
        return self.queue.fair_sharing and policy.reclaim_within_cohort != NEVER

    def _candidates(self, key: FlavorResource) -> bool:
        """Whether a preemption policy could pick any admitted workload in this (flavor,
        resource): ours for withinClusterQueue, a borrowing member's for the cohort ones
        (with fair sharing, reclaimWithinCohort's only: preemption.go `findCandidates`)."""
        policy = self.queue.policy
        if policy.within_cluster_queue != NEVER and self.used(self.queue, key) > 0:
            return True
        cohort_policies = {policy.reclaim_within_cohort}
        if not self.queue.fair_sharing:
            cohort_policies.add(policy.borrow_within_cohort)
        if cohort_policies == {NEVER}:
            return False
        return any(
            self.used(m, key) > q.nominal
            for m in self.members[1:]
            if (q := quota_of(m, key)) is not None
        )

    def _numbers(self, key: FlavorResource, quota: ResourceQuota, available: int) -> str:
        used = self.used(self.queue, key)
        numbers = f"nominal {quota.nominal}, used {used}"
        if self.queue.cohort is None:
            return numbers + ", no cohort"
        unused = max(0, quota.nominal - used)
        numbers += f", cohort lends {max(0, available - unused)}"
        if unused > available:
            numbers += f", {unused - available} of its unused quota lent to the cohort"
        if quota.borrowing_limit is not None:
            numbers += f", borrowing limit {quota.borrowing_limit}"
        return numbers

    def borrowing(self, key: FlavorResource, qty: int) -> int:
        quota = quota_of(self.queue, key)
        nominal = quota.nominal if quota is not None else 0
        used = self.used(self.queue, key)
        return max(0, used + qty - nominal) - max(0, used - nominal)
