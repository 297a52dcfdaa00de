"""One `PendingWork` over several (ISSUE 17): Kueue's queues and KAI Scheduler's, read in turn
each time, merged by `domain/queues/facts.py` (a failure of either is a failure of both)."""

from __future__ import annotations

from autoscaler.core.ports import PendingWork
from autoscaler.domain.queues.facts import QueueFacts, merge_queue_facts


class PendingWorkOf:
    def __init__(self, *sources: PendingWork) -> None:
        if not sources:
            raise ValueError("PendingWorkOf needs at least one source")
        self._sources = sources

    def read_queues(self) -> QueueFacts:
        """Never raises: each source's read never does."""
        return merge_queue_facts([source.read_queues() for source in self._sources])
