"""The `PendingWork` port over NVIDIA KAI Scheduler: its queues and who waits in them, as
`QueueFacts` the when-contended planner (`domain/queues/contention.py`, `domain/queues/fit.py`)
judges
unchanged, beside or instead of Kueue's.

Calls per read, three lists: KAI's Queues, its PodGroups, and the Pending pods bound to no
node (field selector; each names its PodGroup in the annotation `pod-group-name`).

The model. A PodGroup that waits is one KAI found no room for now, so nothing is free:
- each leaf queue is a ClusterQueue "kai/<queue>" with one flavor "kai" and one resource,
  `nvidia.com/gpu` in whole GPUs, whose nominal quota is what it holds now
  (status.allocated, rounded up) and lent whole to one cohort of every KAI queue (KAI
  reclaims across queues), so a waiter never fits already;
- the queue's GPU limit caps it (nominal + borrowing limit = the limit, rounded down; -1 is
  no cap; a limit of 0 or none caps it at its quota, KAI's documented meaning), lowered by
  each capped ancestor's room left;
- the rows of KAI-managed RayClusters carry the same queue name and usage
  (`management.kai_cluster_queue`, (`kai`, `nvidia.com/gpu`)): freeing one gives its GPUs to
  the cohort, and a waiter fits exactly when the GPUs freed cover its request within its
  queue's cap.
Not modelled, and which way that errs:
- node placement: GPUs freed on several nodes may not host a waiter's pod that needs them on
  one node, nor meet its node selector or topology; KAI then leaves it pending and the
  stop was in vain. Not on the safe side; the stopped workload was idle, and idle by the
  rule's own window, so the loss is a restart, never a running job's work.
- GPUs already free: counted as none (KAI judged them not enough, or unusable), so more may
  be freed than strictly needed. Not on the safe side, for the same idle workloads.
- GPU sharing (gpu-fraction, gpu-memory) and MIG slices: such a waiter's fit is unknown and
  nothing is freed for it (safe); a fractional row is never stopped at all.
- KAI's fair-share order and queue priorities: waiters are taken oldest first, with no
  priority; when several wait, KAI may give the freed GPUs to another waiter than the one
  named. Someone who waits gets them; the beneficiary named may be wrong.
- preemption and reclaim by KAI itself (a waiter under its fair share may evict others): not
  counted, so the model may free for a waiter KAI would have served anyway. Not on the safe
  side, but only ever for a waiter that truly waits.
- an ancestor's cap ignores what freeing a sibling gives back: errs towards "does not fit".
A queue or PodGroup that cannot be judged (unknown or parent queue, unreadable requests)
makes that waiter "fit unknown", never "nobody waits". A failed read (forbidden, KAI's CRDs
not installed) is `QueueFacts.failure`; `read_queues` never raises.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from autoscaler.adapters.kai.queue_tree import KaiQueue, parse_queue, tree_of
from autoscaler.adapters.kai.waiters import pending_pods_by_group, waiters_of
from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kubernetes.objects import MALFORMED, Obj
from autoscaler.adapters.kubernetes.resources import KAI_PODGROUPS, KAI_QUEUES, PODS, log_name
from autoscaler.core.errors import ClusterError, NotFound
from autoscaler.domain.queues.facts import QueueFacts

SOURCE = "kai-podgroups"
UNSCHEDULED = "status.phase=Pending,spec.nodeName="
_MALFORMED = (*MALFORMED, ArithmeticError)  # GPU amounts are rounded as Decimals


class KaiQueues:
    """`PendingWork` for KAI Scheduler (see the module)."""

    def __init__(self, *, client: KubeClient, logger: logging.Logger | None = None) -> None:
        self._client = client
        self._log = logger or logging.getLogger(__name__)

    def read_queues(self) -> QueueFacts:
        try:
            queues = self._client.list_objects(KAI_QUEUES).items
            podgroups = self._client.list_objects(KAI_PODGROUPS).items
            pods = self._client.list_objects(PODS, field_selector=UNSCHEDULED).items
        except NotFound as exc:
            return self._failed(f"KAI Scheduler's queues are not served (is KAI installed?): {exc}")
        except ClusterError as exc:
            return self._failed(f"cannot read KAI Scheduler's queues: {exc}")
        tree = tree_of(self._parsed(queues))
        found = waiters_of(podgroups, pending_pods_by_group(pods), tree)
        for name, why in found.malformed.items():  # left out: it cannot be named a waiter
            self._log.warning("skipping malformed KAI PodGroup %s: %s", name, why)
        return QueueFacts(
            queues={**{q.name: q for q in tree.leaves.values()}, **found.stand_ins},
            waiters=found.waiters,
            source=SOURCE,
        )

    def _failed(self, why: str) -> QueueFacts:
        self._log.warning("%s; when-contended rules stop nothing for KAI", why)
        return QueueFacts(source=SOURCE, failure=why)

    def _parsed(self, queues: Iterable[Obj]) -> list[KaiQueue]:
        parsed = []
        for obj in queues:
            try:
                parsed.append(parse_queue(obj))
            except _MALFORMED as exc:  # its PodGroups' fit is unknown: the queue is unknown
                self._log.warning("skipping malformed KAI Queue %s: %s", log_name(obj), exc)
        return parsed
