"""Fakes at our own ports, for unit tests of the service. They record what was asked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from autoscaler.domain.models import FleetUsage, Pauses, PodRecord, WorkloadInfo, WorkloadRef
from autoscaler.errors import ClusterError
from autoscaler.ports import DeactivationAudit


@dataclass
class FakeClock:
    current: datetime

    def now(self) -> datetime:
        return self.current

    def advance(self, span: timedelta) -> None:
        self.current += span


@dataclass
class FakeMetrics:
    usage: FleetUsage
    reads: list[tuple[timedelta, float, datetime]] = field(default_factory=list)

    def read_usage(self, *, window: timedelta, threshold: float, now: datetime) -> FleetUsage:
        self.reads.append((window, threshold, now))
        return replace(self.usage, window=window, threshold=threshold, evaluated_at=now)


@dataclass
class FakeCluster:
    """An in-memory cluster. `fresh` overrides what `get_workload` returns (a change
    made between the cycle's read and the action); `fail` makes every call raise."""

    workloads: list[WorkloadInfo]
    pauses: Pauses = field(default_factory=Pauses)
    fresh: dict[WorkloadRef, WorkloadInfo | None] = field(default_factory=dict)
    fail: ClusterError | None = None
    fail_on_patch: Exception | None = None
    pauses_after_first_read: Pauses | None = None
    scaled_objects: list[dict[str, Any]] = field(default_factory=list)
    calls: list[tuple[str, WorkloadRef | None]] = field(default_factory=list)
    audits: list[tuple[WorkloadRef, DeactivationAudit]] = field(default_factory=list)

    def list_workloads(self) -> Sequence[WorkloadInfo]:
        self._called("list_workloads", None)
        return list(self.workloads)

    def list_gpu_pods(self) -> Sequence[PodRecord]:
        self._called("list_gpu_pods", None)
        return [PodRecord(w.ref.namespace, p) for w in self.workloads for p in w.gpu_pods]

    def list_scaled_objects(self) -> Sequence[Mapping[str, Any]]:
        self._called("list_scaled_objects", None)
        return list(self.scaled_objects)

    def get_workload(self, ref: WorkloadRef) -> WorkloadInfo | None:
        self._called("get_workload", ref)
        if ref in self.fresh:
            return self.fresh[ref]
        return next((w for w in self.workloads if w.ref == ref), None)

    def read_pauses(self) -> Pauses:
        self._called("read_pauses", None)
        current = self.pauses
        if self.pauses_after_first_read is not None:
            self.pauses = self.pauses_after_first_read
        return current

    def record_deactivation(self, workload: WorkloadInfo, audit: DeactivationAudit) -> None:
        self._called("record_deactivation", workload.ref)
        self.audits.append((workload.ref, audit))

    def deactivate(self, workload: WorkloadInfo) -> None:
        self._called("deactivate", workload.ref)
        if self.fail_on_patch is not None:
            raise self.fail_on_patch
        self.workloads = [
            replace(w, active=False) if w.ref == workload.ref else w for w in self.workloads
        ]

    def announce(self, workload: WorkloadInfo, *, reason: str, message: str) -> None:
        self._called("announce", workload.ref)

    def deactivated(self) -> list[WorkloadRef]:
        return [ref for name, ref in self.calls if name == "deactivate" and ref is not None]

    def _called(self, name: str, ref: WorkloadRef | None) -> None:
        if self.fail is not None:
            raise self.fail
        self.calls.append((name, ref))
