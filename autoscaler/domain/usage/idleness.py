"""Judging one workload's usage: busy, loading, idle-held, idle (for how long), not-running,
starting or unknown. `assess` is the single entry point: the policy, KEDA, the breaker's
baseline and the backtest all call it.

The steps, each in its own module: whether its GPU pods run at all, from Kubernetes'
objects (`not_running.py`: not-running, starting, partly running) → structural problems and
doubtful namespaces (here; a running GPU pod the metrics miss is "running but not
monitored") →
which facts are the workload's own (`attribution.py`) → compute, busy and idle-held
(`classify.py`) → Ray tasks, failed signals and loading (`loading.py`).

"No data" is never idle: a missing, NaN, stale or thinly covered series, or an evidence
signal whose query failed, makes the workload unknown, and unknown never leads to a
deactivation.
"""

from __future__ import annotations

from datetime import datetime

from autoscaler.domain.models import FleetUsage, State, WorkloadInfo
from autoscaler.domain.usage.assessment import Assessment, UsageRules
from autoscaler.domain.usage.attribution import attribute
from autoscaler.domain.usage.classify import classify
from autoscaler.domain.usage.not_running import judge_start

__all__ = ["Assessment", "UsageRules", "assess"]


def assess(
    workload: WorkloadInfo,
    usage: FleetUsage,
    *,
    rules: UsageRules,
    not_before: datetime,
    now: datetime,
) -> Assessment:
    """Judge a workload; `not_before` is when idleness may start counting (admission, pods)."""
    if usage.window != rules.window or usage.threshold != rules.threshold:
        return Assessment(State.UNKNOWN, "usage was read for another window or threshold")
    started = judge_start(workload, rules=rules, now=now)
    if started is not None:
        return started
    problem = _structural_problem(workload, usage)
    if problem is not None:
        return Assessment(State.UNKNOWN, problem)
    gap = _series_gap(workload, usage)
    if gap is not None:
        return gap
    facts = attribute(workload, usage, rules=rules, now=now)
    return classify(
        workload,
        facts,
        failures=usage.evidence.failures,
        rules=rules,
        not_before=not_before,
        now=now,
    )


def _structural_problem(workload: WorkloadInfo, usage: FleetUsage) -> str | None:
    doubt = usage.doubt_about(workload.ref.namespace)
    if doubt is not None:
        return doubt
    if not workload.gpu_pods:
        return "no pod of this workload requests GPUs"
    if len(workload.pods) < workload.expected_pods:
        return f"{len(workload.pods)} of {workload.expected_pods} admitted pods exist"
    not_running = [p.name for p in workload.pods if not p.phase_running]
    if not_running:
        return f"pods not running: {', '.join(sorted(not_running))}"
    return None


def _series_gap(workload: WorkloadInfo, usage: FleetUsage) -> Assessment | None:
    """A GPU pod with fewer GPU series than GPUs: unknown. When Kubernetes says every GPU
    pod runs, that is a monitoring gap ("running but not monitored") an admin must fix."""
    for pod in workload.gpu_pods:
        # Count devices, not series: a GPU reported twice must not stand in for a missing one.
        seen = {
            (g.key.uuid, g.key.mig_instance)
            for g in usage.for_pod(workload.ref.namespace, pod.name)
        }
        if len(seen) < pod.gpus:
            why = f"pod {pod.name} has {len(seen)} GPU series for {pod.gpus} requested GPUs"
            if all(p.gpu_containers_run for p in workload.gpu_pods):
                return Assessment(
                    State.UNKNOWN, f"running but not monitored: {why}", unmonitored=True
                )
            return Assessment(State.UNKNOWN, why)
    return None
