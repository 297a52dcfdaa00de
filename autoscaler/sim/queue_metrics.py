"""Kueue's own queue metrics in the recorded history (`backtest --demo`), as Kueue exports
them: `kueue_pending_workloads{cluster_queue, status}` (here every waiter is counted
`inadmissible`: it was tried and did not fit) and `kueue_cluster_queue_nominal_quota{cohort,
cluster_queue, flavor, resource}`. Sampled once a simulated minute, as the stories are played.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from autoscaler.sim.kueue_model import KueueState, Phase

PENDING = "kueue_pending_workloads"
NOMINAL_QUOTA = "kueue_cluster_queue_nominal_quota"
METRICS = (PENDING, NOMINAL_QUOTA)

Series = tuple[dict[str, str], list[tuple[int, float]]]


@dataclass
class QueueRecorder:
    """Each ClusterQueue's pending count at each sampled minute, and its quotas."""

    times: list[int] = field(default_factory=list)
    pending: dict[str, list[int]] = field(default_factory=dict)
    quotas: list[tuple[dict[str, str], float]] = field(default_factory=list)

    def sample(self, kueue: KueueState, at: datetime) -> None:
        if not self.quotas:
            self.quotas = [
                (
                    {
                        "cohort": cq.cohort or "",
                        "cluster_queue": name,
                        "flavor": cq.flavor,
                        "resource": resource,
                    },
                    float(quota.nominal),
                )
                for name, cq in sorted(kueue.cluster_queues.items())
                for resource, quota in sorted(cq.quotas.items())
            ]
        self.times.append(int(at.timestamp()))
        for name in kueue.cluster_queues:
            count = len(kueue.in_phase(Phase.PENDING, name))
            self.pending.setdefault(name, []).append(count)

    def series(self, metric: str, times: Sequence[int]) -> list[Series]:
        """The metric's series at `times` (a sample holds until the next one)."""
        if metric == NOMINAL_QUOTA:
            return [(dict(labels), [(at, value) for at in times]) for labels, value in self.quotas]
        found: list[Series] = []
        for name, counts in sorted(self.pending.items()):
            values = [
                (at, float(counts[index - 1]))
                for at in times
                if (index := bisect_right(self.times, at)) > 0
            ]
            found.append(({"cluster_queue": name, "status": "inadmissible"}, values))
        return found
