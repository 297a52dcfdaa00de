"""The policy engine: from what the cluster and Prometheus say to one decision per workload.

Checks run in a fixed order, and the first that applies names the state:
inactive → pending → KEDA-managed → kind not enabled → namespace → priority class →
exemption → grace → usage (busy / idle / unknown) → pause. Only "idle for the whole window"
leads to an action, and the per-cycle cap then orders the candidates longest-idle first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from autoscaler.domain.annotations import Exemption, active_exemption, reactivated_at
from autoscaler.domain.caps import defer
from autoscaler.domain.idleness import Assessment, UsageRules, assess
from autoscaler.domain.models import (
    Action,
    Decision,
    FleetUsage,
    Pauses,
    State,
    WorkloadInfo,
)


@dataclass(frozen=True)
class Policy:
    rules: UsageRules
    grace_period: timedelta
    actionable_kinds: frozenset[str]
    protected_priority_classes: frozenset[str] = frozenset()
    include_namespaces: frozenset[str] = frozenset()  # empty: every namespace
    exclude_namespaces: frozenset[str] = frozenset()
    max_deactivations_per_cycle: int = 5
    dry_run: bool = True


def decide_fleet(
    workloads: Iterable[WorkloadInfo],
    usage: FleetUsage,
    *,
    policy: Policy,
    pauses: Pauses,
    now: datetime,
) -> tuple[Decision, ...]:
    """Decide every workload, then apply the per-cycle cap to the deactivations."""
    decisions = [decide(w, usage, policy=policy, pauses=pauses, now=now) for w in workloads]
    return apply_cap(decisions, limit=policy.max_deactivations_per_cycle)


def decide(
    workload: WorkloadInfo,
    usage: FleetUsage,
    *,
    policy: Policy,
    pauses: Pauses,
    now: datetime,
) -> Decision:
    early = _before_usage(workload, policy=policy, now=now)
    if early is not None:
        return early
    ends = grace_end(workload, grace_period=policy.grace_period)
    if ends is not None and now < ends:
        return _decision(workload, State.GRACE, f"in grace period until {ends.isoformat()}")
    verdict = assess(workload, usage, rules=policy.rules, not_before=not_before(workload), now=now)
    return _after_usage(workload, verdict, policy=policy, pauses=pauses)


def apply_cap(decisions: Sequence[Decision], *, limit: int) -> tuple[Decision, ...]:
    """The per-cycle cap: the longest idle first; the rest wait for a later cycle."""
    return defer(decisions, keep=limit, why=f"cap of {limit} deactivations per cycle reached")


def _before_usage(workload: WorkloadInfo, *, policy: Policy, now: datetime) -> Decision | None:
    ns = workload.ref.namespace
    exemption = active_exemption(workload.annotations, workload.owner_annotations, now=now)
    checks: list[tuple[bool, State, str]] = [
        (not workload.active, State.DEACTIVATED, "spec.active is false"),
        (not workload.admitted, State.PENDING, "not admitted by Kueue"),
        (workload.keda_managed, State.KEDA_MANAGED, "a KEDA ScaledObject uses our signal"),
        (
            workload.owner is None or workload.owner.kind not in policy.actionable_kinds,
            State.PROTECTED,
            f"owner kind {workload.owner.kind if workload.owner else 'none'} is not enabled",
        ),
        (
            bool(policy.include_namespaces) and ns not in policy.include_namespaces,
            State.PROTECTED,
            f"namespace {ns} is not in the included namespaces",
        ),
        (ns in policy.exclude_namespaces, State.PROTECTED, f"namespace {ns} is excluded"),
        (
            workload.priority_class in policy.protected_priority_classes,
            State.PROTECTED,
            f"priority class {workload.priority_class} is protected",
        ),
        (exemption is not None, State.EXEMPT, _exemption_text(exemption)),
    ]
    for applies, state, reason in checks:
        if applies:
            return _decision(workload, state, reason)
    return None


def _exemption_text(exemption: Exemption | None) -> str:
    if exemption is None or exemption.until is None:
        return "exempt indefinitely"
    return f"exempt until {exemption.until.isoformat()}"


def grace_end(workload: WorkloadInfo, *, grace_period: timedelta) -> datetime | None:
    reactivated = reactivated_at(workload.annotations, workload.owner_annotations)
    # Admitted with no recorded time: count the grace from creation rather than skip it.
    admitted = workload.admitted_at or workload.created_at
    starts = [admitted, reactivated]
    known = [t for t in starts if t is not None]
    return max(known) + grace_period if known else None


def not_before(workload: WorkloadInfo) -> datetime:
    """Idleness counts only after admission, reactivation and the GPU pods' creation."""
    starts = [
        workload.created_at,
        workload.admitted_at,
        reactivated_at(workload.annotations, workload.owner_annotations),
        *(pod.created_at for pod in workload.gpu_pods),
    ]
    return max(t for t in starts if t is not None)


def _after_usage(
    workload: WorkloadInfo, verdict: Assessment, *, policy: Policy, pauses: Pauses
) -> Decision:
    wants_action = (
        verdict.state is State.IDLE
        and verdict.idle_for >= policy.rules.window
        and verdict.peak is not None
        and verdict.peak <= policy.rules.threshold
    )
    action = Action.NONE
    if wants_action:
        action = Action.WOULD_DEACTIVATE if policy.dry_run else Action.DEACTIVATE
    state, reason = verdict.state, verdict.reason
    if pauses.covers(workload.ref.namespace):
        scope = "service" if pauses.everything else f"namespace {workload.ref.namespace}"
        state, action = State.PAUSED, Action.NONE
        reason = f"paused ({scope}); would be {verdict.state.value}: {verdict.reason}"
    time_left = None
    if verdict.state is State.IDLE:
        time_left = max(policy.rules.window - verdict.idle_for, timedelta(0))
    return Decision(
        workload=workload.ref,
        state=state,
        action=action,
        reason=reason,
        gpus=workload.gpus,
        peak=verdict.peak,
        coverage=verdict.coverage,
        idle_since=verdict.idle_since,
        time_left=time_left,
    )


def _decision(workload: WorkloadInfo, state: State, reason: str) -> Decision:
    return Decision(
        workload=workload.ref, state=state, action=Action.NONE, reason=reason, gpus=workload.gpus
    )
