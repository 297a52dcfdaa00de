"""What the guards observe: a candidate's newest samples, and the fleet's turnover."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import pytest

from autoscaler.domain.guards.turnover import Judged, judge, observable, turnover
from autoscaler.domain.models import FleetUsage, Pauses, State, WorkloadInfo, WorkloadRef
from autoscaler.domain.policy.decisions import decide
from autoscaler.domain.usage.evidence import Signal
from autoscaler.domain.usage.fresh import LatestSample, LatestUsage, pods_of, still_idle
from autoscaler.domain.usage.gpus import GpuKey
from tests.support.domain_builders import (
    NOW,
    UsageBuilder,
    a_policy,
    a_workload,
    minutes_ago,
    usage,
)
from tests.support.evidence_builders import EvidenceBuilder, evidence

STALE = timedelta(minutes=3)
WORKLOAD = a_workload("team-a", "rc").cpu_pod("head").gpu_pod("w-0", gpus=2).build()


def sample(uuid: str, value: float | None, *, minutes: float = 0.5) -> LatestSample:
    return LatestSample(GpuKey("team-a", "w-0", uuid), value, minutes_ago(minutes))


def latest(*samples: LatestSample) -> LatestUsage:
    return LatestUsage(NOW, samples={("team-a", "w-0"): samples})


@pytest.mark.parametrize(
    ("answer", "complaint"),
    [
        pytest.param(latest(sample("a", 0.01), sample("b", 0.0)), None, id="fresh-and-idle"),
        pytest.param(latest(sample("a", 0.01), sample("b", 0.4)), "busy again", id="one-busy"),
        pytest.param(latest(sample("a", 0.01)), "fewer GPU series", id="a-gpu-missing"),
        pytest.param(latest(), "fewer GPU series", id="no-series"),
        pytest.param(
            latest(sample("a", 0.01), sample("b", None)), "no usable", id="a-nan-newest-sample"
        ),
        pytest.param(latest(sample("a", math.nan), sample("b", 0.0)), "no usable", id="a-raw-nan"),
        pytest.param(
            latest(sample("a", 0.01), sample("b", 0.0, minutes=4)), "stale", id="a-stale-gpu"
        ),
        pytest.param(
            LatestUsage(NOW, failure="Prometheus down"), "check failed", id="the-read-failed"
        ),
    ],
)
def test_a_candidate_is_still_idle_only_when_every_gpus_newest_sample_is_fresh_and_idle(
    answer: LatestUsage, complaint: str | None
) -> None:
    found = still_idle(WORKLOAD, answer, threshold=0.05, stale_after=STALE, now=NOW)
    if complaint is None:
        assert found is None
    else:
        assert found is not None and complaint in found


def idle_now_seeing(seen: EvidenceBuilder) -> LatestUsage:
    samples = (sample("a", 0.01), sample("b", 0.0))
    return LatestUsage(NOW, samples={("team-a", "w-0"): samples}, evidence=seen.build())


LOADING_COUNTS = NOW + timedelta(minutes=10)
LOADING_PAST = NOW - timedelta(minutes=1)


@pytest.mark.parametrize(
    ("seen", "loading_until", "complaint"),
    [
        pytest.param(
            evidence().framebuffer("team-a", "w-0", uuid="a", since=minutes_ago(2)),
            LOADING_COUNTS,
            "fresh check: loading again (framebuffer rose 18.0 GiB)",
            id="loading-again-while-loading-counts-blocks-the-stop",
        ),
        pytest.param(
            evidence().framebuffer("team-a", "w-0", uuid="a", since=minutes_ago(2)),
            LOADING_PAST,
            None,
            id="loading-again-past-max-loading-does-not-block",
        ),
        pytest.param(
            evidence().framebuffer("team-a", "w-0", uuid="a", since=minutes_ago(2)),
            None,
            None,
            id="loading-again-when-the-decision-says-loading-no-longer-counts",
        ),
        pytest.param(
            evidence().framebuffer(
                "team-a", "w-0", uuid="a", since=minutes_ago(30), until=minutes_ago(20)
            ),
            LOADING_COUNTS,
            None,
            id="old-loading-is-not-new",
        ),
        pytest.param(
            evidence().power("team-a", "w-0", uuid="a", mig="1", since=minutes_ago(2)),
            LOADING_COUNTS,
            None,
            id="board-power-under-another-gpu-key-is-not-this-gpus",
        ),
        pytest.param(
            evidence().ray_tasks("team-a", "head", since=minutes_ago(2)),
            None,
            "fresh check: Ray tasks executing again (3 Ray tasks running)",
            id="ray-tasks-on-the-head-pod-block-the-stop-whatever-max-loading-says",
        ),
        pytest.param(
            evidence().note("team-a", "head", "driver attached"),
            LOADING_COUNTS,
            None,
            id="an-attached-driver-does-not-block",
        ),
        pytest.param(
            evidence().failing(Signal.FRAMEBUFFER, "timeout"),
            None,
            "fresh check: evidence signal framebuffer failed: timeout",
            id="a-failed-evidence-signal-blocks-the-stop",
        ),
    ],
)
def test_the_fresh_check_leaves_a_candidate_in_use_again_alone(
    seen: EvidenceBuilder, loading_until: datetime | None, complaint: str | None
) -> None:
    found = still_idle(
        WORKLOAD,
        idle_now_seeing(seen),
        threshold=0.05,
        stale_after=STALE,
        now=NOW,
        loading_counts_until=loading_until,
    )

    assert found == complaint


def test_the_fresh_check_ignores_board_wide_evidence_of_a_gpu_the_candidates_share() -> None:
    workload = a_workload("team-a", "rc").gpu_pod("w-0").gpu_pod("w-1").build()
    shared = {
        ("team-a", "w-0"): (LatestSample(GpuKey("team-a", "w-0", "s"), 0.0, NOW),),
        ("team-a", "w-1"): (LatestSample(GpuKey("team-a", "w-1", "s"), 0.0, NOW),),
    }
    seen = evidence().power("team-a", "w-0", uuid="s", since=minutes_ago(2)).build()
    answer = LatestUsage(NOW, samples=shared, evidence=seen)

    found = still_idle(
        workload, answer, threshold=0.05, stale_after=STALE, now=NOW, loading_counts_until=NOW
    )

    assert found is None


def test_the_fresh_check_asks_for_each_gpu_pod_once() -> None:
    other = a_workload("team-b", "rc").gpu_pod("w-0").gpu_pod("w-1").build()
    assert pods_of([WORKLOAD, other, WORKLOAD]) == [
        ("team-a", "w-0"),
        ("team-b", "w-0"),
        ("team-b", "w-1"),
    ]


def judged_from_decisions(fleet: list[WorkloadInfo], fleet_usage: FleetUsage) -> Judged:
    """The breaker's view of `fleet`: the usage verdicts the policy's decisions carry."""
    decided = [decide(w, fleet_usage, policy=a_policy(), pauses=Pauses(), now=NOW) for w in fleet]
    return judge(fleet, decided, fleet_usage, now=NOW)


def fleet_of(*names: str) -> list[WorkloadInfo]:
    return [a_workload("team-a", n).gpu_pod(f"{n}-w").build() for n in names]


def test_turnover_counts_last_cycles_busy_workloads_now_idle_or_unknown() -> None:
    fleet = fleet_of("busy", "idle", "gone-quiet", "no-data", "new")
    fleet.append(a_workload("team-a", "inactive").gpu_pod("inactive-w").inactive().build())
    now_usage = (
        usage()
        .gpu("team-a", "busy-w", peak=0.9, last_busy=NOW)
        .gpu("team-a", "idle-w", peak=0.01, last_busy=minutes_ago(120))
        .gpu("team-a", "gone-quiet-w", peak=0.9, last_busy=minutes_ago(5))
        .gpu("team-a", "new-w", peak=0.01)
        .build()
    )
    judged = judged_from_decisions(fleet, now_usage)
    assert judged.states[WorkloadRef("team-a", "gone-quiet")] is State.IDLE
    assert judged.states[WorkloadRef("team-a", "no-data")] is State.UNKNOWN
    before = frozenset(
        WorkloadRef("team-a", n) for n in ("busy", "gone-quiet", "no-data", "inactive")
    )
    seen = turnover(before, judged, observed=True)
    assert seen.turned == ("team-a/gone-quiet", "team-a/no-data")
    assert seen.busy_before == 3  # the inactive one is no longer judged
    assert judged.busy(before) == {WorkloadRef("team-a", "busy")}


def test_a_namespace_in_doubt_is_not_judged_and_keeps_its_busy_workloads() -> None:
    fleet = fleet_of("busy")
    doubtful = usage().gpu("team-a", "busy-w", peak=0.0).doubting("team-a").build()
    judged = judged_from_decisions(fleet, doubtful)
    before = frozenset({WorkloadRef("team-a", "busy")})
    assert turnover(before, judged, observed=observable(doubtful)).turned == ()
    assert judged.busy(before) == before


@pytest.mark.parametrize(
    ("builder", "expected"),
    [
        pytest.param(usage(), True, id="a-clean-read"),
        pytest.param(usage().doubting("team-a"), True, id="one-namespace-in-doubt"),
        pytest.param(usage().doubting("*"), False, id="every-namespace-in-doubt"),
        pytest.param(usage().failing("down"), False, id="the-read-failed"),
    ],
)
def test_a_cycle_is_observed_unless_the_whole_read_is_in_doubt(
    builder: UsageBuilder, expected: bool
) -> None:
    assert observable(builder.build()) is expected


def test_loading_and_idle_held_workloads_stay_in_the_breakers_baseline() -> None:
    fleet = [
        a_workload("team-a", "loading").gpu_pod("loading-w").build(),
        a_workload("team-a", "held").gpu_pod("held-w", gpus=2).build(),
    ]
    seen = evidence().framebuffer("team-a", "loading-w", uuid="GPU-l", since=minutes_ago(20))
    now_usage = (
        usage()
        .gpu("team-a", "loading-w", uuid="GPU-l", peak=0.9, last_busy=minutes_ago(30))
        .gpu("team-a", "held-w", peak=0.9, last_busy=NOW)
        .gpu("team-a", "held-w", peak=0.0)
        .seeing(seen.build())
        .build()
    )
    before = frozenset({WorkloadRef("team-a", "loading"), WorkloadRef("team-a", "held")})

    judged = judged_from_decisions(fleet, now_usage)

    assert judged.states == {
        WorkloadRef("team-a", "loading"): State.LOADING,
        WorkloadRef("team-a", "held"): State.IDLE_HELD,
    }
    assert judged.busy(before) == before
    assert turnover(before, judged, observed=True).turned == ()
