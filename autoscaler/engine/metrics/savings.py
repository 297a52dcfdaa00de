"""The savings report's figures as Prometheus gauges, per namespace and LocalQueue only (the
per-owner figures live in the REST report: an owner label would grow without bound).

Each gauge is the figure over the trailing `period` (24 hours by default) as of the latest
refresh, recomputed from the audit trail at most every `refresh`, so a replica reads the
runtime-state ConfigMap a few times an hour, not each cycle. Every replica reports the same
values: a dashboard takes their `max`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from prometheus_client import CollectorRegistry, Gauge

from autoscaler.core.errors import ClusterError
from autoscaler.core.ports import StateBacking
from autoscaler.domain.audit.savings import Figures, Group, per_queue, savings
from autoscaler.domain.models import Snapshot
from autoscaler.domain.program import METRIC_PREFIX

PREFIX = METRIC_PREFIX + "savings_"
PERIOD = timedelta(hours=24)  # the trailing period every gauge covers
REFRESH = timedelta(minutes=5)  # at most this often the runtime-state ConfigMap is read
LABELS = ("namespace", "queue")
_FIGURES: dict[str, tuple[str, Callable[[Figures], float]]] = {
    "held_idle_gpu_hours": (
        "GPU-hours held idle over the trailing period: before our deactivations, and idle now.",
        lambda f: f.held_idle_gpu_hours,
    ),
    "held_not_running_gpu_hours": (
        "GPU-hours of quota held without work over the trailing period (admitted, no GPU pod "
        "running): before our deactivations, and not running now.",
        lambda f: f.held_not_running_gpu_hours,
    ),
    "reclaimed_gpu_hours": (
        "GPU-hours reclaimed over the trailing period: from our deactivation until reactivated.",
        lambda f: f.reclaimed_gpu_hours,
    ),
    "wait_shortened_seconds": (
        "Queue wait shortened over the trailing period (bigger is better): per waiter admitted "
        "into the quota one of our stops freed, how much sooner than it would otherwise have "
        "been (a lower bound while wait_shortened_at_least is 1).",
        lambda f: f.wait_shortened.total_seconds(),
    ),
    "wait_shortened_at_least": (
        "1 when the queue wait shortened is a lower bound: a stopped workload was not seen "
        "ending, so when the waiter would otherwise have been admitted is not known.",
        lambda f: float(f.wait_shortened_at_least),
    ),
    "waiters_admitted": (
        "Waiters admitted over the trailing period into the quota one of our stops freed.",
        lambda f: f.waiters_admitted,
    ),
    "deactivations": (
        "Our stops in the trailing period that last (deactivations), apart from the requeues.",
        lambda f: f.deactivations,
    ),
    "requeued_gpu_hours": (
        "GPU-hours handed to the queue over the trailing period by stops that are requeues "
        "(Kueue's pod integration): from the stop until the owner was admitted again.",
        lambda f: f.requeued_gpu_hours,
    ),
    "requeues": (
        "Stops in the trailing period that are requeues (the owner's pods queue again as a new "
        "Workload), apart from the lasting stops.",
        lambda f: f.requeues,
    ),
    "regretted": (
        "Deactivations in the trailing period undone within an hour.",
        lambda f: f.regretted,
    ),
    "contested": (
        "Workloads marked contested in the trailing period.",
        lambda f: f.contested,
    ),
}
SAVINGS_METRIC_NAMES = tuple(PREFIX + name for name in _FIGURES)


class SavingsGauges:
    """A snapshot subscriber; every replica runs one (it only reads)."""

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        state: StateBacking,
        logger: logging.Logger,
        period: timedelta = PERIOD,
        refresh: timedelta = REFRESH,
    ) -> None:
        self._state = state
        self._log = logger
        self._period = period
        self._refresh = refresh
        self._last: datetime | None = None
        self._gauges = {
            name: Gauge(PREFIX + name, text, LABELS, registry=registry)
            for name, (text, _figure) in _FIGURES.items()
        }

    def __call__(self, snapshot: Snapshot) -> None:
        now = snapshot.taken_at
        if self._last is not None and now - self._last < self._refresh:
            return
        try:
            trail = self._state.read().audit
        except ClusterError as exc:
            self._log.warning("savings metrics not refreshed: %s", exc)
            return
        self._last = now
        found = savings(trail, snapshot.workloads, since=now - self._period, now=now)
        self._show(found.by(per_queue))

    def _show(self, rows: dict[Group, Figures]) -> None:
        for name, (_text, figure) in _FIGURES.items():
            gauge = self._gauges[name]
            gauge.clear()  # a queue with nothing left in the period drops out
            for group, figures in rows.items():
                gauge.labels(group.namespace, group.queue).set(figure(figures))
