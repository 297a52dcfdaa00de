"""Kueue's fair sharing in a flat cohort: which waiting head Kueue considers first.

With fair sharing on, Kueue's quota fit is unchanged; what changes is the order in which it
considers the heads of the cohort's ClusterQueues (one head per ClusterQueue per scheduling
cycle), and so which head a freed quota goes to. Kueue's source, read at ff69552e:

- pkg/cache/scheduler/fair_sharing.go `dominantResourceShare`: for each (flavor, resource) of
  the ClusterQueue's quota, what it uses beyond its nominal quota (its head's request
  included) is summed per resource name; each sum, times 1000, over what the cohort could
  lend of that resource (`calculateLendable`: in a flat cohort, the members' nominal quota
  less what each keeps under a lending limit, over every flavor) is a ratio; the largest is
  the dominant resource share, divided by `spec.fairSharing.weight` (default 1; a weight of
  0 while borrowing ranks after every positive weight, `CompareDRS`). A queue that does not
  borrow has share 0.
- pkg/scheduler/fair_sharing_iterator.go `entryComparer.less`, run as a tournament at the
  cohort after each admission (`pop`): (1) the head whose queue does not borrow on the
  (flavor, resource) pairs the head requests comes first (`FairSharingPrioritizeNonBorrowing`,
  beta, on by default since v0.17); (2) the lower share, computed with the head's usage
  added (`computeDRS`); (3) the higher priority (`PrioritySortingWithinCohort`, on by
  default); (4) the older. Steps (1) and (3) follow the gates as `FairSharingOrder` says
  (Kueue's Configuration's `featureGates`, else Kueue's defaults); with a gate off, its
  step is skipped, as Kueue skips it. `PrioritizePreemptorWorkloads` (alpha, off by
  default) is not modelled. The Cohort's own weight ranks a child cohort against its
  siblings: it does not count in a flat cohort, whose root has no siblings.

Hierarchical cohorts are not modelled (the adapter marks such queues unmodelled).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import cmp_to_key

from autoscaler.domain.models import WorkloadRef
from autoscaler.domain.queues.facts import (
    FairSharingOrder,
    FlavorResource,
    QueueQuota,
    Waiter,
)
from autoscaler.domain.queues.fit import Fit, FitOutcome, Freed, cohort_of, fit

DEFAULT_WEIGHT = 1.0


@dataclass(frozen=True)
class Share:
    """One ClusterQueue's dominant resource share (fair_sharing.go `DRS`)."""

    weight: float
    ratio: float = 0.0  # unweighted, per mille of what the cohort lends of the resource
    dominant: str = ""  # the resource that gave the ratio; "" when it borrows nothing
    borrowed: frozenset[FlavorResource] = frozenset()

    @property
    def borrowing(self) -> bool:
        return bool(self.borrowed)

    def borrows_on(self, keys: Iterable[FlavorResource]) -> bool:
        """`DRS.IsBorrowingOn`: borrowing on one of these (flavor, resource) pairs."""
        return any(key in self.borrowed for key in keys)

    @property
    def weighted(self) -> float:
        """`PreciseWeightedShare`: 0 without borrowing, infinite for a zero weight."""
        if self.ratio == 0:
            return 0.0
        if self.weight == 0:
            return math.inf
        return self.ratio / self.weight

    @property
    def rounded(self) -> int:
        """`roundedWeightedShare`: what Kueue reports in status.fairSharing.weightedShare."""
        if self.zero_weight_borrows:
            return 2**63 - 1  # math.MaxInt64
        return math.ceil(self.weighted)

    @property
    def zero_weight_borrows(self) -> bool:
        return self.weight == 0 and self.ratio != 0

    def text(self) -> str:
        """As Kueue reports it in status.fairSharing.weightedShare (rounded up)."""
        if not self.ratio:
            return "share 0"
        if self.zero_weight_borrows:
            return f"share unbounded ({self.dominant}, weight 0)"
        return f"share {self.rounded} ({self.dominant}, weight {self.weight:g})"


def compare(a: Share, b: Share) -> int:
    """`CompareDRS`: negative when `a` is served first."""
    if a.zero_weight_borrows and b.zero_weight_borrows:
        return _sign(a.ratio - b.ratio)
    if a.zero_weight_borrows:
        return 1
    if b.zero_weight_borrows:
        return -1
    return _sign(a.weighted - b.weighted)


def _sign(value: float) -> int:
    return (value > 0) - (value < 0)


def lendable(members: Iterable[QueueQuota]) -> dict[str, int]:
    """Per resource name, what a flat cohort's members lend it, over every flavor."""
    total: dict[str, int] = {}
    for member in members:
        for (_, name), quota in member.quotas():
            total[name] = total.get(name, 0) + quota.nominal - quota.kept
    return total


def share(
    queue: QueueQuota,
    queues: Mapping[str, QueueQuota],
    adding: Mapping[FlavorResource, int] | None = None,
) -> Share:
    """The queue's dominant resource share with `adding` charged to it (its head's usage)."""
    weight = queue.fair_weight
    if queue.cohort is None:
        return Share(weight)
    adding = adding or {}
    borrowed: dict[str, int] = {}
    keys: list[FlavorResource] = []
    for key, quota in queue.quotas():
        beyond = adding.get(key, 0) + queue.usage.get(key, 0) - quota.nominal
        if beyond > 0:
            borrowed[key[1]] = borrowed.get(key[1], 0) + beyond
            keys.append(key)
    if not borrowed:
        return Share(weight)
    pool = lendable(cohort_of(queue, queues))
    ratio, dominant = 0.0, ""
    for name in sorted(borrowed):
        if pool.get(name, 0) > 0:
            candidate = borrowed[name] * 1000.0 / pool[name]
            if candidate > ratio:
                ratio, dominant = candidate, name
    return Share(weight, ratio, dominant, frozenset(keys))


@dataclass(frozen=True)
class Head:
    """A ClusterQueue's head as Kueue nominates it: the waiter and what its admission charges."""

    waiter: Waiter
    charge: Mapping[FlavorResource, int]


@dataclass(frozen=True)
class Ranked:
    head: Head
    share: Share


DEFAULT_ORDER = FairSharingOrder()


def rank(
    heads: Sequence[Head],
    queues: Mapping[str, QueueQuota],
    order: FairSharingOrder = DEFAULT_ORDER,
) -> list[Ranked]:
    """The heads (one per ClusterQueue of a flat cohort) in the order of one tournament."""
    ranked = [
        Ranked(head, share(queues[head.waiter.cluster_queue], queues, head.charge))
        for head in heads
    ]

    def compare(a: Ranked, b: Ranked) -> int:
        return -1 if serves_before(a, b, order) else int(serves_before(b, a, order))

    return sorted(ranked, key=cmp_to_key(compare))


def serves_before(a: Ranked, b: Ranked, order: FairSharingOrder = DEFAULT_ORDER) -> bool:
    """`entryComparer.less`: whether Kueue considers head `a` before head `b`."""
    return _order_key(a, order) < _order_key(b, order)


def _order_key(entry: Ranked, order: FairSharingOrder) -> tuple[object, ...]:
    waiter = entry.head.waiter
    requested = [key for key, qty in entry.head.charge.items() if qty > 0]
    zero_weight_borrows = entry.share.zero_weight_borrows
    return (
        order.prioritize_non_borrowing and entry.share.borrows_on(requested),
        zero_weight_borrows,
        entry.share.ratio if zero_weight_borrows else entry.share.weighted,
        -waiter.priority if order.priority_sorting else 0,
        waiter.created_at,
        waiter.ref,
    )


Admission = tuple[Waiter, Fit]  # a waiter Kueue admits, and its fit (its flavors)


def settle(
    queues: Mapping[str, QueueQuota], *, freed: Freed, admissions: Sequence[Admission] = ()
) -> dict[str, QueueQuota]:
    """The quotas once `freed` is given back and each admission is charged to its queue."""
    deltas: dict[str, dict[FlavorResource, int]] = {}
    for name, given_back in freed.items():
        queue_delta = deltas.setdefault(name, {})
        for key, qty in given_back.items():
            queue_delta[key] = queue_delta.get(key, 0) - qty
    for waiter, admitted in admissions:
        queue_delta = deltas.setdefault(waiter.cluster_queue, {})
        for key, qty in admitted.charge().items():
            queue_delta[key] = queue_delta.get(key, 0) + qty
    settled = dict(queues)
    for name, delta in deltas.items():
        queue = queues.get(name)
        if queue is None:
            continue
        usage = dict(queue.usage)
        for key, qty in delta.items():
            usage[key] = max(0, usage.get(key, 0) + qty)
        settled[name] = replace(queue, usage=usage)
    return settled


def ordered_by_fair_sharing(queue: QueueQuota | None) -> bool:
    """Whether Kueue picks among this queue's cohort's heads by fair sharing."""
    return queue is not None and queue.fair_sharing and queue.cohort is not None


class TurnKind(StrEnum):
    FIRST = "first"  # Kueue admits the waiter, after the heads it serves first (if any)
    BEHIND = "behind"  # heads served first leave the waiter without quota
    UNKNOWN = "unknown"  # a rival head cannot be judged: the order cannot be told


@dataclass(frozen=True)
class Turn:
    kind: TurnKind
    reason: str
    ahead: tuple[Admission, ...] = ()  # heads Kueue admits before the waiter
    own: Fit | None = None  # the waiter's fit once they are admitted (FIRST)


def turn_of(
    waiter: Waiter,
    queues: Mapping[str, QueueQuota],
    rivals: Sequence[Waiter],
    order: FairSharingOrder = DEFAULT_ORDER,
) -> Turn:
    """Whether Kueue, ordering the cohort's heads by fair sharing, gives `waiter` the quota
    of `queues` (frees already given back). `rivals`: the heads of the cohort's other
    ClusterQueues. Kueue runs the tournament again after each admission, each ClusterQueue's
    head once per cycle (fair_sharing_iterator.go `pop`); a head that does not fit takes
    nothing and is left out (it would lose its turn in Kueue, `processEntry`: NoFit)."""
    ahead: list[Admission] = []
    contenders = list(rivals)
    while True:
        own = fit(waiter, queues)
        if not own.fits:
            first = ", ".join(f"{w.ref} of {w.cluster_queue}" for w, _ in ahead)
            return Turn(
                TurnKind.BEHIND,
                f"by fair sharing Kueue serves {first} first{_per(order)}; then {own.reason}",
                tuple(ahead),
            )
        heads = [Head(waiter, own.charge())]
        fits: dict[WorkloadRef, Fit] = {}
        for rival in contenders:
            theirs = fit(rival, queues)
            if theirs.outcome is FitOutcome.UNKNOWN:
                why = f"the head {rival.ref} of {rival.cluster_queue}: {theirs.reason}"
                return Turn(TurnKind.UNKNOWN, f"fair-sharing order unknown: {why}")
            if theirs.fits:
                heads.append(Head(rival, theirs.charge()))
                fits[rival.ref] = theirs
        ranked = rank(heads, queues, order)
        winner = ranked[0].head.waiter
        if winner is waiter:
            return Turn(TurnKind.FIRST, _first_text(ranked, ahead, order), tuple(ahead), own)
        ahead.append((winner, fits[winner.ref]))
        queues = settle(queues, freed={}, admissions=[ahead[-1]])
        contenders = [w for w in contenders if w is not winner]


def _per(order: FairSharingOrder) -> str:
    """Which source said fair sharing is on, for the judgement."""
    return f" (fair sharing on per {order.source})" if order.source else ""


def _first_text(
    ranked: Sequence[Ranked], ahead: Sequence[Admission], order: FairSharingOrder
) -> str:
    own = ranked[0]
    others = [f"{r.head.waiter.cluster_queue} {r.share.text()}" for r in ranked[1:]]
    text = f"first by fair sharing ({own.head.waiter.cluster_queue} {own.share.text()}"
    text += f"; before {', '.join(others)})" if others else ")"
    if ahead:
        text += f", after {', '.join(w.cluster_queue for w, _ in ahead)} admitted"
    return text + _per(order)
