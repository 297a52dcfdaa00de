"""The policy engine: from what the cluster and Prometheus say to one decision per workload.

Each workload first falls under its rule (`domain/policy/rules.py`, first match wins), whose
window, threshold, grace and action judge it. Checks then run in a fixed order, and the first
that applies names the state: inactive → pending → KEDA-managed → kind not enabled →
namespace → priority class (those four are `protection`, which the delete rung asks too) →
exemption → rule unknown → grace → usage (busy, loading, idle-held, idle, not-running,
starting or unknown: `idleness.assess`) → pause. Only "idle for the whole window" or "not
running for `notRunningAfter`" (quota held without work, unless Kueue's own timer is in
charge) under a rule whose action is `deactivate` or `delete` leads to an action, and the per-cycle
cap then orders the candidates longest-idle first. (The warning stage, `domain/notices/staging.py`,
runs after: it may turn that action into a warning, and warns for a `warn` rule.)

The decision carries its `Rule` and the usage verdict (taken before any gate, for every active,
admitted workload whose rule can be evaluated): the warning stage, the act steps, the fresh
check, the breaker, KEDA and the annotation limits read them there, never matching or
assessing again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import cached_property

from autoscaler.domain.annotations import reactivated_at
from autoscaler.domain.audit.stopped import stopped_of
from autoscaler.domain.exemptions import Exemption, active_exemption
from autoscaler.domain.guards.caps import defer
from autoscaler.domain.models import (
    Action,
    Decision,
    FleetUsage,
    Pauses,
    State,
    WorkloadInfo,
)
from autoscaler.domain.policy.management import pending_reason
from autoscaler.domain.policy.protection import protection
from autoscaler.domain.policy.rules import (
    Rule,
    RuleAction,
    RuleMatch,
    match_rule,
)
from autoscaler.domain.usage.assessment import dated_clock
from autoscaler.domain.usage.idleness import Assessment, assess

# The fleet's usage: one read for a single view, or one per rule name (the reconciler's).
Usage = FleetUsage | Mapping[str, FleetUsage]


@dataclass(frozen=True)
class Policy:
    # Every rule in matching order (first match wins), the default rule last: `policy:` as
    # one `Rule`, built once by `settings/rules.py`.
    rules: tuple[Rule, ...]
    actionable_kinds: frozenset[str]
    protected_priority_classes: frozenset[str] = frozenset()
    include_namespaces: frozenset[str] = frozenset()  # empty: every namespace
    exclude_namespaces: frozenset[str] = frozenset()
    max_deactivations_per_cycle: int = 5
    dry_run: bool = True
    # Rule `reclaim: via-kueue`: the priority boost our mark writes (policy.viaKueue).
    via_kueue_boost: int = -2_000_000_000

    def __post_init__(self) -> None:
        if not self.rules:
            raise ValueError("a policy needs at least its default rule")

    @property
    def default_rule(self) -> Rule:
        """The rule that closes the list: it selects every workload."""
        return self.rules[-1]

    @cached_property
    def longest_loading(self) -> timedelta:
        """The longest maxLoading of every rule: how far back evidence reads must reach."""
        return max(rule.usage.max_loading for rule in self.rules)

    def match(self, workload: WorkloadInfo, usage: Usage) -> RuleMatch:
        return match_rule(workload, self.rules, gpu_models=gpu_models_of(workload, usage))


def decide(
    workload: WorkloadInfo,
    usage: Usage,
    *,
    policy: Policy,
    pauses: Pauses,
    now: datetime,
) -> Decision:
    """Judge the workload under the rule it falls under; the decision carries that rule and
    the usage verdict, so no later stage matches or assesses again."""
    match = policy.match(workload, usage)
    verdict = _judged(workload, match, usage, now=now)
    decided = _decide_under(workload, match, verdict, policy=policy, pauses=pauses, now=now)
    return replace(decided, rule_unknown=match.unknown, assessment=verdict)


def _judged(
    workload: WorkloadInfo, match: RuleMatch, usage: Usage, *, now: datetime
) -> Assessment | None:
    """The usage verdict under the workload's rule, taken before any gate (exemption, grace,
    protection, pause): the breaker and KEDA judge the data whatever the policy does with it.
    None when the workload is not active and admitted, or its rule cannot be evaluated."""
    if not (workload.active and workload.admitted) or not match.known:
        return None
    rule = match.rule
    fleet = usage_for(usage, rule, now=now)
    return assess(workload, fleet, rules=rule.usage, not_before=not_before(workload), now=now)


def _decide_under(
    workload: WorkloadInfo,
    match: RuleMatch,
    verdict: Assessment | None,
    *,
    policy: Policy,
    pauses: Pauses,
    now: datetime,
) -> Decision:
    rule = match.rule
    early = _before_usage(workload, rule=rule, policy=policy, now=now)
    if early is not None:
        return early
    if match.unknown is not None or verdict is None:  # active and admitted: only an unknown rule
        why = f"rule {rule.name} cannot be evaluated: {match.unknown}; no action"
        return _decision(workload, rule, State.UNKNOWN, why)
    ends = grace_end(workload, grace_period=rule.grace_period)
    if ends is not None and now < ends:
        until = dated_clock(ends, now=now)
        return _decision(workload, rule, State.GRACE, f"in grace period until {until}")
    return _after_usage(workload, verdict, rule=rule, dry_run=policy.dry_run, pauses=pauses)


def usage_for(usage: Usage, rule: Rule, *, now: datetime) -> FleetUsage:
    """The fleet's usage at the rule's (window, threshold); none read is a failure."""
    if isinstance(usage, FleetUsage):
        return usage
    found = usage.get(rule.name)
    if found is not None:
        return found
    return FleetUsage(
        window=rule.usage.window,
        threshold=rule.usage.threshold,
        evaluated_at=now,
        failure=f"no usage was read for rule {rule.name}",
    )


def gpu_models_of(workload: WorkloadInfo, usage: Usage) -> frozenset[str]:
    """dcgm-exporter's modelName of the workload's GPUs, as this cycle's read says. Every view
    comes from the same fleet read, so any of them tells."""
    fleets = [usage] if isinstance(usage, FleetUsage) else list(usage.values())[:1]
    namespace = workload.ref.namespace
    return frozenset(
        gpu.model
        for fleet in fleets
        for pod in workload.gpu_pods
        for gpu in fleet.for_pod(namespace, pod.name)
        if gpu.model
    )


def apply_cap(decisions: Sequence[Decision], *, limit: int) -> tuple[Decision, ...]:
    """The per-cycle cap: the longest idle first; the rest wait for a later cycle."""
    return defer(decisions, keep=limit, why=f"cap of {limit} deactivations per cycle reached")


def _before_usage(
    workload: WorkloadInfo, *, rule: Rule, policy: Policy, now: datetime
) -> Decision | None:
    stopped = stopped_of(workload)
    if stopped is not None:
        return _decision(workload, rule, State.DEACTIVATED, stopped.summary(now=now))
    if workload.finished_at is not None:
        at = dated_clock(workload.finished_at, now=now)
        finished = f"finished at {at}: Kueue released its quota"
        return _decision(workload, rule, State.PENDING, f"{finished}; no action")
    if not workload.admitted:
        return _decision(workload, rule, State.PENDING, pending_reason(workload.manager))
    protected = protection(workload, policy=policy)
    if protected is not None:
        return _decision(workload, rule, *protected)
    exemption = active_exemption(workload.annotations, workload.owner_annotations, now=now)
    if exemption is not None:
        return _decision(workload, rule, State.EXEMPT, _exemption_text(exemption, now=now))
    return None


def _exemption_text(exemption: Exemption | None, *, now: datetime) -> str:
    if exemption is None or exemption.until is None:
        return "exempt indefinitely"
    return f"exempt until {dated_clock(exemption.until, now=now)}"


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
    workload: WorkloadInfo, verdict: Assessment, *, rule: Rule, dry_run: bool, pauses: Pauses
) -> Decision:
    wants_action = stop_due(verdict, rule=rule)
    action = Action.NONE
    state, reason = verdict.state, verdict.reason
    if wants_action and rule.action is RuleAction.OBSERVE:
        reason = f"{reason}; observed only (rule {rule.name}'s action is observe): no action"
    elif wants_action and rule.action is RuleAction.WARN:
        reason = f"{reason}; warn only (rule {rule.name}'s action is warn)"
    elif wants_action:
        action = Action.WOULD_DEACTIVATE if dry_run else Action.DEACTIVATE
    if pauses.covers(workload.ref.namespace):
        scope = "service" if pauses.everything else f"namespace {workload.ref.namespace}"
        state, action = State.PAUSED, Action.NONE
        reason = f"paused ({scope}); would be {verdict.state.value}: {verdict.reason}"
    limit = limit_of(verdict, rule=rule)
    time_left = None if limit is None else max(limit - verdict.idle_for, timedelta(0))
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
        evidence=verdict.evidence,
        idle_held_gpus=verdict.idle_held_gpus,
        loading_counts_until=verdict.loading_counts_until,
        rule=rule,
    )


def limit_of(verdict: Assessment, *, rule: Rule) -> timedelta | None:
    """How long the class must last before the rule's action is due: the idle window, or
    `notRunningAfter` for quota held without work; None when no action ever comes (another
    class, or Kueue's own timer is in charge)."""
    if verdict.state is State.IDLE:
        return rule.usage.window
    if verdict.state is State.NOT_RUNNING and verdict.left_to is None:
        return rule.usage.not_running_after
    return None


def stop_due(verdict: Assessment, *, rule: Rule) -> bool:
    """Idle the whole window at or below the threshold, or not running for the limit."""
    limit = limit_of(verdict, rule=rule)
    if limit is None or verdict.idle_for < limit:
        return False
    if verdict.state is State.NOT_RUNNING:
        return True
    return verdict.peak is not None and verdict.peak <= rule.usage.threshold


def _decision(workload: WorkloadInfo, rule: Rule, state: State, reason: str) -> Decision:
    return Decision(
        workload=workload.ref,
        state=state,
        action=Action.NONE,
        reason=reason,
        gpus=workload.gpus,
        rule=rule,
    )
