"""Builders for the pure domain's values, so tests state only what matters to them.

    workload = a_workload("team-a", "rc").gpu_pod("w-0").admitted(at=minutes_ago(90)).build()
    fleet = usage().gpu("team-a", "w-0", peak=0.01).build(window=HOUR, threshold=0.05)

Every time defaults to a fixed instant (`NOW`) or a day before it, never to the clock, so
tables read the same on every run. A workload owned by a RayCluster, admitted a day ago,
with one Running pod per `*_pod` call and as many expected pods as were added, is the
default; each method changes one thing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Self

from autoscaler.domain import annotations as ann
from autoscaler.domain.kueue_config import KueueConfiguration
from autoscaler.domain.models import (
    FleetUsage,
    GpuUsage,
    OwnerRef,
    PodInfo,
    WorkloadInfo,
    WorkloadRef,
)
from autoscaler.domain.policy.decisions import Policy
from autoscaler.domain.policy.owners import KNOWN_OWNERS
from autoscaler.domain.policy.rules import DEFAULT_RULE, Rule
from autoscaler.domain.usage.evidence import NO_EVIDENCE, FleetEvidence
from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.domain.usage.idleness import UsageRules
from autoscaler.domain.usage.pod_states import AdmissionFacts, ContainerWait, PodsReady

NOW = datetime(2025, 3, 3, 12, 0, tzinfo=UTC)
LONG_AGO = NOW - timedelta(days=1)
HOUR = timedelta(hours=1)
THRESHOLD = 0.05


def minutes_ago(minutes: float, *, now: datetime = NOW) -> datetime:
    return now - timedelta(minutes=minutes)


def rfc3339(at: datetime) -> str:
    """How Kubernetes and our annotations spell a time."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def a_policy(
    *,
    threshold: float = THRESHOLD,
    window: timedelta = HOUR,
    min_coverage: float = 0.8,
    stale_after: timedelta = timedelta(minutes=3),
    grace: timedelta = timedelta(minutes=15),
    kinds: Iterable[str] = ("RayCluster",),
    include: Iterable[str] = (),
    exclude: Iterable[str] = (),
    protected_classes: Iterable[str] = (),
    cap: int = 5,
    dry_run: bool = False,
) -> Policy:
    """The shipped defaults, except that it acts (dry_run off) unless told otherwise."""
    rules = UsageRules(
        threshold=threshold,
        window=window,
        slot=timedelta(minutes=1),
        min_coverage=min_coverage,
        stale_after=stale_after,
    )
    return Policy(
        rules=(Rule(DEFAULT_RULE, usage=rules, grace_period=grace),),
        actionable_kinds=frozenset(kinds),
        protected_priority_classes=frozenset(protected_classes),
        include_namespaces=frozenset(include),
        exclude_namespaces=frozenset(exclude),
        max_deactivations_per_cycle=cap,
        dry_run=dry_run,
    )


# The default rule of `a_policy()`: the rule of a decision a test builds by hand.
A_DEFAULT_RULE = a_policy().default_rule


def a_rule_named(name: str) -> Rule:
    """The default rule's numbers under another name, for a decision that only names it."""
    return replace(A_DEFAULT_RULE, name=name)


def with_scoped(policy: Policy, *rules: Rule) -> Policy:
    """`policy` with `rules` before its default rule (in place of any it had)."""
    return replace(policy, rules=(*rules, policy.default_rule))


def with_default(policy: Policy, **changes: Any) -> Policy:
    """`policy` whose default rule `changes` alter (`action=`, `notice=`, `usage=`...)."""
    return replace(policy, rules=(*policy.rules[:-1], replace(policy.default_rule, **changes)))


def rule_named(policy: Policy, name: str) -> Rule | None:
    return next((rule for rule in policy.rules if rule.name == name), None)


@dataclass
class WorkloadBuilder:
    namespace: str
    name: str
    created: datetime = LONG_AGO
    admitted_at: datetime | None = LONG_AGO
    is_admitted: bool = True
    active: bool = True
    owner_kind: str | None = "RayCluster"
    pods: list[PodInfo] = field(default_factory=list)
    expected_pods: int | None = None
    priority_class: str | None = None
    annotations: dict[str, str] = field(default_factory=dict)
    owner_annotations: dict[str, str] = field(default_factory=dict)
    keda_managed: bool = False
    evicted_reason: str | None = None
    evicted_at: datetime | None = None
    cluster_queue: str | None = None
    admitted_usage: dict[tuple[str, str], int] = field(default_factory=dict)
    admission: AdmissionFacts | None = None
    finished_at: datetime | None = None

    def gpu_pod(
        self, name: str, *, gpus: int = 1, created: datetime | None = None, phase: str = "Running"
    ) -> Self:
        return self._pod(name, gpus=gpus, created=created, phase=phase)

    def cpu_pod(
        self, name: str, *, created: datetime | None = None, phase: str = "Running"
    ) -> Self:
        return self._pod(name, gpus=0, created=created, phase=phase)

    def waiting_pod(
        self,
        name: str,
        reason: str,
        *,
        image: str = "ghcr.io/x:v2",
        message: str = "",
        phase: str = "Pending",
        gpus: int = 1,
        created: datetime | None = None,
        container: str = "main",
        holds_gpus: bool = True,
    ) -> Self:
        """A GPU pod whose container waits for `reason` (ImagePullBackOff, ...), as the
        kubelet reports it; created with the Workload unless `created` says when. The
        waiting container is its GPU container unless `holds_gpus` is False (a sidecar)."""
        wait = ContainerWait(container, image, reason, message, holds_gpus=holds_gpus)
        pod = PodInfo(name, phase, created or self.created, gpus, waiting=(wait,))
        self.pods.append(pod)
        return self

    def unschedulable_pod(
        self,
        name: str,
        message: str = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
        *,
        scale_up_at: datetime | None = None,
        gpus: int = 1,
    ) -> Self:
        """A GPU pod the scheduler could not place (PodScheduled=False/Unschedulable)."""
        pod = PodInfo(name, "Pending", self.created, gpus, unschedulable=message)
        self.pods.append(replace(pod, scale_up_at=scale_up_at))
        return self

    def read_by_kueue(
        self,
        *,
        gpus: int | None = None,
        pods_ready: tuple[str, str, datetime | None] | None = None,
        pending_checks: Iterable[str] = (),
        reactivated_at: datetime | None = None,
        scale_ups_read: bool = True,
        kueue: KueueConfiguration | None = None,
        pods_unsure: str | None = None,
    ) -> Self:
        """The Workload's status as the Kueue adapter reads it: `gpus` admitted (the GPU
        pods' sum unless given), PodsReady as (status, reason, lastTransitionTime); its pods
        found by KubeRay's selector, and `pods_unsure` why some may have been missed."""
        self.admission = AdmissionFacts(
            gpus=sum(p.gpus for p in self.pods) if gpus is None else gpus,
            pods_read=True,
            scale_ups_read=scale_ups_read,
            reactivated_at=reactivated_at,
            pods_ready=PodsReady(*pods_ready) if pods_ready is not None else None,
            pending_checks=tuple(pending_checks),
            kueue=kueue,
            pods_found_by=f"pod selector ray.io/cluster={self.name}",
            pods_unsure=pods_unsure,
        )
        return self

    def expecting(self, pods: int) -> Self:
        """Kueue admitted this many pods, whatever exists."""
        self.expected_pods = pods
        return self

    def created_at(self, at: datetime) -> Self:
        self.created = at
        return self

    def admitted(self, *, at: datetime | None) -> Self:
        self.is_admitted, self.admitted_at = True, at
        return self

    def not_admitted(self) -> Self:
        self.is_admitted, self.admitted_at = False, None
        return self

    def charging(self, cluster_queue: str, usage: Mapping[tuple[str, str], int]) -> Self:
        """Admitted to `cluster_queue`, holding `usage` ((flavor, resource) → quantity) of its
        quota: what a stop would free for someone waiting there."""
        self.cluster_queue, self.admitted_usage = cluster_queue, dict(usage)
        return self

    def finished(self, *, at: datetime) -> Self:
        """Kueue's Finished=True since `at`: its quota released, read as not admitted."""
        self.is_admitted, self.admitted_at, self.finished_at = False, None, at
        return self

    def inactive(self) -> Self:
        self.active = False
        return self

    def evicted(self, reason: str, *, at: datetime | None = None) -> Self:
        """Kueue's Evicted condition, e.g. `Deactivated` once `spec.active` is false; `at`
        its lastTransitionTime."""
        self.evicted_reason, self.evicted_at = reason, at
        return self

    def owned_by(self, kind: str) -> Self:
        self.owner_kind = kind
        return self

    def no_owner(self) -> Self:
        self.owner_kind = None
        return self

    def priority(self, priority_class: str) -> Self:
        self.priority_class = priority_class
        return self

    def keda(self) -> Self:
        self.keda_managed = True
        return self

    def annotated(self, key: str, value: str, *, on_owner: bool = False) -> Self:
        (self.owner_annotations if on_owner else self.annotations)[key] = value
        return self

    def exempt(self, *, on_owner: bool = False) -> Self:
        return self.annotated(ann.EXEMPT, "true", on_owner=on_owner)

    def exempt_until(self, until: datetime | str, *, on_owner: bool = False) -> Self:
        text = until if isinstance(until, str) else rfc3339(until)
        return self.annotated(ann.EXEMPT_UNTIL, text, on_owner=on_owner)

    def reactivated(self, *, at: datetime, on_owner: bool = False) -> Self:
        return self.annotated(ann.REACTIVATED_AT, rfc3339(at), on_owner=on_owner)

    def build(self) -> WorkloadInfo:
        return WorkloadInfo(
            ref=WorkloadRef(self.namespace, self.name),
            uid=f"uid-{self.namespace}-{self.name}",
            queue="user-queue",
            owner=self._owner(),
            active=self.active,
            admitted=self.is_admitted,
            admitted_at=self.admitted_at,
            created_at=self.created,
            expected_pods=len(self.pods) if self.expected_pods is None else self.expected_pods,
            pods=tuple(self.pods),
            priority_class=self.priority_class,
            annotations=dict(self.annotations),
            owner_annotations=dict(self.owner_annotations),
            keda_managed=self.keda_managed,
            evicted_reason=self.evicted_reason,
            evicted_at=self.evicted_at,
            cluster_queue=self.cluster_queue,
            admitted_usage=dict(self.admitted_usage),
            admission=self.admission,
            finished_at=self.finished_at,
        )

    def _owner(self) -> OwnerRef | None:
        if self.owner_kind is None:
            return None
        row = KNOWN_OWNERS.get(self.owner_kind)  # its own API group, as the adapter reads it
        api_version = row.api_version if row is not None else "ray.io/v1"
        return OwnerRef(api_version, self.owner_kind, self.name, uid=f"uid-{self.name}")

    def _pod(self, name: str, *, gpus: int, created: datetime | None, phase: str) -> Self:
        self.pods.append(PodInfo(name, phase, created or self.created, gpus))
        return self


def a_workload(namespace: str, name: str) -> WorkloadBuilder:
    return WorkloadBuilder(namespace, name)


@dataclass
class UsageBuilder:
    series: dict[tuple[str, str], list[GpuUsage]] = field(default_factory=dict)
    doubtful: set[str] = field(default_factory=set)
    failure: str | None = None
    evidence: FleetEvidence = NO_EVIDENCE

    def gpu(
        self,
        namespace: str,
        pod: str,
        *,
        uuid: str | None = None,
        mig: str | None = None,
        peak: float | None = 0.01,
        coverage: float = 1.0,
        last_sample: datetime | None = NOW,
        last_busy: datetime | None = None,
    ) -> Self:
        """One exporter series for one GPU of `pod`; a fresh uuid unless one is given."""
        known = self.series.setdefault((namespace, pod), [])
        key = GpuKey(namespace, pod, uuid or f"GPU-{pod}-{len(known)}", mig)
        known.append(GpuUsage(key, peak, coverage, last_sample, last_busy))
        return self

    def doubting(self, *namespaces: str) -> Self:
        """Prometheus answered with warnings touching these namespaces ("*": all)."""
        self.doubtful.update(namespaces)
        return self

    def failing(self, reason: str) -> Self:
        self.failure = reason
        return self

    def seeing(self, evidence: FleetEvidence) -> Self:
        """The cycle's evidence signals (tests/support/evidence_builders.py)."""
        self.evidence = evidence
        return self

    def build(
        self,
        *,
        window: timedelta = HOUR,
        threshold: float = THRESHOLD,
        evaluated_at: datetime = NOW,
    ) -> FleetUsage:
        return FleetUsage(
            window=window,
            threshold=threshold,
            evaluated_at=evaluated_at,
            gpus={key: tuple(found) for key, found in self.series.items()},
            doubtful_namespaces=frozenset(self.doubtful),
            failure=self.failure,
            evidence=self.evidence,
        )


def usage() -> UsageBuilder:
    return UsageBuilder()
