"""One reconcile pass: read the cluster → query Prometheus (a constant number of fleet-wide
queries) → decide → reclaim → stage → screen → cap → act (engine/acting/steps.py) → publish
an immutable snapshot.

Failing outside systems never cause a deactivation: a cluster read failure publishes the
previous rows as unknown and acts on nothing; a metrics failure makes every workload
unknown inside the policy engine.

The screen (engine/cycle/screen.py) passes the decisions through the contested marks, the
mass-idle circuit breaker and the hourly cap, and the snapshot reports what it held back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from autoscaler.core.errors import ClusterError
from autoscaler.core.ports import KueueFeatures, PendingWork
from autoscaler.domain.guards.caps import release_broken_sets
from autoscaler.domain.models import (
    DEFAULT_PROFILE,
    Action,
    Decision,
    FleetUsage,
    GuardReport,
    Pauses,
    Snapshot,
    State,
    UsageView,
    WaitersSeen,
    WorkloadInfo,
    WorkloadStatus,
)
from autoscaler.domain.policy.decisions import apply_cap, decide
from autoscaler.domain.policy.rules import Reclaim
from autoscaler.engine.acting.context import ActContext
from autoscaler.engine.acting.steps import ActSteps
from autoscaler.engine.cycle.decision_log import log_decision
from autoscaler.engine.cycle.keda_managed import keda_managed_targets, mark_keda_managed
from autoscaler.engine.cycle.reclaim import Reclaimer
from autoscaler.engine.cycle.screen import Screen
from autoscaler.engine.cycle.stage import CycleInputs, stage_all
from autoscaler.engine.cycle.via_kueue import ViaKueue


class Reconciler:
    def __init__(
        self,
        *,
        context: ActContext,
        screen: Screen,
        publish: Callable[[Snapshot], None],
        pending: PendingWork | None = None,
        keda_addresses: Sequence[str] = (),
        features: KueueFeatures | None = None,
    ) -> None:
        """`context`: the act context (`engine/acting/context.py`); the cycle reads the
        cluster and Prometheus through the same ports, decides under the same policy, and
        with several replicas only the leader (`context.leads`) acts and writes the guards'
        state, while every replica decides and publishes snapshots. `screen`: the contested
        marks, the breaker and the hourly cap on the cycle's decisions."""
        self._cluster, self._metrics = context.cluster, context.metrics
        self._policy, self._clock, self._log = context.policy, context.clock, context.logger
        self._leads = context.leads
        self._publish = publish
        self._keda_addresses = tuple(keda_addresses)  # where ScaledObjects reach our scaler
        self._screen = screen
        self._actor = ActSteps(context)
        self._reclaimer = Reclaimer(pending=pending, logger=context.logger)
        self._via_kueue = ViaKueue(features=features, policy=self._policy, logger=self._log)
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
        usage_by_rule = self._read_usage(now)
        usage = usage_by_rule[DEFAULT_PROFILE]
        at_eviction = self._via_kueue.at_eviction(workloads, usage_by_rule, pauses=pauses, now=now)
        inputs = CycleInputs(
            workloads=workloads,
            gpu_pods=gpu_pods,
            pauses=pauses,
            usage=usage_by_rule,
            now=now,
            served=self._via_kueue.served(),
            at_eviction=at_eviction,
        )
        decisions, report, waiters = self._decide(inputs)
        for info, decision in zip(workloads, decisions, strict=True):
            log_decision(self._log, info, decision, now=now)
        actions = self._actor.act(inputs, decisions)
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
                usage=usage_by_rule,
                gpu_pods=tuple(gpu_pods),
                guards=report,
                waiters=waiters,
                kueue_gate=inputs.served,
            )
        )

    def _decide(
        self, inputs: CycleInputs
    ) -> tuple[tuple[Decision, ...], GuardReport, WaitersSeen | None]:
        """Decide, reclaim where someone waits, stage the warnings, guard, cap."""
        workloads, now = inputs.workloads, inputs.now
        decided, waiters = self._reclaimer.screen(
            workloads,
            [
                decide(w, inputs.usage, policy=self._policy, pauses=inputs.pauses, now=now)
                for w in workloads
            ],
            contended=self._contended,
        )
        # The warning stage after the reclaim screen (a contended stop is warned when it is
        # picked) and before the guards (a held warning is never given).
        decided = stage_all(workloads, decided, policy=self._policy, pauses=inputs.pauses, now=now)
        # A via-kueue stop due (its notice run) becomes a mark, before the guards count it.
        decided = self._via_kueue.judged(inputs, decided)
        # The guards first, then the per-cycle cap, so the cap's slots never go to workloads
        # the guards hold back (contested ones would take them cycle after cycle).
        screened, report = self._screened(inputs, decided)
        capped = apply_cap(screened, limit=self._policy.max_deactivations_per_cycle)
        return release_broken_sets(capped), report, waiters

    def _contended(self, decision: Decision) -> bool:
        """Whether the decision's rule reclaims only when someone waits."""
        return decision.rule.reclaim is Reclaim.WHEN_CONTENDED

    def _screened(
        self, inputs: CycleInputs, decisions: tuple[Decision, ...]
    ) -> tuple[tuple[Decision, ...], GuardReport]:
        screened = self._screen.screen(
            inputs.workloads, inputs.usage, decisions, now=inputs.now, leads=self._leads()
        )
        return screened.decisions, screened.report

    def _keda_marked(self, workloads: Sequence[WorkloadInfo]) -> Sequence[WorkloadInfo]:
        """Workloads a ScaledObject scales through our signal are KEDA's: never patched."""
        if not self._keda_addresses:
            return workloads
        targets = keda_managed_targets(
            self._cluster.list_scaled_objects(), self_addresses=self._keda_addresses
        )
        return mark_keda_managed(workloads, targets)

    def _read_usage(self, now: datetime) -> dict[str, FleetUsage]:
        """One fleet-wide read for every rule, keyed by the rule's name: the count of queries
        never depends on the fleet's size, nor on how many rules judge it."""
        views = {
            rule.name: UsageView(rule.usage.window, rule.usage.threshold)
            for rule in self._policy.rules
        }
        read = self._metrics.read_views(set(views.values()), now=now)
        return {name: read[view] for name, view in views.items()}

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
            guards=self._previous.guards if self._previous else None,
            kueue_gate=self._previous.kueue_gate if self._previous else None,
        )


def _unknown(decision: Decision, reason: str) -> Decision:
    if decision.state in (State.DEACTIVATED, State.PENDING):
        return decision
    return replace(decision, state=State.UNKNOWN, action=Action.NONE, reason=reason)
