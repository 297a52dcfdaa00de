"""One reconcile pass: read the cluster → query Prometheus (a constant number of fleet-wide
queries) → decide → act → publish an immutable snapshot.

Failing outside systems never cause a deactivation: a cluster read failure publishes the
previous rows as unknown and acts on nothing; a metrics failure makes every workload
unknown inside the policy engine. Before each action the Workload is read again and
decided again, so a change made since the cycle began (exemption, reactivation,
deletion) wins.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from autoscaler.decision_log import log_action, log_decision
from autoscaler.domain.idleness import UsageRules
from autoscaler.domain.models import (
    DEFAULT_PROFILE,
    Action,
    ActionRecord,
    Decision,
    FleetUsage,
    Pauses,
    PodRecord,
    Snapshot,
    State,
    WorkloadInfo,
    WorkloadStatus,
)
from autoscaler.domain.policy import Policy, decide, decide_fleet
from autoscaler.errors import ClusterError, Conflict, NotFound
from autoscaler.keda.managed import keda_managed_targets, mark_keda_managed
from autoscaler.ports import Clock, Cluster, DeactivationAudit, MetricSource


@dataclass(frozen=True)
class CycleInputs:
    workloads: Sequence[WorkloadInfo]
    gpu_pods: Sequence[PodRecord]
    pauses: Pauses
    usage: FleetUsage
    now: datetime


class Reconciler:
    def __init__(
        self,
        *,
        cluster: Cluster,
        metrics: MetricSource,
        policy: Policy,
        clock: Clock,
        publish: Callable[[Snapshot], None],
        logger: logging.Logger,
        profiles: Mapping[str, UsageRules] | None = None,
        keda_addresses: Sequence[str] = (),
    ) -> None:
        self._cluster = cluster
        self._metrics = metrics
        self._policy = policy
        self._clock = clock
        self._publish = publish
        self._log = logger
        self._profiles = dict(profiles or {})  # extra (window, threshold) views for KEDA
        self._keda_addresses = tuple(keda_addresses)  # where ScaledObjects reach our scaler
        self._cycle = 0
        self._previous: Snapshot | None = None

    def run_once(self) -> Snapshot:
        self._cycle += 1
        now = self._clock.now()
        try:
            workloads = self._keda_marked(self._cluster.list_workloads())
            gpu_pods = self._cluster.list_gpu_pods()
            pauses = self._cluster.read_pauses()
        except ClusterError as exc:
            return self._finish(self._cluster_outage(now, exc))
        usage_by_profile = self._read_usage(now)
        usage = usage_by_profile[DEFAULT_PROFILE]
        inputs = CycleInputs(
            workloads=workloads, gpu_pods=gpu_pods, pauses=pauses, usage=usage, now=now
        )
        decisions = decide_fleet(workloads, usage, policy=self._policy, pauses=pauses, now=now)
        for info, decision in zip(workloads, decisions, strict=True):
            log_decision(self._log, info, decision)
        actions = self._act(inputs, decisions)
        rows = tuple(WorkloadStatus(info, d) for info, d in zip(workloads, decisions, strict=True))
        return self._finish(
            Snapshot(
                cycle=self._cycle,
                taken_at=now,
                workloads=rows,
                cluster_ok=True,
                metrics_ok=usage.failure is None,
                dry_run=self._policy.dry_run,
                pauses=pauses,
                errors=(usage.failure,) if usage.failure else (),
                actions=actions,
                usage=usage_by_profile,
                gpu_pods=tuple(gpu_pods),
            )
        )

    def _keda_marked(self, workloads: Sequence[WorkloadInfo]) -> Sequence[WorkloadInfo]:
        """Workloads a ScaledObject scales through our signal are KEDA's: never patched."""
        if not self._keda_addresses:
            return workloads
        targets = keda_managed_targets(
            self._cluster.list_scaled_objects(), self_addresses=self._keda_addresses
        )
        return mark_keda_managed(workloads, targets)

    def _read_usage(self, now: datetime) -> dict[str, FleetUsage]:
        """One fleet-wide read per profile: the count never depends on the fleet's size."""
        profiles = {DEFAULT_PROFILE: self._policy.rules, **self._profiles}
        return {
            name: self._metrics.read_usage(window=r.window, threshold=r.threshold, now=now)
            for name, r in profiles.items()
        }

    def _finish(self, snapshot: Snapshot) -> Snapshot:
        self._previous = snapshot
        self._publish(snapshot)
        self._log.info(
            "cycle %d: %d workloads, %d actions%s",
            snapshot.cycle,
            len(snapshot.workloads),
            len(snapshot.actions),
            "" if snapshot.cluster_ok and snapshot.metrics_ok else " (degraded)",
            extra={
                "cycle": snapshot.cycle,
                "cluster_ok": snapshot.cluster_ok,
                "metrics_ok": snapshot.metrics_ok,
            },
        )
        return snapshot

    def _cluster_outage(self, now: datetime, exc: ClusterError) -> Snapshot:
        reason = f"cluster unreachable: {exc}"
        self._log.warning("cycle skipped: %s", reason, extra={"error_source": "cluster"})
        old_rows = self._previous.workloads if self._previous else ()
        rows = tuple(WorkloadStatus(row.info, _unknown(row.decision, reason)) for row in old_rows)
        return Snapshot(
            cycle=self._cycle,
            taken_at=now,
            workloads=rows,
            cluster_ok=False,
            metrics_ok=self._previous.metrics_ok if self._previous else False,
            dry_run=self._policy.dry_run,
            pauses=self._previous.pauses if self._previous else Pauses(),
            errors=(reason,),
        )

    def _act(self, inputs: CycleInputs, decisions: Sequence[Decision]) -> tuple[ActionRecord, ...]:
        chosen = [d for d in decisions if d.action is Action.DEACTIVATE]
        if not chosen:
            return ()
        try:
            pauses = self._cluster.read_pauses()  # a kill switch set mid-cycle still wins
        except ClusterError as exc:
            return tuple(self._record(d, inputs.now, f"skipped: {exc}") for d in chosen)
        fresh_inputs = replace(inputs, pauses=pauses)
        return tuple(self._deactivate(fresh_inputs, d) for d in chosen)

    def _deactivate(self, inputs: CycleInputs, decision: Decision) -> ActionRecord:
        try:
            fresh = self._cluster.get_workload(decision.workload)
            if fresh is None:
                return self._record(decision, inputs.now, "skipped: workload is gone")
            again = decide(
                fresh, inputs.usage, policy=self._policy, pauses=inputs.pauses, now=inputs.now
            )
            if again.action is not Action.DEACTIVATE:
                return self._record(decision, inputs.now, f"skipped: now {again.state}")
            self._cluster.record_deactivation(fresh, self._audit(again, inputs.now))
            self._cluster.deactivate(fresh)
        except (NotFound, Conflict) as exc:
            return self._record(decision, inputs.now, f"skipped, retried next cycle: {exc}")
        except ClusterError as exc:
            return self._record(decision, inputs.now, f"failed: {exc}")
        self._announce(fresh, again)
        return self._record(again, inputs.now, "done")

    def _announce(self, workload: WorkloadInfo, decision: Decision) -> None:
        try:
            self._cluster.announce(
                workload, reason="IdleGPUDeactivated", message=deactivation_message(decision)
            )
        except ClusterError as exc:  # the action happened; a missing Event is only reported
            self._log.warning("event not written for %s: %s", decision.workload, exc)

    def _audit(self, decision: Decision, now: datetime) -> DeactivationAudit:
        rules = self._policy.rules
        return DeactivationAudit(
            at=now,
            reason=decision.reason,
            peak=decision.peak,
            threshold=rules.threshold,
            policy=f"threshold {rules.threshold:.0%}, window {rules.window}, "
            f"min coverage {rules.min_coverage:.0%}, grace {self._policy.grace_period}",
        )

    def _record(self, decision: Decision, now: datetime, outcome: str) -> ActionRecord:
        record = ActionRecord(
            workload=decision.workload,
            action=decision.action,
            reason=decision.reason,
            at=now,
            outcome=outcome,
        )
        log_action(self._log, record)
        return record


def deactivation_message(decision: Decision) -> str:
    name = decision.workload.name
    namespace = decision.workload.namespace
    return (
        f"Deactivated by idle-gpu-autoscaler: {decision.reason}. "
        f"To bring it back: kubectl patch workload {name} -n {namespace} --type merge "
        '-p \'{"spec":{"active":true}}\'. The cluster\'s in-memory Ray state is gone, '
        "and it may wait in the queue until quota is free."
    )


def _unknown(decision: Decision, reason: str) -> Decision:
    if decision.state in (State.DEACTIVATED, State.PENDING):
        return decision
    return replace(decision, state=State.UNKNOWN, action=Action.NONE, reason=reason)
