"""The service's own Prometheus metrics, updated from every published snapshot.

The metrics live in a `CollectorRegistry` passed in (never the global one), so tests and
several apps in one process do not collide. The names are a contract with the Helm chart's
Grafana dashboard: `METRIC_NAMES` is what its test checks.

Every replica publishes snapshots, so the fleet-wide gauges (workloads, exemptions, guards) are
the same on each: a dashboard takes their `max`, not their `sum`.
"""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass
from datetime import datetime

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from autoscaler.core.ports import Clock
from autoscaler.domain.exemptions import active_exemption
from autoscaler.domain.models import (
    Action,
    GuardReport,
    Snapshot,
    State,
    WaitersSeen,
    WorkloadRef,
    WorkloadStatus,
)
from autoscaler.domain.outcomes import OutcomeKind
from autoscaler.domain.program import METRIC_PREFIX
from autoscaler.domain.queues.contention import UnknownWhy, WaiterOutcome
from autoscaler.domain.usage.assessment import running_unmonitored
from autoscaler.engine.metrics.savings import SAVINGS_METRIC_NAMES
from autoscaler.engine.metrics.via_kueue import VIA_KUEUE_METRIC_NAMES, ViaKueueGauges

METRIC_NAMES: tuple[str, ...] = (
    tuple(
        METRIC_PREFIX + name
        for name in (
            "cycles_total",
            "cycle_duration_seconds",
            "workloads",
            "deactivations_total",
            "reactivations_total",
            "exemptions_active",
            "errors_total",
            "gpu_hours_reclaimed_total",
            "last_successful_cycle_timestamp_seconds",
            "breaker_open",
            "deactivations_deferred",
            "deactivations_last_hour",
            "deactivations_hourly_limit",
            "contested_workloads",
            "waiters_judged_total",
            "waiters_last_judged",
            "waiters_fit_unknown",
        )
    )
    + SAVINGS_METRIC_NAMES
    + VIA_KUEUE_METRIC_NAMES
)  # per namespace and queue, from engine.savings_metrics
LOOP_CRASH = "loop"  # the errors' source of a cycle that raised
LOOP_REASON = "idle"  # deactivations by the loop; "admin" for "deactivate now"
# Why a deactivation waits. The guards defer for one reason at a time: unreadable guard state
# holds everything, an open breaker holds everything else, and only then does the hourly cap.
PER_CYCLE_CAP, PER_HOUR_CAP = "per_cycle_cap", "per_hour_cap"
BREAKER, GUARD_STATE_UNREADABLE = "breaker", "guard_state_unreadable"
DEFERRAL_REASONS = (PER_CYCLE_CAP, PER_HOUR_CAP, BREAKER, GUARD_STATE_UNREADABLE)
CYCLE_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


@dataclass
class _Held:
    """GPUs a deactivated workload held, and up to when their reclaimed time is counted."""

    gpus: int
    since: datetime


class ServiceMetrics:
    """Call `observe` with each snapshot (`SnapshotStore.subscribe(metrics.observe)`).

    A cycle's duration is the clock's time at publication minus the snapshot's `taken_at`
    (the clock's time when the cycle began), so the clock must be the loop's.
    """

    def __init__(self, registry: CollectorRegistry, *, clock: Clock) -> None:
        self.registry = registry  # what /metrics serves
        self._clock = clock
        self._lock = threading.Lock()  # the loop observes; API threads report deactivations
        self._held: dict[WorkloadRef, _Held] = {}
        self._deactivated: set[WorkloadRef] | None = None  # None until the first snapshot
        self.cycles, self.cycle_duration, self.last_success = _cycle_metrics(registry)
        self.workloads = Gauge(
            METRIC_PREFIX + "workloads",
            "Workloads by state in the latest cycle.",
            ["state"],
            registry=registry,
        )
        self.deactivations = Counter(
            METRIC_PREFIX + "deactivations",
            "Workloads deactivated, by namespace and reason (idle: the loop; admin: the API).",
            ["namespace", "reason"],
            registry=registry,
        )
        self.reactivations = Counter(
            METRIC_PREFIX + "reactivations",
            "Deactivated workloads seen active again (through the API or kubectl).",
            registry=registry,
        )
        self.unmonitored = _unmonitored_gauge(registry)
        self.exemptions = Gauge(
            METRIC_PREFIX + "exemptions_active",
            "Workloads with an exemption in force.",
            registry=registry,
        )
        self.errors = Counter(
            METRIC_PREFIX + "errors",
            "Failures by source (cluster, prometheus, queues, action, runtime-state, loop).",
            ["source"],
            registry=registry,
        )
        self.gpu_hours = Counter(
            METRIC_PREFIX + "gpu_hours_reclaimed",
            "GPU-hours freed: GPUs held at deactivation times the time spent deactivated.",
            ["namespace"],
            registry=registry,
        )
        self.waiters = Counter(
            METRIC_PREFIX + "waiters_judged",
            "Waiting Workloads judged for when-contended rules, per cycle, by outcome "
            "(served, fits already, cannot fit, fit unknown).",
            ["outcome"],
            registry=registry,
        )
        self._guards = _GuardGauges(registry)
        self._waiters = _WaiterGauges(registry)
        self._via_kueue = ViaKueueGauges(registry)

    def observe(self, snapshot: Snapshot) -> None:
        self.cycles.inc()
        elapsed = (self._clock.now() - snapshot.taken_at).total_seconds()
        self.cycle_duration.observe(max(elapsed, 0.0))
        if snapshot.cluster_ok and snapshot.metrics_ok:
            self.last_success.set(snapshot.taken_at.timestamp())
        self._count_errors(snapshot)
        if not snapshot.cluster_ok:
            return  # the rows are last cycle's, marked unknown: nothing new to count
        self._count_states(snapshot)
        self._guards.observe(snapshot)
        self._count_loop_deactivations(snapshot)
        self._count_reclaimed(snapshot)
        self._count_reactivations(snapshot)
        self._count_waiters(snapshot)
        self._via_kueue.observe(snapshot)

    def deactivated(self, ref: WorkloadRef, *, gpus: int, reason: str, at: datetime) -> None:
        """A deactivation outside the loop (the API's "deactivate now")."""
        self.deactivations.labels(namespace=ref.namespace, reason=reason).inc()
        with self._lock:
            self._held[ref] = _Held(gpus, at)

    def error(self, source: str) -> None:
        self.errors.labels(source=source).inc()

    def crashed(self, _exc: BaseException) -> None:
        """`LoopRunner.on_crash`: a cycle that raised (the runner logs it) counts as an error."""
        self.error(LOOP_CRASH)

    def _count_errors(self, snapshot: Snapshot) -> None:
        if not snapshot.cluster_ok:
            self.error("cluster")
        if snapshot.cluster_ok and not snapshot.metrics_ok:
            self.error("prometheus")
        for record in snapshot.actions:
            if record.outcome.went_wrong:
                self.error("action")

    def _count_waiters(self, snapshot: Snapshot) -> None:
        if snapshot.waiters is None:
            return
        if snapshot.waiters.failure is not None:
            self.error("queues")
        for outcome, count in snapshot.waiters.outcomes.items():
            self.waiters.labels(outcome=outcome).inc(count)
        self._waiters.observe(snapshot.waiters)

    def _count_states(self, snapshot: Snapshot) -> None:
        counts = dict.fromkeys(State, 0)
        for row in snapshot.workloads:
            counts[row.decision.state] += 1
        for state, count in counts.items():
            self.workloads.labels(state=state.value).set(count)
        now = snapshot.taken_at
        self.exemptions.set(sum(1 for row in snapshot.workloads if _exempt(row, now)))
        gaps = collections.Counter(
            row.ref.namespace for row in snapshot.workloads if running_unmonitored(row.decision)
        )
        self.unmonitored.clear()
        for namespace, count in gaps.items():
            self.unmonitored.labels(namespace=namespace).set(count)

    def _count_loop_deactivations(self, snapshot: Snapshot) -> None:
        for record in snapshot.actions:
            if record.action is Action.DEACTIVATE and record.outcome.kind is OutcomeKind.DONE:
                self.deactivations.labels(
                    namespace=record.workload.namespace, reason=LOOP_REASON
                ).inc()
                row = snapshot.find(record.workload)
                gpus = row.decision.gpus if row is not None else 0
                with self._lock:
                    self._held[record.workload] = _Held(gpus, record.at)

    def _count_reclaimed(self, snapshot: Snapshot) -> None:
        """Add each still-deactivated workload's GPU time since the last count."""
        rows = {row.ref: row for row in snapshot.workloads}
        with self._lock:
            self._accrue(rows, snapshot.taken_at)

    def _accrue(self, rows: dict[WorkloadRef, WorkloadStatus], taken_at: datetime) -> None:
        for ref, held in list(self._held.items()):
            if taken_at <= held.since:
                continue  # read before the deactivation: its rows still show it active
            row = rows.get(ref)
            if row is None or row.info.active:
                del self._held[ref]  # gone or back: nothing more to reclaim
                continue
            hours = (taken_at - held.since).total_seconds() / 3600
            self.gpu_hours.labels(namespace=ref.namespace).inc(held.gpus * hours)
            held.since = taken_at

    def _count_reactivations(self, snapshot: Snapshot) -> None:
        inactive = {row.ref for row in snapshot.workloads if not row.info.active}
        active = {row.ref for row in snapshot.workloads if row.info.active}
        if self._deactivated is not None:
            back = len(self._deactivated & active)
            if back:
                self.reactivations.inc(back)
        self._deactivated = inactive


def _cycle_metrics(registry: CollectorRegistry) -> tuple[Counter, Histogram, Gauge]:
    """How many cycles ran, how long they took, and when one last reached everything."""
    return (
        Counter(METRIC_PREFIX + "cycles", "Reconcile cycles run.", registry=registry),
        Histogram(
            METRIC_PREFIX + "cycle_duration_seconds",
            "Wall time of a reconcile cycle.",
            buckets=CYCLE_BUCKETS,
            registry=registry,
        ),
        Gauge(
            METRIC_PREFIX + "last_successful_cycle_timestamp_seconds",
            "Unix time of the last cycle that reached both the cluster and Prometheus.",
            registry=registry,
        ),
    )


class _GuardGauges:
    """What the guards held back in the latest cycle, and their state."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.breaker_open = Gauge(
            METRIC_PREFIX + "breaker_open",
            "1 while the mass-idle circuit breaker holds every deactivation, else 0.",
            registry=registry,
        )
        self.deferred = Gauge(
            METRIC_PREFIX + "deactivations_deferred",
            "Idle workloads whose deactivation waits, in the latest cycle, by reason.",
            ["reason"],
            registry=registry,
        )
        self.last_hour = Gauge(
            METRIC_PREFIX + "deactivations_last_hour",
            "Deactivations the loop began in the hour before the latest cycle (audit records).",
            registry=registry,
        )
        self.hourly_limit = Gauge(
            METRIC_PREFIX + "deactivations_hourly_limit",
            "policy.maxDeactivationsPerHour: beyond it deactivations wait.",
            registry=registry,
        )
        self.contested = Gauge(
            METRIC_PREFIX + "contested_workloads",
            "Workloads left alone until an admin clears their contested mark.",
            registry=registry,
        )

    def observe(self, snapshot: Snapshot) -> None:
        waiting = sum(1 for row in snapshot.workloads if row.decision.action is Action.DEFERRED)
        report = snapshot.guards
        by_guards = report.deferred if report is not None else 0
        counts = dict.fromkeys(DEFERRAL_REASONS, 0)
        # The per-cycle cap defers first, in the policy; the guards count only what they add.
        counts[PER_CYCLE_CAP] = max(waiting - by_guards, 0)
        if report is not None:
            counts[_guard_reason(report)] = by_guards
            self.breaker_open.set(1 if report.breaker.open else 0)
            self.last_hour.set(report.deactivations_last_hour)
            self.hourly_limit.set(report.hourly_limit)
            self.contested.set(len(report.contested))
        for reason, count in counts.items():
            self.deferred.labels(reason=reason).set(count)


def _guard_reason(report: GuardReport) -> str:
    if report.problems:
        return GUARD_STATE_UNREADABLE
    return BREAKER if report.breaker.open else PER_HOUR_CAP


class _WaiterGauges:
    """The latest cycle that judged waiters: how many, by outcome, and why "fit unknown", by
    class (UnknownWhy). No label names a workload: /metrics answers without a token."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.judged = Gauge(
            METRIC_PREFIX + "waiters_last_judged",
            "Waiting Workloads judged for when-contended rules in the latest cycle that judged "
            "any, by outcome.",
            ["outcome"],
            registry=registry,
        )
        self.unknown = Gauge(
            METRIC_PREFIX + "waiters_fit_unknown",
            "Waiting Workloads whose fit was unknown in the latest cycle that judged any, by "
            "reason: queues-unread, queue-unknown, queue-unmodelled, order-unknown.",
            ["reason"],
            registry=registry,
        )
        self.observe(WaitersSeen(source="none"))

    def observe(self, seen: WaitersSeen) -> None:
        for outcome in WaiterOutcome:
            self.judged.labels(outcome=outcome.value).set(seen.outcomes.get(outcome.value, 0))
        for why in UnknownWhy:
            self.unknown.labels(reason=why.value).set(seen.unknown_why.get(why.value, 0))


def _unmonitored_gauge(registry: CollectorRegistry) -> Gauge:
    """Counted by namespace, never listed: /metrics answers without a token, so it names no
    workload (the REST listing, which asks the read right, lists them)."""
    return Gauge(
        METRIC_PREFIX + "running_unmonitored_workloads",
        "Workloads whose GPU pods run (as Kubernetes says) but which the GPU metrics miss: "
        "unknown, never stopped, until the monitoring gap is fixed.",
        ["namespace"],
        registry=registry,
    )


def _exempt(row: WorkloadStatus, now: datetime) -> bool:
    info = row.info
    return active_exemption(info.annotations, info.owner_annotations, now=now) is not None
