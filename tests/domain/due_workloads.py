"""Workloads due for deactivation, and single changes that must each hold them back.

`due_cases()` draws a RayCluster whose every GPU has been idle, with trustworthy data, for
a whole window after admission and after its pods started, with limits met exactly now and
then (peak at the threshold, coverage at the minimum, newest sample exactly `stale_after`
old, the window just complete). `DOUBTS` change one thing about the data, `WAITS` one thing
about the workload, its policy or the pauses; `pick` chooses which pod or GPU.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

from hypothesis import strategies as st

from autoscaler.domain.annotations import EXEMPT, EXEMPT_UNTIL, REACTIVATED_AT
from autoscaler.domain.models import GpuUsage, OwnerRef, Pauses, State
from autoscaler.domain.usage.idleness import UsageRules
from tests.domain.strategies import NAMESPACE, POD_COUNT, Case, minutes
from tests.support.domain_builders import NOW, a_policy, a_workload, rfc3339, usage

DUE_POLICIES = st.builds(
    a_policy,
    threshold=st.sampled_from([0.05, 0.1]),
    window=minutes(30, 60, 120),
    min_coverage=st.sampled_from([0.5, 0.8, 1.0]),
    stale_after=minutes(3, 5),
    grace=minutes(0, 15, 30),
    dry_run=st.booleans(),
)
SHARE = st.sampled_from([0.0, 0.5, 1.0])  # of a limit: at rest, halfway, exactly on it
EXTRA_MINUTES = st.integers(0, 1000).map(lambda n: timedelta(minutes=n))
GPUS_PER_POD = st.integers(1, 2)
PICK = st.integers(0, 99)  # which pod or GPU, modulo how many there are


@st.composite
def due_cases(draw: st.DrawFn) -> Case:
    """A RayCluster every GPU of which has been idle, with trustworthy data, for a whole
    window after admission and after its pods started: it must be deactivated."""
    policy = draw(DUE_POLICIES)
    rules = policy.default_rule.usage
    admitted = NOW - max(rules.window, policy.default_rule.grace_period) - draw(EXTRA_MINUTES)
    builder = a_workload(draw(NAMESPACE), "rc").created_at(admitted).admitted(at=admitted)
    if draw(st.booleans()):
        builder.cpu_pod("rc-head", created=admitted)
    for index in range(draw(POD_COUNT)):
        started = NOW - rules.window - draw(EXTRA_MINUTES)
        builder.gpu_pod(f"rc-{index}", gpus=draw(GPUS_PER_POD), created=started)
    workload = builder.build()
    found = usage()
    for pod in workload.gpu_pods:
        for index in range(pod.gpus):
            found.gpu(
                workload.ref.namespace,
                pod.name,
                uuid=f"GPU-{pod.name}-{index}",
                peak=rules.threshold * draw(SHARE),
                coverage=1.0 if draw(st.booleans()) else rules.min_coverage,
                last_sample=NOW - rules.stale_after * draw(SHARE),
                last_busy=None if draw(st.booleans()) else NOW - rules.window - draw(EXTRA_MINUTES),
            )
    return Case(
        workload, found.build(window=rules.window, threshold=rules.threshold), policy, Pauses()
    )


Change = Callable[[Case, int], Case]  # the int picks which pod or GPU, modulo their number


def with_series(case: Case, pick: int, **changes: Any) -> Case:
    key, index = _series_slot(case, pick)
    series = list(case.usage.gpus[key])
    series[index] = replace(series[index], **changes)
    return _with_pod_series(case, key, tuple(series))


def without_series(case: Case, pick: int) -> Case:
    key, index = _series_slot(case, pick)
    series = case.usage.gpus[key]
    return _with_pod_series(case, key, series[:index] + series[index + 1 :])


def _series_slot(case: Case, pick: int) -> tuple[tuple[str, str], int]:
    namespace = case.workload.ref.namespace
    keys = [(namespace, p.name) for p in case.workload.gpu_pods]
    slots = [(key, i) for key in keys for i in range(len(case.usage.gpus.get(key, ())))]
    return slots[pick % len(slots)]


def _with_pod_series(case: Case, key: tuple[str, str], series: tuple[GpuUsage, ...]) -> Case:
    return replace(case, usage=replace(case.usage, gpus={**case.usage.gpus, key: series}))


def with_pod(case: Case, pick: int, *, gpu_pods_only: bool = False, **changes: Any) -> Case:
    pods = list(case.workload.pods)
    candidates = [i for i, p in enumerate(pods) if p.gpus > 0 or not gpu_pods_only]
    index = candidates[pick % len(candidates)]
    pods[index] = replace(pods[index], **changes)
    return with_workload(case, pods=tuple(pods))


def with_workload(case: Case, **changes: Any) -> Case:
    return replace(case, workload=replace(case.workload, **changes))


def annotated(case: Case, key: str, value: str, *, on_owner: bool = False) -> Case:
    field = "owner_annotations" if on_owner else "annotations"
    return with_workload(case, **{field: {**getattr(case.workload, field), key: value}})


def one_gpu_reported_twice(case: Case, pick: int) -> Case:
    """A GPU pod asks for one more GPU, and its first GPU's series comes twice instead."""
    pods = case.workload.gpu_pods
    pod = pods[pick % len(pods)]
    key = (case.workload.ref.namespace, pod.name)
    series = case.usage.gpus[key]
    grown = with_pod(case, pick, gpu_pods_only=True, gpus=pod.gpus + 1)
    return _with_pod_series(grown, key, (*series, series[0]))


def rules_of(case: Case) -> UsageRules:
    return case.policy.default_rule.usage


DOUBTS: dict[str, Change] = {
    "a GPU has no peak": lambda c, i: with_series(c, i, peak=None),
    "a GPU's peak is NaN": lambda c, i: with_series(c, i, peak=math.nan),
    "a GPU's coverage is just too low": lambda c, i: with_series(
        c, i, coverage=rules_of(c).min_coverage - 0.001
    ),
    "a GPU's coverage is NaN": lambda c, i: with_series(c, i, coverage=math.nan),
    "a GPU is just stale": lambda c, i: with_series(
        c, i, last_sample_at=NOW - rules_of(c).stale_after - timedelta(seconds=1)
    ),
    "a GPU has no sample time": lambda c, i: with_series(c, i, last_sample_at=None),
    "a GPU has no series": without_series,
    "a pod reports one GPU twice for two": one_gpu_reported_twice,
    "the source failed": lambda c, _: replace(c, usage=replace(c.usage, failure="timeout")),
    "partial data about the namespace": lambda c, _: replace(
        c, usage=replace(c.usage, doubtful_namespaces=frozenset({c.workload.ref.namespace}))
    ),
    "partial data about every namespace": lambda c, _: replace(
        c, usage=replace(c.usage, doubtful_namespaces=frozenset({"*"}))
    ),
    "a pod is not running": lambda c, i: with_pod(c, i, phase="Pending"),
    "an admitted pod is missing": lambda c, _: with_workload(
        c, expected_pods=c.workload.expected_pods + 1
    ),
}

RECENTLY = NOW - timedelta(minutes=1)
SOON = NOW + timedelta(minutes=1)
WAITS: dict[str, tuple[Change, frozenset[State]]] = {
    "exempt": (lambda c, _: annotated(c, EXEMPT, "true"), frozenset({State.EXEMPT})),
    "owner exempt": (
        lambda c, _: annotated(c, EXEMPT, "true", on_owner=True),
        frozenset({State.EXEMPT}),
    ),
    "exempt a minute more": (
        lambda c, _: annotated(c, EXEMPT_UNTIL, rfc3339(SOON)),
        frozenset({State.EXEMPT}),
    ),
    "owner exempt a minute more": (
        lambda c, _: annotated(c, EXEMPT_UNTIL, rfc3339(SOON), on_owner=True),
        frozenset({State.EXEMPT}),
    ),
    # Without a grace period the window alone holds the workload back: idle, not yet due.
    "admitted a minute ago": (
        lambda c, _: with_workload(c, admitted_at=RECENTLY),
        frozenset({State.GRACE, State.IDLE}),
    ),
    "reactivated a minute ago": (
        lambda c, _: annotated(c, REACTIVATED_AT, rfc3339(RECENTLY)),
        frozenset({State.GRACE, State.IDLE}),
    ),
    "owner reactivated a minute ago": (
        lambda c, _: annotated(c, REACTIVATED_AT, rfc3339(RECENTLY), on_owner=True),
        frozenset({State.GRACE, State.IDLE}),
    ),
    "a GPU pod started inside the window": (
        lambda c, i: with_pod(
            c, i, gpu_pods_only=True, created_at=NOW - rules_of(c).window + timedelta(minutes=1)
        ),
        frozenset({State.IDLE}),
    ),
    # Its other GPUs, idle the whole window, make it idle-held: reported, never acted on.
    "a GPU is just busy now": (
        lambda c, i: with_series(c, i, peak=rules_of(c).threshold + 1e-6, last_busy_at=NOW),
        frozenset({State.BUSY, State.IDLE_HELD}),
    ),
    "a GPU was busy inside the window": (
        lambda c, i: with_series(
            c, i, peak=0.5, last_busy_at=NOW - rules_of(c).window + timedelta(minutes=1)
        ),
        frozenset({State.IDLE}),
    ),
    "everything paused": (
        lambda c, _: replace(c, pauses=Pauses(everything=True)),
        frozenset({State.PAUSED}),
    ),
    "its namespace paused": (
        lambda c, _: replace(c, pauses=Pauses(namespaces=frozenset({c.workload.ref.namespace}))),
        frozenset({State.PAUSED}),
    ),
    "inactive": (lambda c, _: with_workload(c, active=False), frozenset({State.DEACTIVATED})),
    "not admitted": (
        lambda c, _: with_workload(c, admitted=False, admitted_at=None),
        frozenset({State.PENDING}),
    ),
    "KEDA-managed": (
        lambda c, _: with_workload(c, keda_managed=True),
        frozenset({State.KEDA_MANAGED}),
    ),
    "owned by a RayJob": (
        lambda c, _: with_workload(c, owner=OwnerRef("ray.io/v1", "RayJob", "rc")),
        frozenset({State.KIND_NOT_ENABLED}),
    ),
    "without an owner": (lambda c, _: with_workload(c, owner=None), frozenset({State.PROTECTED})),
    "in an excluded namespace": (
        lambda c, _: replace(
            c, policy=replace(c.policy, exclude_namespaces=frozenset({c.workload.ref.namespace}))
        ),
        frozenset({State.PROTECTED}),
    ),
    "outside the included namespaces": (
        lambda c, _: replace(
            c, policy=replace(c.policy, include_namespaces=frozenset({"elsewhere"}))
        ),
        frozenset({State.PROTECTED}),
    ),
    "of a protected priority class": (
        lambda c, _: replace(
            with_workload(c, priority_class="prod"),
            policy=replace(c.policy, protected_priority_classes=frozenset({"prod"})),
        ),
        frozenset({State.PROTECTED}),
    ),
}
