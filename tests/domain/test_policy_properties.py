"""Invariants of the policy engine, checked on generated workloads and fleets.

Two kinds of input: anything at all (see `strategies`), mostly idle with every kind of
trouble sprinkled in, where each property states its own expectation from the inputs
without asking the engine; and workloads due for deactivation (see `due_workloads`),
where changing any one thing that should hold them back must hold them back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from random import Random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.domain.annotations import EXEMPT, EXEMPT_UNTIL, REACTIVATED_AT
from autoscaler.domain.models import (
    Action,
    Decision,
    FleetUsage,
    GpuUsage,
    Pauses,
    State,
    WorkloadInfo,
)
from autoscaler.domain.policy.decisions import Policy, apply_cap, decide
from autoscaler.domain.usage.idleness import UsageRules
from tests.domain.due_workloads import DOUBTS, PICK, WAITS, due_cases
from tests.domain.strategies import DECISIONS, Case, cases, fleets, run, some_minutes_ago
from tests.support.decision_builders import decide_fleet
from tests.support.domain_builders import NOW

FAST = settings(max_examples=200, deadline=None)
EACH = settings(max_examples=25, deadline=None)  # per row of a parametrized table
ACTING = (Action.DEACTIVATE, Action.WOULD_DEACTIVATE)


# --- what the inputs say, computed without the engine ----------------------------------------


def data_in_doubt(case: Case, *, now: datetime = NOW) -> bool:
    """Anything a careful reader would not trust: then there must be no deactivation."""
    workload, fleet, rules = case.workload, case.usage, case.policy.default_rule.usage
    namespace = workload.ref.namespace
    if fleet.failure or {"*", namespace} & fleet.doubtful_namespaces:
        return True
    if len(workload.pods) < workload.expected_pods or not workload.gpu_pods:
        return True
    if any(pod.phase != "Running" for pod in workload.pods):
        return True
    for pod in workload.gpu_pods:
        series = fleet.for_pod(namespace, pod.name)
        if len({g.key for g in series}) < pod.gpus:
            return True
    return any(untrustworthy(gpu, rules=rules, now=now) for gpu in series_of(case))


def untrustworthy(gpu: GpuUsage, *, rules: UsageRules, now: datetime) -> bool:
    return (
        gpu.peak is None
        or math.isnan(gpu.peak)
        or math.isnan(gpu.coverage)
        or gpu.coverage < rules.min_coverage
        or gpu.last_sample_at is None
        or now - gpu.last_sample_at > rules.stale_after
    )


def written_time(annotations: Mapping[str, str], key: str) -> datetime | None:
    """A time the generators wrote as RFC 3339 UTC; anything else is not a time."""
    value = annotations.get(key, "")
    if not value.endswith("Z"):
        return None
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def reactivations(workload: WorkloadInfo) -> list[datetime | None]:
    sources = (workload.annotations, workload.owner_annotations)
    return [written_time(a, REACTIVATED_AT) for a in sources]


def left_alone_by_configuration(case: Case, *, now: datetime = NOW) -> bool:
    """Protected by kind, namespace or priority class, or exempt by annotation."""
    workload, policy = case.workload, case.policy
    namespace = workload.ref.namespace
    kind_off = workload.owner is None or workload.owner.kind not in policy.actionable_kinds
    outside = bool(policy.include_namespaces) and namespace not in policy.include_namespaces
    sources = (workload.annotations, workload.owner_annotations)
    exempt = any(a.get(EXEMPT, "").lower() == "true" for a in sources) or any(
        (until := written_time(a, EXEMPT_UNTIL)) is not None and until > now for a in sources
    )
    return (
        kind_off
        or outside
        or namespace in policy.exclude_namespaces
        or workload.priority_class in policy.protected_priority_classes
        or exempt
    )


def series_of(case: Case) -> list[GpuUsage]:
    namespace = case.workload.ref.namespace
    return [g for p in case.workload.gpu_pods for g in case.usage.for_pod(namespace, p.name)]


def window_start(workload: WorkloadInfo) -> datetime:
    """When idleness may start counting: the latest of creation, admission, reactivation
    and the GPU pods' creation."""
    starts = [workload.created_at, workload.admitted_at, *reactivations(workload)]
    starts += [pod.created_at for pod in workload.gpu_pods]
    return max(t for t in starts if t is not None)


def grace_ends(case: Case) -> datetime | None:
    workload = case.workload
    starts = [t for t in (workload.admitted_at, *reactivations(workload)) if t is not None]
    return max(starts) + case.policy.default_rule.grace_period if starts else None


def idle_since(decision: Decision) -> datetime:
    assert decision.idle_since is not None, "a deactivation always says since when"
    return decision.idle_since


def slug(sentence: str) -> str:
    return sentence.lower().replace("'", "").replace(" ", "-")


# --- due workloads: deactivated, unless any one thing holds them back -----------------------


@FAST
@given(due_cases())
def test_a_workload_idle_for_a_whole_trustworthy_window_is_deactivated(case: Case) -> None:
    decision = run(case)

    assert decision.state is State.IDLE
    expected = Action.WOULD_DEACTIVATE if case.policy.dry_run else Action.DEACTIVATE
    assert decision.action is expected


@pytest.mark.parametrize("doubt", sorted(DOUBTS), ids=slug)
@EACH
@given(case=due_cases(), pick=PICK)
def test_any_one_doubt_about_the_data_makes_a_due_workload_unknown(
    doubt: str, case: Case, pick: int
) -> None:
    decision = run(DOUBTS[doubt](case, pick))

    assert (decision.state, decision.action) == (State.UNKNOWN, Action.NONE)


@pytest.mark.parametrize("reason", sorted(WAITS), ids=slug)
@EACH
@given(case=due_cases(), pick=PICK)
def test_any_one_reason_to_wait_leaves_a_due_workload_alone(
    reason: str, case: Case, pick: int
) -> None:
    change, states = WAITS[reason]

    decision = run(change(case, pick))

    assert decision.action is Action.NONE
    assert decision.state in states


@FAST
@given(due_cases(), st.integers(0, 600))
def test_a_due_workload_stays_due_as_time_passes_while_its_data_stays_fresh(
    case: Case, seconds: int
) -> None:
    later = NOW + timedelta(seconds=seconds)
    if not data_in_doubt(case, now=later):
        assert run(case, now=later).action in ACTING


# --- properties of any one decision ---------------------------------------------------------------


@FAST
@given(cases())
def test_data_in_doubt_never_leads_to_a_deactivation(case: Case) -> None:
    if data_in_doubt(case):
        assert run(case).action not in ACTING


@FAST
@given(cases())
def test_a_deactivation_needs_a_whole_idle_window_after_every_start(case: Case) -> None:
    decision = run(case)

    if decision.action in ACTING:
        window_opened = NOW - case.policy.default_rule.usage.window
        assert decision.state is State.IDLE
        assert decision.time_left == timedelta(0)
        assert idle_since(decision) <= window_opened
        assert window_start(case.workload) <= window_opened
        assert all(
            gpu.peak is not None and gpu.peak <= case.policy.default_rule.usage.threshold
            for gpu in series_of(case)
        )
        assert all(
            gpu.last_busy_at is None or gpu.last_busy_at <= window_opened for gpu in series_of(case)
        )


@FAST
@given(cases())
def test_protected_or_exempt_workloads_are_never_acted_on(case: Case) -> None:
    if left_alone_by_configuration(case):
        decision = run(case)
        assert decision.action is Action.NONE
        assert decision.state in {
            State.PROTECTED,
            State.KIND_NOT_ENABLED,
            State.EXEMPT,
            State.DEACTIVATED,
            State.PENDING,
            State.KEDA_MANAGED,
        }


@FAST
@given(cases())
def test_nothing_is_acted_on_inside_grace(case: Case) -> None:
    ends = grace_ends(case)
    if ends is not None and ends > NOW:
        assert run(case).action is Action.NONE


@FAST
@given(cases())
def test_a_pause_stops_every_action(case: Case) -> None:
    if case.pauses.covers(case.workload.ref.namespace):
        decision = run(case)
        assert decision.action is Action.NONE
        assert decision.state is not State.IDLE


@FAST
@given(cases())
def test_a_decision_is_a_pure_function_of_its_inputs(case: Case) -> None:
    # Compared as text: a NaN coverage is reported as it came, and NaN != NaN.
    assert repr(run(case)) == repr(run(case))


@FAST
@given(cases())
def test_dry_run_changes_only_the_name_of_the_action(case: Case) -> None:
    acting = run(replace(case, policy=replace(case.policy, dry_run=False)))
    dry = run(replace(case, policy=replace(case.policy, dry_run=True)))

    renamed = Action.WOULD_DEACTIVATE if acting.action is Action.DEACTIVATE else acting.action
    assert repr(dry) == repr(replace(acting, action=renamed))


@FAST
@given(cases(), st.integers(0, 300))
def test_time_left_only_shrinks_as_time_passes(case: Case, seconds: int) -> None:
    later = NOW + timedelta(seconds=seconds)
    before, after = run(case), run(case, now=later)
    if before.time_left is not None and after.time_left is not None:
        assert after.time_left <= before.time_left


@FAST
@given(cases(), st.sampled_from([0.0, 0.05, 0.050001, 0.5, 1.0]), some_minutes_ago(-5, 60))
def test_more_activity_never_causes_a_deactivation(
    case: Case, bump: float, busy_at: datetime
) -> None:
    busier = replace(case, usage=_busier(case.usage, bump=bump, busy_at=busy_at))
    if run(busier).action in ACTING:
        assert run(case).action in ACTING


def _busier(fleet: FleetUsage, *, bump: float, busy_at: datetime) -> FleetUsage:
    """Every known peak at least `bump`, every GPU busy no earlier than `busy_at`."""

    def busier(gpu: GpuUsage) -> GpuUsage:
        peak = gpu.peak if gpu.peak is None or math.isnan(gpu.peak) else max(gpu.peak, bump)
        last_busy = busy_at if gpu.last_busy_at is None else max(gpu.last_busy_at, busy_at)
        return replace(gpu, peak=peak, last_busy_at=last_busy)

    return replace(fleet, gpus={k: tuple(map(busier, v)) for k, v in fleet.gpus.items()})


# --- properties of a fleet ----------------------------------------------------------------------


@FAST
@given(fleets())
def test_the_cap_bounds_the_deactivations_of_any_fleet(
    fleet: tuple[list[WorkloadInfo], FleetUsage, Policy],
) -> None:
    workloads_, usage_, policy = fleet
    alone = [decide(w, usage_, policy=policy, pauses=Pauses(), now=NOW) for w in workloads_]

    capped = decide_fleet(workloads_, usage_, policy=policy, pauses=Pauses(), now=NOW)

    acting = [d for d in capped if d.action in ACTING]
    candidates = [d for d in alone if d.action in ACTING]
    assert len(acting) == min(policy.max_deactivations_per_cycle, len(candidates))
    deferred = [d for d in capped if d.action is Action.DEFERRED]
    assert len(acting) + len(deferred) == len(candidates)
    assert all(idle_since(a) <= idle_since(d) for a in acting for d in deferred)
    for one, other in zip(alone, capped, strict=True):
        if one.action not in ACTING:
            assert repr(one) == repr(other)


@FAST
@given(fleets(), st.randoms(use_true_random=False))
def test_the_order_of_the_fleet_does_not_change_who_is_acted_on(
    fleet: tuple[list[WorkloadInfo], FleetUsage, Policy], rng: Random
) -> None:
    workloads_, usage_, policy = fleet
    shuffled = list(workloads_)
    rng.shuffle(shuffled)

    first = decide_fleet(workloads_, usage_, policy=policy, pauses=Pauses(), now=NOW)
    second = decide_fleet(shuffled, usage_, policy=policy, pauses=Pauses(), now=NOW)

    assert {d.workload: repr(d) for d in first} == {d.workload: repr(d) for d in second}


@FAST
@given(DECISIONS, st.integers(0, 6))
def test_the_cap_keeps_the_longest_idle_and_defers_only_the_rest(
    decisions: list[Decision], limit: int
) -> None:
    capped = apply_cap(decisions, limit=limit)

    acting = [d for d in capped if d.action in ACTING]
    deferred = [d for d in capped if d.action is Action.DEFERRED]
    candidates = [d for d in decisions if d.action in ACTING]
    assert len(acting) == min(limit, len(candidates))
    assert len(acting) + len(deferred) == len(candidates)
    assert all(idle_since(a) <= idle_since(d) for a in acting for d in deferred)
    assert [d.workload for d in capped] == [d.workload for d in decisions]
