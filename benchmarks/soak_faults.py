"""Faults at the service's ports, drawn at random each call: what a soak throws at it.

`FaultyMetrics` wraps a `MetricSource`: Prometheus down, a partial answer (warnings), some
pods' series missing, NaN or stale, the fresh-check query failing. `FaultyCluster` wraps the
simulated `ClusterReader`: lists and reads failing (500, timeouts). `FaultyActuator` wraps the
simulated `WorkloadActuator`: conflicts on the patch and the owner's annotations, a patch
whose answer is lost after the API server applied it, Events failing. `FaultyGuardStore` wraps
the guards' audit trail and memory (the runtime-state ConfigMap): reads failing, writes
conflicting past their retries. `Dice` decides and counts.
Anything not faulted is passed through, so the wrappers keep up with the ports.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from autoscaler.core.errors import AnswerLost, ClusterUnavailable, Conflict
from autoscaler.domain.annotations import DeactivationAudit
from autoscaler.domain.models import (
    FleetUsage,
    GpuUsage,
    Pauses,
    UsageView,
    WorkloadInfo,
    WorkloadRef,
)
from autoscaler.domain.usage.fresh import LatestUsage

# Chance per call (per cycle for the usage read) of each fault.
RATES: Mapping[str, float] = {
    "prometheus down": 0.04,
    "partial answer (warnings)": 0.03,
    "some series missing": 0.05,
    "some series NaN": 0.03,
    "some series stale": 0.03,
    "fresh-check query failed": 0.04,
    "list failed (500)": 0.03,
    "read timed out": 0.02,
    "owner annotation conflict (409)": 0.04,
    "patch conflict (409)": 0.04,
    "patch timed out after applying": 0.03,
    "event failed (500)": 0.03,
    "runtime state unreadable (500)": 0.02,
    "runtime state write conflict (409)": 0.03,
}
AFFECTED_SHARE = 0.05  # of the pods, when a fault hits some series


@dataclass
class Dice:
    rng: random.Random
    rates: Mapping[str, float] = field(default_factory=lambda: dict(RATES))
    injected: Counter[str] = field(default_factory=Counter)

    def roll(self, fault: str) -> bool:
        hit = self.rng.random() < self.rates[fault]
        if hit:
            self.injected[fault] += 1
        return hit

    def some(self, keys: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        return {key for key in keys if self.rng.random() < AFFECTED_SHARE}


class FaultyMetrics:
    """`seconds`: time spent in the wrapped source, i.e. the simulated Prometheus answering.
    The faults fall on the cycle's one read: every view sees the same missing or spoiled pods."""

    def __init__(self, inner: Any, *, dice: Dice) -> None:
        self._inner = inner
        self._dice = dice
        self.seconds = 0.0

    def read_views(
        self, views: Collection[UsageView], *, now: datetime
    ) -> dict[UsageView, FleetUsage]:
        if self._dice.roll("prometheus down"):
            down = "injected: connection refused"
            return {v: FleetUsage(v.window, v.threshold, now, failure=down) for v in views}
        began = time.perf_counter()
        read: Mapping[UsageView, FleetUsage] = self._inner.read_views(views, now=now)
        self.seconds += time.perf_counter() - began
        partial = self._dice.roll("partial answer (warnings)")
        pods = sorted({pod for usage in read.values() for pod in usage.gpus})
        missing = self._dice.some(pods) if self._dice.roll("some series missing") else set()
        spoiled = [
            (spoil, self._dice.some(pods))
            for fault, spoil in (("some series NaN", _nan), ("some series stale", _stale))
            if self._dice.roll(fault)
        ]
        return {
            view: _faulty(usage, partial=partial, missing=missing, spoiled=spoiled)
            for view, usage in read.items()
        }

    @property
    def inner(self) -> Any:
        return self._inner

    def read_latest(self, pods: Sequence[tuple[str, str]], *, now: datetime) -> LatestUsage:
        if self._dice.roll("fresh-check query failed"):
            return LatestUsage(now, failure="injected: the fresh-check query timed out")
        began = time.perf_counter()
        latest: LatestUsage = self._inner.read_latest(pods, now=now)
        self.seconds += time.perf_counter() - began
        return latest

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _faulty(
    usage: FleetUsage,
    *,
    partial: bool,
    missing: set[tuple[str, str]],
    spoiled: Sequence[tuple[Callable[[GpuUsage], GpuUsage], set[tuple[str, str]]]],
) -> FleetUsage:
    if partial:
        usage = replace(usage, doubtful_namespaces=frozenset({"*"}))
    gpus = {pod: found for pod, found in usage.gpus.items() if pod not in missing}
    for spoil, pods in spoiled:
        for pod in pods & gpus.keys():
            gpus[pod] = tuple(spoil(gpu) for gpu in gpus[pod])
    return replace(usage, gpus=gpus)


def _nan(gpu: GpuUsage) -> GpuUsage:
    return replace(gpu, peak=float("nan"))


def _stale(gpu: GpuUsage) -> GpuUsage:
    moved = gpu.last_sample_at - timedelta(minutes=10) if gpu.last_sample_at else None
    return replace(gpu, last_sample_at=moved)


class FaultyCluster:
    """A `ClusterReader` whose lists and reads fail."""

    def __init__(self, inner: Any, *, dice: Dice) -> None:
        self._inner = inner
        self._dice = dice

    def list_workloads(self) -> Sequence[WorkloadInfo]:
        self._maybe("list failed (500)", ClusterUnavailable, "list workloads: 500")
        workloads: Sequence[WorkloadInfo] = self._inner.list_workloads()
        return workloads

    def list_gpu_pods(self) -> Sequence[Any]:
        self._maybe("list failed (500)", ClusterUnavailable, "list pods: 500")
        pods: Sequence[Any] = self._inner.list_gpu_pods()
        return pods

    def get_workload(self, ref: WorkloadRef) -> WorkloadInfo | None:
        self._maybe("read timed out", ClusterUnavailable, f"get {ref}: timed out")
        found: WorkloadInfo | None = self._inner.get_workload(ref)
        return found

    def read_pauses(self) -> Pauses:
        self._maybe("read timed out", ClusterUnavailable, "get runtime state: timed out")
        pauses: Pauses = self._inner.read_pauses()
        return pauses

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _maybe(self, fault: str, error: type[Exception], message: str) -> None:
        _maybe(self._dice, fault, error, message)


class FaultyActuator:
    """A `WorkloadActuator` whose writes conflict, lose their answer or fail."""

    def __init__(
        self,
        inner: Any,
        *,
        dice: Dice,
        now: Callable[[], datetime],
        on_deactivated: Callable[[WorkloadRef, datetime], None],
    ) -> None:
        self._inner = inner
        self._dice = dice
        self._now = now
        self._on_deactivated = on_deactivated

    def deactivate(self, workload: WorkloadInfo, audit: DeactivationAudit) -> None:
        _maybe(self._dice, "patch conflict (409)", Conflict, f"patch {workload.ref}: 409")
        self._inner.deactivate(workload, audit)
        self._on_deactivated(workload.ref, self._now())
        _maybe(self._dice, "patch timed out after applying", AnswerLost, "patch: timed out")

    def annotate_owner(self, workload: WorkloadInfo, annotations: Mapping[str, str | None]) -> Any:
        fault = "owner annotation conflict (409)"
        _maybe(self._dice, fault, Conflict, f"patch owner of {workload.ref}: 409")
        return self._inner.annotate_owner(workload, annotations)

    def announce(self, workload: WorkloadInfo, *, reason: str, message: str) -> None:
        _maybe(self._dice, "event failed (500)", ClusterUnavailable, "create event: 500")
        self._inner.announce(workload, reason=reason, message=message)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _maybe(dice: Dice, fault: str, error: type[Exception], message: str) -> None:
    if dice.roll(fault):
        raise error(f"injected: {message}")


class FaultyGuardStore:
    """`AuditLog` and `GuardState` whose ConfigMap reads fail and writes keep conflicting."""

    def __init__(self, inner: Any, *, dice: Dice) -> None:
        self._inner = inner
        self._dice = dice

    def record(self, *records: Any) -> None:
        self._write()
        self._inner.record(*records)

    def recent(self, since: datetime) -> Sequence[Any]:
        self._read()
        found: Sequence[Any] = self._inner.recent(since)
        return found

    def load(self) -> Any:
        self._read()
        return self._inner.load()

    def change(self, edit: Callable[[Any], Any], *, records: Sequence[Any] = ()) -> Any:
        self._write()
        return self._inner.change(edit, records=records)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _read(self) -> None:
        if self._dice.roll("runtime state unreadable (500)"):
            raise ClusterUnavailable("injected: get runtime state: 500")

    def _write(self) -> None:
        if self._dice.roll("runtime state write conflict (409)"):
            raise Conflict("injected: update runtime state: 409 after every retry")
