"""What the guards observe: a candidate's newest samples, and the fleet's turnover."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from autoscaler.domain.fresh import LatestSample, LatestUsage, pods_of, still_idle
from autoscaler.domain.gpus import GpuKey
from autoscaler.domain.models import State, WorkloadInfo, WorkloadRef
from autoscaler.domain.turnover import judge, observable, turnover
from tests.support.domain_builders import (
    NOW,
    UsageBuilder,
    a_policy,
    a_workload,
    minutes_ago,
    usage,
)

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


def test_the_fresh_check_asks_for_each_gpu_pod_once() -> None:
    other = a_workload("team-b", "rc").gpu_pod("w-0").gpu_pod("w-1").build()
    assert pods_of([WORKLOAD, other, WORKLOAD]) == [
        ("team-a", "w-0"),
        ("team-b", "w-0"),
        ("team-b", "w-1"),
    ]


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
    judged = judge(fleet, now_usage, policy=a_policy(), now=NOW)
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
    judged = judge(fleet, doubtful, policy=a_policy(), now=NOW)
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
