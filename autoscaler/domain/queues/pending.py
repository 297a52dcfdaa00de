"""Who waits, from several queueing systems at once (Kueue and KAI Scheduler side by side):
one `QueueFacts` out of each source's, for the when-contended planner.

Each system's queues keep their own names (KAI's are "kai/<queue>", which no Kueue
ClusterQueue can be called), so their union is one map and the planner never lets a
waiter of one system be served by freeing a workload of the other: their queues share no
cohort. A failure of any source is the failure of the whole: the planner then frees nothing
for anyone, rather than judging one system's waiters while the other's are unknown.
"""

from __future__ import annotations

from collections.abc import Sequence

from autoscaler.domain.queues.facts import QueueFacts, QueueQuota


def merge_queue_facts(facts: Sequence[QueueFacts]) -> QueueFacts:
    """The union of every source's queues and waiters; failed when any source failed, or
    when two sources name the same queue (their quotas cannot both hold)."""
    if len(facts) == 1:
        return facts[0]
    queues: dict[str, QueueQuota] = {}
    clashes: list[str] = []
    for each in facts:
        for name, queue in each.queues.items():
            if name in queues:
                clashes.append(name)
            queues[name] = queue
    failures = [f"{each.source}: {each.failure}" for each in facts if each.failure is not None]
    failures += [f"queue {name} is read from two sources" for name in sorted(set(clashes))]
    return QueueFacts(
        queues=queues,
        waiters=tuple(waiter for each in facts for waiter in each.waiters),
        source="+".join(each.source for each in facts),
        failure="; ".join(failures) or None,
        notes=tuple(note for each in facts for note in each.notes),
    )
