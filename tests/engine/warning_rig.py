"""The simulated cluster driven by the real Reconciler, for the warning stage (ISSUE 15).

The cluster, its Workloads, owners, annotations and Events are the simulated adapters'
(`autoscaler.sim`); the GPU metrics are a scripted `MetricSource` (our port) that says each
GPU is busy, idle since a given time, or that Prometheus is down; notifications go to a
recording `NotificationSink`. A restart is a new Reconciler over the same cluster objects:
everything it knows of a warning it reads back from the annotations.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from autoscaler.core.errors import AnswerLost, ClusterUnavailable
from autoscaler.domain import annotations as keys
from autoscaler.domain.audit.records import Annotated
from autoscaler.domain.models import (
    FleetUsage,
    GpuUsage,
    Pauses,
    Snapshot,
    UsageView,
    WorkloadInfo,
    WorkloadRef,
)
from autoscaler.domain.notices.notice import NoticeRules
from autoscaler.domain.notices.notifications import NoticeKind, Notification
from autoscaler.domain.policy.decisions import Policy
from autoscaler.domain.policy.rules import DEFAULT_RULE, Rule, RuleAction
from autoscaler.domain.usage.fresh import LatestSample, LatestUsage
from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.domain.usage.idleness import UsageRules
from autoscaler.engine.cycle.reconciler import Reconciler
from autoscaler.engine.notify.notices import NoticeTeller, Route
from autoscaler.sim.actuators import SimulatedActuator
from autoscaler.sim.clock import SimulatedClock
from autoscaler.sim.cluster import SimulatedCluster
from autoscaler.sim.kueue_model import KueueState, LocalQueue
from autoscaler.sim.pods import GPU, GpuPool, RayClusterSpec, WorkerGroup
from autoscaler.sim.quota import ClusterQueue
from tests.support.fakes import FakeAuditLog
from tests.support.loop_builders import a_loop

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
WINDOW = timedelta(hours=1)
WARN_BEFORE = timedelta(minutes=15)
NAMESPACE = "team-a"
BUSY, IDLE = 0.9, 0.01


@dataclass
class ScriptedFleet:
    """Every GPU pod of the cluster busy, or idle since `idle_since`; or Prometheus down."""

    cluster: SimulatedCluster
    idle_since: datetime | None = None  # None: busy now
    down: bool = False

    def read_views(
        self, views: Collection[UsageView], *, now: datetime
    ) -> Mapping[UsageView, FleetUsage]:
        return {view: self._usage(view, now=now) for view in views}

    def read_latest(self, pods: Sequence[tuple[str, str]], *, now: datetime) -> LatestUsage:
        if self.down:
            return LatestUsage(now, failure="prometheus is down")
        peak = BUSY if self.idle_since is None else IDLE
        samples = {
            pod: (LatestSample(GpuKey(pod[0], pod[1], f"GPU-{pod[1]}"), peak, now),) for pod in pods
        }
        return LatestUsage(now, samples=samples)

    def _usage(self, view: UsageView, *, now: datetime) -> FleetUsage:
        if self.down:
            return FleetUsage(view.window, view.threshold, now, failure="prometheus is down")
        peak = BUSY if self.idle_since is None else IDLE
        last_busy = now if self.idle_since is None else self.idle_since
        gpus = {
            (record.namespace, record.pod.name): (
                GpuUsage(
                    GpuKey(record.namespace, record.pod.name, f"GPU-{record.pod.name}"),
                    peak,
                    1.0,
                    now,
                    last_busy,
                ),
            )
            for record in self.cluster.list_gpu_pods()
        }
        return FleetUsage(view.window, view.threshold, now, gpus=gpus)


@dataclass
class RecordingSink:
    sent: list[tuple[Notification, tuple[str, ...]]] = field(default_factory=list)

    def submit(self, notification: Notification, *, targets: Sequence[str]) -> None:
        self.sent.append((notification, tuple(targets)))

    def kinds(self) -> list[NoticeKind]:
        return [notification.kind for notification, _ in self.sent]


class FlakyActuator(SimulatedActuator):
    """The simulated actuator, whose Workload annotation writes fail while `failing`, or
    apply and then lose their answer while `losing_answers`."""

    failing = False
    losing_answers = False

    def annotate_workload(
        self,
        workload: WorkloadInfo,
        annotations: Mapping[str, str | None],
        *,
        resource_version: str | None = None,
    ) -> Annotated:
        if self.failing:
            raise ClusterUnavailable("patch workload: 503 from the API server")
        written = super().annotate_workload(
            workload, annotations, resource_version=resource_version
        )
        if self.losing_answers:
            raise AnswerLost("patch workload: sent, but the answer was lost")
        return written


class PausingCluster(SimulatedCluster):
    """The simulated cluster, whose kill switch turns to `pauses_after_first_read` once the
    cycle has read it: someone pauses the service while the cycle runs."""

    pauses_after_first_read: Pauses | None = None

    def read_pauses(self) -> Pauses:
        read = super().read_pauses()
        if self.pauses_after_first_read is not None:
            self.pauses = self.pauses_after_first_read
        return read


def targets_from_namespace(workload: WorkloadInfo, rule: Rule) -> tuple[str, ...]:
    """A stand-in for the routing: the namespace's notify annotation, else the rule's."""
    written = (workload.namespace_annotations or {}).get(keys.NOTIFY)
    return tuple(written.split(",")) if written else rule.notice.notify


def a_policy(*, action: RuleAction = RuleAction.DEACTIVATE, **notice: object) -> Policy:
    rules = UsageRules(
        threshold=0.05,
        window=WINDOW,
        slot=timedelta(minutes=1),
        min_coverage=0.8,
        stale_after=timedelta(minutes=3),
    )
    default = Rule(
        DEFAULT_RULE,
        usage=rules,
        grace_period=timedelta(minutes=15),
        action=action,
        notice=replace(NoticeRules(warn_before=WARN_BEFORE), **notice),  # type: ignore[arg-type]
    )
    return Policy(rules=(default,), actionable_kinds=frozenset({"RayCluster"}), dry_run=False)


@dataclass
class Rig:
    """One RayCluster (1 GPU) admitted at T0 in `team-a`, its pods running 30 s later."""

    policy: Policy = field(default_factory=a_policy)
    clock: SimulatedClock = field(default_factory=lambda: SimulatedClock(start=T0, speed=None))
    sink: RecordingSink = field(default_factory=RecordingSink)
    leads: bool = True
    route: Route = targets_from_namespace

    def __post_init__(self) -> None:
        queue = ClusterQueue.from_nominal("cq", {"cpu": 9000, "memory": 36 * 2**30, GPU: 4})
        kueue = KueueState().with_cluster_queue(queue)
        kueue = kueue.with_local_queue(LocalQueue(NAMESPACE, "user-queue", "cq"))
        self.cluster = PausingCluster(kueue=kueue, gpus=GpuPool.for_gpus(4), clock=self.clock)
        self.cluster.namespace_annotations[NAMESPACE] = {keys.NOTIFY: "team-a-slack"}
        self.actuator = FlakyActuator(cluster=self.cluster, clock=self.clock)
        self.fleet = ScriptedFleet(self.cluster, idle_since=T0)
        self.audit = FakeAuditLog()  # durable, like the runtime state: it outlives a restart
        spec = RayClusterSpec(
            NAMESPACE,
            "rc",
            "user-queue",
            head_gpus=0,
            workers=(WorkerGroup("gpu-group", replicas=1, gpus=1),),
        )
        self.ref: WorkloadRef = self.cluster.create(spec, now=T0)
        self.cluster.step(now=T0)
        self.reconciler = self.restarted()

    def restarted(self) -> Reconciler:
        """A new Reconciler on the same cluster objects: nothing carried over in memory."""
        return a_loop(
            self.cluster,
            self.fleet,
            actuator=self.actuator,
            policy=self.policy,
            clock=self.clock,
            logger=logging.getLogger("test.warning"),
            audit=self.audit,
            leads=lambda: self.leads,
            teller=NoticeTeller(sink=self.sink, route=self.route),
        )

    def cycle_at(self, offset: timedelta) -> Snapshot:
        """Move the clock to T0 + offset, let Kueue step, and run one cycle."""
        self.clock.advance(T0 + offset - self.clock.now())
        self.cluster.step(now=self.clock.now())
        return self.reconciler.run_once()

    def workload(self) -> WorkloadInfo:
        found = self.cluster.get_workload(self.ref)
        assert found is not None
        return found

    def events(self) -> list[str]:
        return [reason for ref, reason, _ in self.cluster.announcements if ref == self.ref]

    def messages(self) -> list[str]:
        return [message for ref, _, message in self.cluster.announcements if ref == self.ref]


def minutes(n: float) -> timedelta:
    return timedelta(minutes=n)


def due() -> timedelta:
    """When the RayCluster's GPU has been idle the whole window (its pods run at T0 + 30 s)."""
    return WINDOW + minutes(1)
