"""The runtime state of the simulated cluster: pauses and the audit trail, in memory.

Its pauses *are* the cluster's `read_pauses()`: a pause set through the demo's API is what
the loop honours next. (The demo's tokens are made in compose/demo.py; its writes on
workloads go through `sim.actuators.SimulatedActuator`.)
"""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import datetime

from autoscaler.domain.audit.records import AuditRecord, Edit, RuntimeState
from autoscaler.sim.cluster import SimulatedCluster


class SimulatedRuntimeState:
    """`StateStore` in memory. One lock makes every change atomic, so it never conflicts."""

    def __init__(self, *, cluster: SimulatedCluster, audit_limit: int) -> None:
        self._cluster = cluster
        self._audit_limit = audit_limit
        self._state = RuntimeState()
        self._lock = threading.Lock()
        self.announcements: list[tuple[datetime, str, str]] = []

    def read(self) -> RuntimeState:
        with self._lock:
            return self._current()

    def change(self, edit: Edit) -> RuntimeState:
        with self._lock:
            wanted = edit(self._current())
            self._state = wanted
            self._cluster.pauses = wanted.pauses  # what the loop reads every cycle
            return wanted

    def record(self, *records: AuditRecord) -> None:
        if records:
            self.change(lambda state: state.recorded(records, limit=self._audit_limit))

    def announce(self, *, reason: str, message: str, now: datetime) -> None:
        """The guards' fleet-wide Events (the breaker): kept for the demo's view."""
        with self._lock:
            self.announcements.append((now, reason, message))

    def _current(self) -> RuntimeState:
        return replace(self._state, pauses=self._cluster.read_pauses())
