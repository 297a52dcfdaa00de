"""KAI Scheduler's Queues as `domain/queues.QueueQuota`s: one per leaf queue (KAI schedules
PodGroups in leaf queues only), all in one cohort, each holding what it holds now as its
nominal quota and capped by its GPU limit and its ancestors' (see `queues.py` for why).

GPU amounts: KAI counts GPUs in fractions. What a queue holds (status.allocated) is rounded
up and what it may hold (its limit) rounded down, so the model never sees more room than
there is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal

from autoscaler.adapters.kubernetes.objects import Obj
from autoscaler.domain.policy.management import KAI_COHORT, KAI_FLAVOR, KAI_GPU, kai_cluster_queue
from autoscaler.domain.queues.facts import FlavorQuotas, QueueQuota, ResourceGroup, ResourceQuota
from autoscaler.domain.queues.quantity import parse_quantity

NO_LIMIT = -1  # KAI's "unlimited" for a quota or a limit


@dataclass(frozen=True)
class KaiQueue:
    """One KAI Queue: its parent, its GPU cap (None: no limit) and the GPUs it holds now."""

    name: str
    parent: str | None
    cap: int | None
    allocated: int


@dataclass(frozen=True)
class QueueTree:
    """The leaf queues as QueueQuotas (by KAI queue name), the parent queues' names, and the
    leaves whose cap cannot be told (their waiters' fit is unknown)."""

    leaves: Mapping[str, QueueQuota] = field(default_factory=dict)
    parents: frozenset[str] = frozenset()
    doubts: Mapping[str, str] = field(default_factory=dict)


def parse_queue(obj: Obj) -> KaiQueue:
    """A Queue object; KeyError/TypeError/ValueError when it is malformed."""
    spec = obj.get("spec") or {}
    gpu = (spec.get("resources") or {}).get("gpu") or {}
    allocated = (obj.get("status") or {}).get("allocated") or {}
    held = allocated.get(KAI_GPU, allocated.get("gpu", 0))
    return KaiQueue(
        name=str(obj["metadata"]["name"]),
        parent=str(spec["parentQueue"]) if spec.get("parentQueue") else None,
        cap=_cap(gpu.get("limit"), gpu.get("quota")),
        allocated=parse_quantity(KAI_GPU, held),
    )


def _cap(limit: object, quota: object) -> int | None:
    """Whole GPUs a queue may hold. KAI's limit -1 is no limit; a limit of 0 or none allows
    nothing beyond the quota (KAI's queue documentation), so the quota caps it then."""
    for value in (limit, quota):
        if value is None or Decimal(str(value)) == 0:
            continue
        number = Decimal(str(value))
        return None if number < 0 else int(number.to_integral_value(rounding=ROUND_FLOOR))
    return 0


def tree_of(queues: Iterable[KaiQueue]) -> QueueTree:
    by_name = {queue.name: queue for queue in queues}
    parents = frozenset(q.parent for q in by_name.values() if q.parent is not None)
    leaves = [q for q in by_name.values() if q.name not in parents]
    held = _subtree_usage(leaves, by_name)
    quotas: dict[str, QueueQuota] = {}
    doubts: dict[str, str] = {}
    for leaf in sorted(leaves, key=lambda q: q.name):
        cap, doubt = _effective_cap(leaf, by_name, held)
        quotas[leaf.name] = _quota(leaf, cap)
        if doubt is not None:
            doubts[leaf.name] = doubt
    return QueueTree(quotas, parents, doubts)


def _ancestors(leaf: KaiQueue, by_name: Mapping[str, KaiQueue]) -> tuple[list[KaiQueue], str]:
    """The leaf's ancestors, nearest first, and why the chain is broken ("" when it is not)."""
    chain: list[KaiQueue] = []
    parent = leaf.parent
    while parent is not None:
        queue = by_name.get(parent)
        if queue is None:
            return chain, f"its parent queue {parent} is not among KAI's queues"
        if queue in chain or queue.name == leaf.name:
            return chain, f"its parent queues form a cycle at {parent}"
        chain.append(queue)
        parent = queue.parent
    return chain, ""


def _subtree_usage(leaves: Iterable[KaiQueue], by_name: Mapping[str, KaiQueue]) -> dict[str, int]:
    """GPUs held under each parent: its own status, or its leaves' sum when that is more."""
    sums: dict[str, int] = {}
    for leaf in leaves:
        for ancestor in _ancestors(leaf, by_name)[0]:
            sums[ancestor.name] = sums.get(ancestor.name, 0) + leaf.allocated
    return {name: max(total, by_name[name].allocated) for name, total in sums.items()}


def _effective_cap(
    leaf: KaiQueue, by_name: Mapping[str, KaiQueue], held: Mapping[str, int]
) -> tuple[int | None, str | None]:
    """The leaf's own cap, lowered by each capped ancestor's room: the leaf may grow only by
    what its ancestor has left. Freeing a sibling's GPUs would give the ancestor more room,
    which this leaves out, so the cap errs low (towards freeing nothing)."""
    ancestors, broken = _ancestors(leaf, by_name)
    caps = [leaf.cap] if leaf.cap is not None else []
    for ancestor in ancestors:
        if ancestor.cap is not None:
            caps.append(leaf.allocated + max(0, ancestor.cap - held[ancestor.name]))
    return (min(caps) if caps else None), (broken or None)


def _quota(leaf: KaiQueue, cap: int | None) -> QueueQuota:
    """Nominal = what it holds now, lent whole to the cohort: nothing is free until something
    is freed. Borrowing up to the cap: nominal + borrowing limit = cap."""
    held = leaf.allocated
    quota = ResourceQuota(nominal=held, borrowing_limit=None if cap is None else cap - held)
    flavor = FlavorQuotas(KAI_FLAVOR, {KAI_GPU: quota})
    return QueueQuota(
        name=kai_cluster_queue(leaf.name),
        cohort=KAI_COHORT,
        groups=(ResourceGroup((KAI_GPU,), (flavor,)),),
        usage={(KAI_FLAVOR, KAI_GPU): held},
    )
