"""The REST API's backends for the demo: the same app, over the simulated cluster.

- Who calls: the real static-token mode with one generated token, an admin everywhere, so
  the demo's API checks tokens and rights exactly as a static-token deployment does.
- Annotation and `spec.active` writes go to the `SimulatedCluster`, which bumps the
  Workload's version as the API server bumps a resourceVersion (reactivation is guarded).
- The runtime state (pauses, audit) lives in memory, and its pauses *are* the cluster's
  `read_pauses()`: a pause set through the API is what the loop honours next.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime

from autoscaler.api.access import admin_target
from autoscaler.api.assembly import Backends
from autoscaler.api.auth import Target
from autoscaler.api.static_tokens import EVERY_NAMESPACE, StaticToken, StaticTokens
from autoscaler.api.writer import Annotated
from autoscaler.config import Settings
from autoscaler.domain.models import WorkloadInfo
from autoscaler.ports import Clock
from autoscaler.runtime_state import AuditRecord, Edit, RuntimeState
from autoscaler.sim.cluster import SimulatedCluster

DEMO_USER = "demo-admin"

Annotations = Mapping[str, str | None]


def new_token() -> str:
    """A fresh bearer token per run: nothing long-lived to leak from a demo."""
    return secrets.token_urlsafe(24)


def demo_tokens(token: str, *, admin: Target) -> StaticTokens:
    """The static-token authenticator and authorizer, knowing only the demo's admin."""
    entry = StaticToken(token=token, username=DEMO_USER, namespaces=[EVERY_NAMESPACE], admin=True)
    return StaticTokens((entry,), admin_target=admin)


class SimulatedWrites:
    """`WorkloadWrites` on the simulated cluster: owner annotations land on the RayCluster."""

    def __init__(self, *, cluster: SimulatedCluster, clock: Clock) -> None:
        self._cluster = cluster
        self._clock = clock

    def annotate_owner(self, workload: WorkloadInfo, annotations: Annotations) -> Annotated:
        owner = workload.owner
        if owner is None:
            return self.annotate_workload(workload, annotations)
        self._cluster.annotate(workload.ref, annotations, now=self._clock.now(), workload=False)
        return Annotated(owner.kind, workload.ref.namespace, owner.name)

    def annotate_workload(self, workload: WorkloadInfo, annotations: Annotations) -> Annotated:
        ref = workload.ref
        self._cluster.annotate(ref, annotations, now=self._clock.now(), owner=False)
        return Annotated("Workload", ref.namespace, ref.name)

    def reactivate(self, workload: WorkloadInfo, annotations: Annotations) -> None:
        self._cluster.reactivate(
            workload.ref, annotations, version=workload.resource_version, now=self._clock.now()
        )


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


def simulated_backends(
    cluster: SimulatedCluster,
    *,
    clock: Clock,
    settings: Settings,
    token: str,
    state: SimulatedRuntimeState | None = None,
) -> Backends:
    """Everything `build_api_on` needs besides the snapshot store, for one demo world."""
    admin = admin_target(
        settings.api.admin,
        config_map=settings.cluster.runtime_state_config_map,
        namespace=settings.cluster.service_namespace,
    )
    tokens = demo_tokens(token, admin=admin)
    return Backends(
        cluster=cluster,
        writer=SimulatedWrites(cluster=cluster, clock=clock),
        state=state
        or SimulatedRuntimeState(cluster=cluster, audit_limit=settings.api.audit_record_limit),
        auth=(tokens, tokens),
        admin=admin,
    )
