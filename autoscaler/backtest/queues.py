"""Who waited in Kueue's queues over the backtest's range, for the `when-contended` mode.

Read from Kueue's own metrics through the same range-query port as the GPU series:
`kueue_pending_workloads{cluster_queue, status}` (Workloads waiting, per ClusterQueue) and
`kueue_cluster_queue_nominal_quota{cohort, cluster_queue, ...}` (each queue's cohort). Kueue's
metrics do not say which ClusterQueue a namespace's LocalQueue points at: that map is given
(`--queue-of NAMESPACE=CLUSTERQUEUE`, or the demo's LocalQueues).

The contention test is "someone waited in the workload's ClusterQueue or its cohort at that
step": coarser than the live service's fit, which frees a workload only for a waiter that it
lets in. A workload whose ClusterQueue is not known is never contended (no data never acts).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from autoscaler.backtest.source import ChunkPlan, RangeQueries

PENDING_METRIC = "kueue_pending_workloads"
QUOTA_METRIC = "kueue_cluster_queue_nominal_quota"
NO_QUEUE_DATA = "no queue data: when-contended not compared"


@dataclass(frozen=True)
class QueueHistory:
    waited: Mapping[str, frozenset[int]]  # ClusterQueue -> unix times someone waited
    cohorts: Mapping[str, str]  # ClusterQueue -> cohort
    queue_of: Mapping[str, str] = field(default_factory=dict)  # namespace -> ClusterQueue

    def contended(self, namespace: str, at: int) -> bool:
        """Whether anyone waited in the namespace's ClusterQueue, or its cohort, at `at`."""
        queue = self.queue_of.get(namespace)
        if queue is None:
            return False
        cohort = self.cohorts.get(queue)
        group = {queue} | {q for q, c in self.cohorts.items() if cohort and c == cohort}
        return any(at in self.waited.get(member, frozenset()) for member in group)


def read_queue_history(
    source: RangeQueries, plan: ChunkPlan, *, queue_of: Mapping[str, str]
) -> QueueHistory | None:
    """Kueue's pending Workloads per ClusterQueue at each slot; None without such series."""
    slot_range = plan.slot_range
    waited: dict[str, set[int]] = {}
    cohorts: dict[str, str] = {}
    found = False
    for first, steps in plan.spans():
        start, end = _utc(first), _utc(first + (steps - 1) * plan.slot)
        step = timedelta(seconds=plan.slot)
        pending = source.query_range(
            f"max_over_time({PENDING_METRIC}[{slot_range}])", start=start, end=end, step=step
        )
        for series in pending.series:
            found = True
            queue = series.labels.get("cluster_queue", "")
            times = waited.setdefault(queue, set())
            times.update(int(float(at)) for at, value in series.values if _positive(value))
        quotas = source.query_range(
            f"max_over_time({QUOTA_METRIC}[{slot_range}])", start=start, end=end, step=step
        )
        for series in quotas.series:
            if series.labels.get("cohort"):
                cohorts[series.labels.get("cluster_queue", "")] = series.labels["cohort"]
    if not found:
        return None
    frozen = {queue: frozenset(times) for queue, times in waited.items()}
    return QueueHistory(waited=frozen, cohorts=cohorts, queue_of=dict(queue_of))


def _positive(value: object) -> bool:
    number = float(str(value))
    return not math.isnan(number) and number > 0


def _utc(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def add_queue_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--queue-of",
        action="append",
        default=[],
        metavar="NAMESPACE=CLUSTERQUEUE",
        help="the ClusterQueue a namespace's workloads are admitted by (repeat); with Kueue's "
        "pending-workload metrics, compares reclaim: always with when-contended",
    )


def queue_map(entries: Sequence[str]) -> dict[str, str]:
    found = {}
    for entry in entries:
        namespace, sign, queue = entry.partition("=")
        if not (sign and namespace and queue):
            raise ValueError(f"--queue-of {entry!r}: expected NAMESPACE=CLUSTERQUEUE")
        found[namespace] = queue
    return found
