"""The interfaces the service depends on. Adapters (real or simulated) implement them."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from autoscaler.domain.access import Identity, Recalled, Target, Verdict
from autoscaler.domain.annotations import DeactivationAudit
from autoscaler.domain.audit.records import Annotated, AuditRecord, Edit, RuntimeState
from autoscaler.domain.guards.screen import GuardMemory, LoopRecord
from autoscaler.domain.kueue_config import KueueConfiguration
from autoscaler.domain.models import (
    FleetUsage,
    Pauses,
    PodRecord,
    UsageView,
    WorkloadInfo,
    WorkloadRef,
)
from autoscaler.domain.notices.notifications import Link, Notification
from autoscaler.domain.queues.facts import QueueFacts
from autoscaler.domain.usage.fresh import LatestUsage


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class MetricSource(Protocol):
    def read_views(
        self, views: Collection[UsageView], *, now: datetime
    ) -> Mapping[UsageView, FleetUsage]:
        """Every GPU's usage at each view (over its window, ending at `now`), from ONE fleet
        read: the number of queries grows with the signals, never with the number of views
        (rules) nor of workloads. Never raises: a failing source answers each view with a
        `FleetUsage` whose `failure` says why, so every workload becomes unknown."""
        ...

    def read_latest(self, pods: Sequence[tuple[str, str]], *, now: datetime) -> LatestUsage:
        """The newest sample (as of `now`) of every GPU of these (namespace, pod)s, in ONE
        query, for the fresh check right before acting. Never raises: a failure is
        `LatestUsage.failure`, and every candidate is then left alone."""
        ...


class PendingWork(Protocol):
    """Who waits for quota, and the quotas they wait for (Kueue's queues)."""

    def read_queues(self) -> QueueFacts:
        """ClusterQueues with their quotas and usage, and the pending Workloads. Never
        raises: a failed read is `QueueFacts.failure`."""
        ...


class ClusterReader(Protocol):
    """What the loop reads of the cluster each cycle, and the fresh read before acting."""

    def list_workloads(self) -> Sequence[WorkloadInfo]:
        """Every Workload joined with its owner and the owner's pods. Raises ClusterError."""
        ...

    def namespace_exists(self, name: str) -> bool:
        """Whether the namespace exists (pausing one that does not is a typo, not a pause).
        Raises ClusterError when it cannot tell."""
        ...

    def list_gpu_pods(self) -> Sequence[PodRecord]:
        """Every running pod that requests GPUs, Kueue-managed or not (KEDA selectors)."""
        ...

    def list_scaled_objects(self) -> Sequence[Mapping[str, Any]]:
        """KEDA ScaledObjects as API dicts; empty when KEDA is not installed."""
        ...

    def get_workload(self, ref: WorkloadRef) -> WorkloadInfo | None:
        """A fresh read of one Workload (no cache), or None when it is gone."""
        ...

    def read_pauses(self) -> Pauses:
        """The kill switches in force, from the runtime-state ConfigMap."""
        ...


class KueueFeatures(Protocol):
    """Kueue's own Configuration (its `featureGates`), for rules that rest on a Kueue feature
    (`reclaim: via-kueue`). Never raises: unreadable says why."""

    def kueue_configuration(self) -> KueueConfiguration:
        """Read now (one list call), or from its watch cache (no request)."""
        ...


class WorkloadWrites(Protocol):
    """Annotations on a Workload or its owner: all that exemption changes need."""

    def annotate_owner(
        self, workload: WorkloadInfo, annotations: Mapping[str, str | None]
    ) -> Annotated:
        """Merge these annotations (None removes) into the owner, else the Workload."""
        ...

    def annotate_workload(
        self,
        workload: WorkloadInfo,
        annotations: Mapping[str, str | None],
        *,
        resource_version: str | None = None,
    ) -> Annotated:
        """Merge these annotations (None removes) into the Workload. With `resource_version`
        (not None or empty), only if the Workload is still at that version (else Conflict):
        a write that rests on what was read (a snooze's single use, its count per day)."""
        ...


class WorkloadActuator(WorkloadWrites, Protocol):
    """Every write on a Workload and its owner. The order of the writes (the act sequence)
    lives once, in `engine.actuation`; an actuator only makes each one."""

    def writes_owner(self, workload: WorkloadInfo) -> bool:
        """Whether `annotate_owner` lands on the owner itself (else on the Workload)."""
        ...

    def deactivate(self, workload: WorkloadInfo, audit: DeactivationAudit) -> None:
        """ONE merge patch on the Workload: `spec.active: false` with the audit annotations,
        so the annotation proves the patch applied. Raises AnswerLost when the request was
        sent and its answer lost (it may have applied), other ClusterErrors when refused."""
        ...

    def reactivate(self, workload: WorkloadInfo, annotations: Mapping[str, str | None]) -> None:
        """`spec.active: true` with these annotations, only if unchanged since read (Conflict)."""
        ...

    def announce(self, workload: WorkloadInfo, *, reason: str, message: str) -> None:
        """A Kubernetes Event on the Workload and its owner."""
        ...

    def delete_owner(self, workload: WorkloadInfo) -> None:
        """Delete the Workload's owner (a RayCluster), only if its UID is still the one read
        (a precondition), so a re-created owner of the same name is never deleted. Kueue's
        Workload goes with it (owner reference). Raises NotFound, Conflict, ClusterError."""
        ...


class Notifier(Protocol):
    """One notification target (a webhook, a Slack channel), named in the settings."""

    def send(self, notification: Notification, *, links: Sequence[Link]) -> None:
        """Deliver it once, within the target's timeout. Raises NotifyError (its `retry`
        says whether trying again may help: a 5xx or timeout yes, a 4xx no)."""
        ...


class NotificationSink(Protocol):
    """Where the loop and the API hand notifications; never blocks, never raises."""

    def submit(self, notification: Notification, *, targets: Sequence[str]) -> None:
        """Queue it for each named target; sent (and retried) off the caller's thread."""
        ...


class AuditLog(Protocol):
    """The durable audit trail the guards write before acting and count from."""

    def record(self, *records: LoopRecord) -> None:
        """Keep these records (newest first, bounded). Raises ClusterError."""
        ...

    def recent(self, since: datetime) -> Sequence[LoopRecord]:
        """The records the guards count, taken at or after `since`. Raises ClusterError."""
        ...


class GuardState(Protocol):
    """The breaker and the contested marks, shared by every replica and kept across restarts."""

    def load(self) -> GuardMemory:
        """The current memory. Raises ClusterError."""
        ...

    def change(
        self, edit: Callable[[GuardMemory], GuardMemory], *, records: Sequence[LoopRecord] = ()
    ) -> GuardMemory:
        """Apply `edit` to the current memory and keep `records`, in one atomic write
        (redone when another writer came first). Raises ClusterError."""
        ...

    def announce(self, *, reason: str, message: str) -> None:
        """A Kubernetes Event on the object that holds this state. Raises ClusterError."""
        ...


class AuditSink(Protocol):
    def record(self, *records: AuditRecord) -> None:
        """Keep these records (newest first, bounded). Raises ClusterError."""
        ...


class StateStore(Protocol):
    def read(self) -> RuntimeState: ...

    def change(self, edit: Edit) -> RuntimeState:
        """Apply `edit` to the shared state atomically (Conflict when it keeps racing)."""
        ...

    def record(self, *records: AuditRecord) -> None: ...


class Authenticator(Protocol):
    def authenticate(self, token: str) -> Identity | None:
        """The token's user, or None when it is not a valid token. Raises ClusterError."""
        ...

    def recall(self, token: str) -> Recalled | None:
        """The token's answer when it is at hand without I/O, else None (then ask
        `authenticate`, off the event loop). Never raises."""
        ...


class Authorizer(Protocol):
    def authorize(self, identity: Identity, target: Target) -> Verdict:
        """Whether `identity` holds `target`. Raises ClusterError when it cannot ask."""
        ...


class StateBacking(Protocol):
    """What the guards need of a runtime-state store: the ConfigMap one, or the demo's."""

    def read(self) -> RuntimeState: ...

    def change(self, edit: Callable[[RuntimeState], RuntimeState]) -> RuntimeState: ...

    def record(self, *records: AuditRecord) -> None: ...

    def announce(self, *, reason: str, message: str, now: datetime) -> None: ...


class GuardStore(AuditLog, GuardState, Protocol):
    """The audit trail and the guards' memory, kept together in the runtime-state ConfigMap."""


class Server(Protocol):
    """Anything served beside the loop (gRPC, HTTP): started before it, stopped after it."""

    def start(self) -> object: ...

    def stop(self) -> None: ...


class UsageSourceObserver(Protocol):
    """Told after every fleet read which source its slots came from (`recorded` or `raw`),
    why it fell back to raw (None when it did not), and how many GPUs with holes in their
    recorded slots were read raw (docs/RECORDING-RULES.md)."""

    def __call__(self, *, source: str, fallback: str | None, raw_gpus: int) -> None: ...
