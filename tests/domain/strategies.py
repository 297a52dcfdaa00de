"""Hypothesis generators for the policy engine's inputs.

`cases()` draws one workload with its usage, policy and pauses: mostly trustworthy and
idle, now and then troubled by any kind of doubt (missing, duplicated, NaN, stale and thin
series, source failures, partial data, pods missing or not running), exemptions, grace,
other owners, namespaces and priority classes, and pauses. `fleets()` draws several
workloads sharing one usage and policy; `DECISIONS` draws decisions for the cap alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from hypothesis import strategies as st

from autoscaler.domain.annotations import EXEMPT, EXEMPT_UNTIL, REACTIVATED_AT
from autoscaler.domain.models import (
    Action,
    Decision,
    FleetUsage,
    Pauses,
    State,
    WorkloadInfo,
    WorkloadRef,
)
from autoscaler.domain.policy.decisions import Policy, decide
from tests.support.domain_builders import (
    A_DEFAULT_RULE,
    NOW,
    UsageBuilder,
    WorkloadBuilder,
    a_policy,
    a_workload,
    minutes_ago,
    rfc3339,
    usage,
)

NAMESPACES = ("team-a", "team-b", "team-c")
# Discrete values around the thresholds (5 % and 10 %), the coverage (80 %) and staleness
# (3 and 5 minutes): they find the boundaries faster than arbitrary floats.
IDLE_PEAKS = (0.0, 0.0, 0.01, 0.03, 0.05)
ANY_PEAKS = (*IDLE_PEAKS, 0.050001, 0.1, 0.100001, 0.5, 1.0)
COVERAGES = (1.0,) * 6 + (0.9, 0.8, 0.799)
SAMPLE_AGES = (0, 0, 0, 0, 1, 1, 2, 3, 4)  # minutes


@dataclass(frozen=True)
class Case:
    workload: WorkloadInfo
    usage: FleetUsage
    policy: Policy
    pauses: Pauses


# --- generators ------------------------------------------------------------------------------
# Strategies are built once: building (and validating) a fresh one for every draw would be
# most of the cost of generating a case.


def some_minutes_ago(low: int, high: int) -> st.SearchStrategy[datetime]:
    return st.integers(low, high).map(minutes_ago)


def minutes(*choices: int) -> st.SearchStrategy[timedelta]:
    return st.sampled_from(choices).map(lambda n: timedelta(minutes=n))


def rarely(*events: str, odds: int) -> st.SearchStrategy[str | None]:
    """None, or now and then one of `events`. None comes first: Hypothesis starts from, and
    shrinks towards, the first choice, so the simplest case is the untroubled one."""
    return st.sampled_from((None,) * odds + events)


NAMESPACE = st.sampled_from(NAMESPACES)
CREATED = some_minutes_ago(60, 2000)
ADMITTED = st.one_of(st.none(), some_minutes_ago(0, 1500))
POD_CREATED = some_minutes_ago(0, 1500)
POD_COUNT = st.integers(1, 3)
GPU_COUNT = st.sampled_from([1, 1, 1, 1, 1, 2, 2, 0])
PHASE = st.sampled_from(["Running"] * 25 + ["Pending"])
LIFECYCLE = rarely("not admitted", "inactive", "KEDA", "RayJob", "no owner", "pod gone", odds=30)
PRIORITY_CLASS = st.sampled_from([None, None, None, "prod", "batch"])
ANNOTATION = rarely("exempt", "exempt-until", "reactivated", odds=12)
EXEMPT_VALUE = st.sampled_from(["true", "True", "false", "yes"])
EXEMPT_UNTIL_TIME = some_minutes_ago(-120, 120)
UNTIL_SPELLING = st.sampled_from(["rfc3339", "word", "no timezone"])
REACTIVATED = some_minutes_ago(0, 300)
IDLE_PEAK, ANY_PEAK = st.sampled_from(IDLE_PEAKS), st.sampled_from(ANY_PEAKS)
MOOD = st.sampled_from([IDLE_PEAK, IDLE_PEAK, ANY_PEAK])  # the peaks of one workload's GPUs
COVERAGE = st.sampled_from(COVERAGES)
LAST_SAMPLE = st.sampled_from(SAMPLE_AGES).map(minutes_ago)
LAST_BUSY = st.one_of(st.none(), some_minutes_ago(0, 3000))
DEFECT = rarely("no peak", "NaN peak", "thin", "NaN coverage", "stale", "no sample", odds=60)
SERIES_TROUBLE = rarely("missing", "doubled", odds=40)
SOURCE_TROUBLE = rarely("failure", "partial data", odds=12)
DOUBTED = st.sampled_from([*NAMESPACES, "*"])
POLICIES = st.builds(
    a_policy,
    threshold=st.sampled_from([0.05, 0.1]),
    window=minutes(30, 60, 120),
    min_coverage=st.sampled_from([0.5, 0.8, 0.8]),
    stale_after=minutes(3, 5),
    grace=minutes(0, 15, 30),
    kinds=st.sampled_from([{"RayCluster"}] * 8 + [{"RayCluster", "RayJob"}, set()]),
    include=st.sampled_from([()] * 5 + [("team-a", "team-b")]),
    exclude=st.sampled_from([()] * 5 + [("team-b",)]),
    protected_classes=st.sampled_from([(), (), ("prod",)]),
    cap=st.integers(0, 4),
    dry_run=st.booleans(),
)
PAUSES = st.sampled_from(
    [Pauses()] * 8 + [Pauses(everything=True), Pauses(namespaces=frozenset({"team-a"}))]
)


def draw_annotation(draw: st.DrawFn) -> tuple[str, str] | None:
    match draw(ANNOTATION):
        case "exempt":
            return EXEMPT, draw(EXEMPT_VALUE)
        case "exempt-until":
            until = rfc3339(draw(EXEMPT_UNTIL_TIME))
            spelled = {"word": "soon", "no timezone": until.rstrip("Z")}
            return EXEMPT_UNTIL, spelled.get(draw(UNTIL_SPELLING), until)
        case "reactivated":
            return REACTIVATED_AT, rfc3339(draw(REACTIVATED))
    return None


@st.composite
def workloads(draw: st.DrawFn, name: str = "rc") -> WorkloadInfo:
    builder = a_workload(draw(NAMESPACE), name).created_at(draw(CREATED))
    builder.admitted(at=draw(ADMITTED))
    for index in range(draw(POD_COUNT)):
        builder.gpu_pod(
            f"{name}-{index}",
            gpus=draw(GPU_COUNT),
            created=draw(POD_CREATED),
            phase=draw(PHASE),
        )
    change_lifecycle(draw(LIFECYCLE), builder)
    if (priority_class := draw(PRIORITY_CLASS)) is not None:
        builder.priority(priority_class)
    for on_owner in (False, True):
        if (annotation := draw_annotation(draw)) is not None:
            builder.annotated(*annotation, on_owner=on_owner)
    return builder.build()


def change_lifecycle(event: str | None, builder: WorkloadBuilder) -> None:
    match event:
        case "not admitted":
            builder.not_admitted()
        case "inactive":
            builder.inactive()
        case "KEDA":
            builder.keda()
        case "RayJob":
            builder.owned_by("RayJob")
        case "no owner":
            builder.no_owner()
        case "pod gone":
            builder.expecting(len(builder.pods) + 1)


def add_gpu(
    draw: st.DrawFn,
    found: UsageBuilder,
    *,
    where: tuple[str, str],
    uuid: str,
    peaks: st.SearchStrategy[float],
) -> None:
    """One series: trustworthy numbers, now and then spoiled by one defect."""
    peak: float | None = draw(peaks)
    last_sample: datetime | None = draw(LAST_SAMPLE)
    coverage = draw(COVERAGE)
    defect = draw(DEFECT)
    peak = {"no peak": None, "NaN peak": math.nan}.get(defect or "", peak)
    coverage = {"thin": 0.3, "NaN coverage": math.nan}.get(defect or "", coverage)
    last_sample = {"stale": minutes_ago(30), "no sample": None}.get(defect or "", last_sample)
    namespace, pod = where
    found.gpu(
        namespace,
        pod,
        uuid=uuid,
        peak=peak,
        coverage=coverage,
        last_sample=last_sample,
        last_busy=draw(LAST_BUSY),
    )


@st.composite
def fleet_usage(draw: st.DrawFn, fleet: list[WorkloadInfo]) -> FleetUsage:
    found = usage()
    for workload in fleet:
        peaks = draw(MOOD)
        for pod in workload.gpu_pods:
            where = (workload.ref.namespace, pod.name)
            trouble = draw(SERIES_TROUBLE)
            for index in range(pod.gpus - (trouble == "missing")):
                add_gpu(draw, found, where=where, uuid=f"GPU-{pod.name}-{index}", peaks=peaks)
            if trouble == "doubled":  # the same GPU reported twice
                add_gpu(draw, found, where=where, uuid=f"GPU-{pod.name}-0", peaks=peaks)
    match draw(SOURCE_TROUBLE):
        case "failure":
            found.failing("connection refused")
        case "partial data":
            found.doubting(draw(DOUBTED))
    return found.build()


@st.composite
def cases(draw: st.DrawFn) -> Case:
    workload = draw(workloads())
    return Case(workload, draw(fleet_usage([workload])), draw(POLICIES), draw(PAUSES))


@st.composite
def fleets(draw: st.DrawFn) -> tuple[list[WorkloadInfo], FleetUsage, Policy]:
    size = draw(st.integers(0, 5))
    fleet = [draw(workloads(name=f"rc{index}")) for index in range(size)]
    policy = draw(POLICIES)
    found = replace(
        draw(fleet_usage(fleet)),
        window=policy.default_rule.usage.window,
        threshold=policy.default_rule.usage.threshold,
    )
    return fleet, found, policy


def run(case: Case, *, now: datetime = NOW) -> Decision:
    return decide(case.workload, case.usage, policy=case.policy, pauses=case.pauses, now=now)


DECISIONS = st.lists(
    st.builds(
        Decision,
        workload=st.builds(WorkloadRef, st.sampled_from(NAMESPACES), st.sampled_from("abcdefgh")),
        state=st.just(State.IDLE),
        action=st.sampled_from([Action.DEACTIVATE, Action.WOULD_DEACTIVATE, Action.NONE]),
        reason=st.just("idle"),
        idle_since=some_minutes_ago(60, 600),
        rule=st.just(A_DEFAULT_RULE),
    ),
    max_size=12,
)
