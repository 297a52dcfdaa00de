"""The classifier as decision tables (ISSUE 16): busy, loading, idle-held, idle or unknown,
from compute and the evidence signals, each row a dcgm-exporter or Ray series shape.

Unless a row says otherwise: a RayCluster in `team-a`, admitted a day ago, judged at `NOW`
(12:00) by the shipped defaults (5 %, a 60-minute window, 1-minute slots, 15 minutes of
grace, `maxLoading` 60 minutes), dry-run off. The evidence is what the readers hand the
domain: a framebuffer sighting is a slot where DCGM_FI_DEV_FB_USED (MiB) grew, power one
where DCGM_FI_DEV_POWER_USAGE (W) stood over the model's idle baseline (both in
dcgm-exporter's default counters); a Ray sighting is `ray_tasks{State="RUNNING"}` or rising
finished-task counts, and notes are `ray_actors{State="ALIVE"}` and attached drivers (Ray's
system metrics: https://docs.ray.io/en/latest/ray-observability/reference/system-metrics.html).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from autoscaler.domain.models import Action, Decision, FleetUsage, Pauses, State, WorkloadInfo
from autoscaler.domain.policy.decisions import Policy, decide
from autoscaler.domain.usage.evidence import Signal
from tests.support.domain_builders import (
    UsageBuilder,
    WorkloadBuilder,
    a_policy,
    a_workload,
    minutes_ago,
    usage,
    with_default,
)
from tests.support.evidence_builders import EvidenceBuilder, evidence

NS = "team-a"
FRESH = minutes_ago(0.5)


def cluster(name: str = "rc", *, pod: str = "w-0", gpus: int = 1) -> WorkloadBuilder:
    return a_workload(NS, name).gpu_pod(pod, gpus=gpus)


def notebook() -> WorkloadBuilder:
    """A RayCluster whose head (no GPU) holds the notebook's driver, and one GPU worker."""
    return a_workload(NS, "nb").cpu_pod("head").gpu_pod("w-0")


def young(builder: WorkloadBuilder, *, minutes: float) -> WorkloadBuilder:
    """Admitted, with its pods created, `minutes` before NOW."""
    at = minutes_ago(minutes)
    builder.admitted(at=at).created_at(at)
    builder.pods = [replace(pod, created_at=at) for pod in builder.pods]
    return builder


def gpu(
    fleet: UsageBuilder,
    pod: str,
    uuid: str,
    *,
    peak: float = 0.01,
    last_busy: float | None = None,
    mig: str | None = None,
) -> UsageBuilder:
    busy = minutes_ago(last_busy) if last_busy is not None else None
    return fleet.gpu(NS, pod, uuid=uuid, mig=mig, peak=peak, last_sample=FRESH, last_busy=busy)


def one_gpu(
    seen: EvidenceBuilder, *, peak: float = 0.01, last_busy: float | None = None
) -> UsageBuilder:
    return gpu(usage(), "w-0", "GPU-a", peak=peak, last_busy=last_busy).seeing(seen.build())


def judge(workload: WorkloadInfo, fleet: FleetUsage, *, policy: Policy | None = None) -> Decision:
    policy = policy or a_policy(kinds=("RayCluster", "RayJob", "Job"))
    fleet = replace(
        fleet,
        window=policy.default_rule.usage.window,
        threshold=policy.default_rule.usage.threshold,
    )
    return decide(workload, fleet, policy=policy, pauses=Pauses(), now=fleet.evaluated_at)


# MIG: dcgm-exporter labels each MIG instance's series with the parent GPU's UUID and its own
# GPU_I_ID / GPU_I_PROFILE (NVIDIA/dcgm-exporter#544, #272); the board's power is one value.
def mig_board(seen: EvidenceBuilder) -> UsageBuilder:
    fleet = gpu(usage(), "a-0", "GPU-m", peak=0.0, mig="1")
    return gpu(fleet, "b-0", "GPU-m", peak=0.0, mig="2").seeing(seen.build())


# Time-slicing: several pods get the same GPU UUID; dcgm-exporter reports the device's values
# (all pods show identical power: NVIDIA/dcgm-exporter#582) and, without virtual-GPU mapping,
# often under one pod only (#307, #151); with it, one copy per shared replica (PR #432).
def shared_device(*, a_peak: float, b_peak: float, seen: EvidenceBuilder) -> UsageBuilder:
    a_busy = 0.5 if a_peak > 0.05 else None
    b_busy = 0.5 if b_peak > 0.05 else None
    fleet = gpu(usage(), "a-0", "GPU-s", peak=a_peak, last_busy=a_busy)
    return gpu(fleet, "b-0", "GPU-s", peak=b_peak, last_busy=b_busy).seeing(seen.build())


def gpus_of_w0(*, busy: int, idle: int) -> UsageBuilder:
    fleet = usage()
    for index in range(busy):
        gpu(fleet, "w-0", f"GPU-{index}", peak=0.9, last_busy=0.5)
    for index in range(busy, busy + idle):
        gpu(fleet, "w-0", f"GPU-{index}", peak=0.0)
    return fleet


def board_power(*pods: str, uuid: str, mig: dict[str, str] | None = None) -> EvidenceBuilder:
    seen = evidence()
    for pod in pods:
        seen.power(NS, pod, uuid=uuid, since=minutes_ago(20), mig=(mig or {}).get(pod))
    return seen


ROWS = [
    # Weights or a dataset landing on the GPU before the first step: framebuffer climbing at
    # 0-2 % compute for 20 minutes (SkyPilot #715: setup counted as idle gets stopped).
    pytest.param(
        young(cluster(), minutes=25).build(),
        one_gpu(
            evidence().framebuffer(NS, "w-0", uuid="GPU-a", since=minutes_ago(20)), peak=0.02
        ).build(),
        State.LOADING,
        Action.NONE,
        "loading since 11:40: framebuffer rose 18.0 GiB",
        id="fb-climbing-at-0-to-2-percent-compute-for-20-minutes-is-loading",
    ),
    pytest.param(
        cluster().build(),
        one_gpu(
            evidence().framebuffer(NS, "w-0", uuid="GPU-a", since=minutes_ago(20)),
            peak=0.9,
            last_busy=30,
        ).build(),
        State.LOADING,
        Action.NONE,
        "loading since 11:40",
        id="loading-the-next-shard-after-a-training-phase-is-loading",
    ),
    pytest.param(
        cluster().build(),
        one_gpu(
            evidence().framebuffer(
                NS, "w-0", uuid="GPU-a", since=minutes_ago(35), until=minutes_ago(25)
            ),
            peak=0.9,
            last_busy=40,
        ).build(),
        State.IDLE,
        Action.NONE,
        "idle for 25m so far",
        id="loading-that-ended-25-minutes-ago-counts-like-activity",
    ),
    pytest.param(
        young(cluster(), minutes=90).build(),
        one_gpu(evidence().framebuffer(NS, "w-0", uuid="GPU-a", since=minutes_ago(80))).build(),
        State.IDLE,
        Action.DEACTIVATE,
        "loading for over 60m without compute (framebuffer rose 18.0 GiB); judged on compute: "
        "idle for the whole window",
        id="loading-beyond-max-loading-is-judged-on-compute",
    ),
    # An idle notebook keeps its driver attached (ray.init() in Jupyter starts a job that
    # lives until ray.shutdown(): ray-project/ray#34431) and its actors alive: shown only.
    pytest.param(
        notebook().build(),
        one_gpu(
            evidence().note(NS, "head", "driver attached").note(NS, "head", "2 actors alive")
        ).build(),
        State.IDLE,
        Action.DEACTIVATE,
        "idle for the whole window",
        id="idle-notebook-with-ray-driver-attached-and-actors-alive-but-no-tasks-is-idle",
    ),
    # Tasks executing (ray_tasks RUNNING) on the head's CPUs while the GPU sits at 0 %.
    pytest.param(
        notebook().build(),
        one_gpu(evidence().ray_tasks(NS, "head", since=minutes_ago(10)), peak=0.0).build(),
        State.BUSY,
        Action.NONE,
        "Ray tasks executing: 3 Ray tasks running",
        id="ray-tasks-running-at-0-percent-gpu-is-busy",
    ),
    pytest.param(
        notebook().build(),
        one_gpu(
            evidence().ray_tasks(NS, "head", since=minutes_ago(50), until=minutes_ago(30))
        ).build(),
        State.IDLE,
        Action.NONE,
        "idle for 30m so far",
        id="ray-tasks-that-ended-30-minutes-ago-count-like-a-busy-sample",
    ),
    # A model held in memory and never run: FB_USED flat at 60 GiB, 0 % compute (the VRAM a
    # loaded server keeps: ggml-org/llama.cpp#4598). Flat is no rise, so no sighting at all.
    pytest.param(
        cluster().build(),
        one_gpu(evidence(), peak=0.0).build(),
        State.IDLE,
        Action.DEACTIVATE,
        "idle for the whole window",
        id="a-gpu-holding-60-gib-flat-at-0-percent-is-idle",
    ),
    # Each GPU is its own UUID series; a job using 2 of its 4 (jobstats #28, dstack's
    # any-GPU rule) is reported, never stopped.
    pytest.param(
        cluster(gpus=4).build(),
        gpus_of_w0(busy=2, idle=2).build(),
        State.IDLE_HELD,
        Action.NONE,
        "2 of 4 GPUs idle for the whole 60m while 2 are busy",
        id="idle-held-2-of-4-gpus-at-0-percent",
    ),
    pytest.param(
        a_workload(NS, "a").gpu_pod("a-0").build(),
        mig_board(
            board_power("a-0", "b-0", uuid="GPU-m", mig={"a-0": "1", "b-0": "2"}).framebuffer(
                NS, "b-0", uuid="GPU-m", mig="2", since=minutes_ago(20)
            )
        ).build(),
        State.IDLE,
        Action.DEACTIVATE,
        "idle for the whole window",
        id="mig-instance-whose-neighbour-loads-is-judged-on-its-own-instance",
    ),
    pytest.param(
        young(a_workload(NS, "b").gpu_pod("b-0"), minutes=25).build(),
        mig_board(
            evidence().framebuffer(NS, "b-0", uuid="GPU-m", mig="2", since=minutes_ago(20))
        ).build(),
        State.LOADING,
        Action.NONE,
        "loading since 11:40",
        id="the-mig-neighbour-loading-its-own-instance-is-loading",
    ),
    pytest.param(
        a_workload(NS, "a").gpu_pod("a-0").build(),
        mig_board(board_power("a-0", uuid="GPU-m", mig={"a-0": "1"})).build(),
        State.IDLE,
        Action.DEACTIVATE,
        "idle for the whole window",
        id="device-level-power-on-a-mig-board-is-ignored",
    ),
    # A whole GPU of its own: the board's power over the model's idle baseline is its own.
    pytest.param(
        young(cluster(), minutes=25).build(),
        one_gpu(board_power("w-0", uuid="GPU-a")).build(),
        State.LOADING,
        Action.NONE,
        "loading since 11:40: power 212 W > baseline 61 W",
        id="power-over-the-baseline-on-a-whole-gpu-of-its-own-is-loading",
    ),
    pytest.param(
        a_workload(NS, "a").gpu_pod("a-0").build(),
        shared_device(a_peak=0.0, b_peak=0.8, seen=evidence()).build(),
        State.BUSY,
        Action.NONE,
        "peak utilization 80% above threshold",
        id="shared-uuid-an-idle-looking-sharer-is-busy-when-the-device-is",
    ),
    pytest.param(
        a_workload(NS, "b").gpu_pod("b-0").build(),
        shared_device(a_peak=0.0, b_peak=0.8, seen=evidence()).build(),
        State.BUSY,
        Action.NONE,
        "peak utilization 80% above threshold",
        id="shared-uuid-the-busy-sharer-is-busy",
    ),
    pytest.param(
        a_workload(NS, "a").gpu_pod("a-0").build(),
        shared_device(a_peak=0.0, b_peak=0.0, seen=board_power("a-0", "b-0", uuid="GPU-s")).build(),
        State.IDLE,
        Action.DEACTIVATE,
        "idle for the whole window",
        id="shared-uuid-device-idle-both-idle-no-device-evidence-used",
    ),
    pytest.param(
        cluster().build(),
        one_gpu(evidence().failing(Signal.POWER, "query timed out")).build(),
        State.UNKNOWN,
        Action.NONE,
        "evidence signal power failed: query timed out",
        id="a-failed-device-signal-makes-a-gpu-workload-unknown",
    ),
    pytest.param(
        cluster().build(),
        one_gpu(evidence().failing(Signal.RAY, "HTTP 503")).build(),
        State.UNKNOWN,
        Action.NONE,
        "evidence signal ray failed: HTTP 503",
        id="a-failed-ray-signal-makes-a-ray-workload-unknown",
    ),
    pytest.param(
        cluster().owned_by("RayJob").build(),
        one_gpu(evidence().failing(Signal.RAY, "HTTP 503")).build(),
        State.UNKNOWN,
        Action.NONE,
        "evidence signal ray failed",
        id="a-failed-ray-signal-makes-a-rayjob-unknown",
    ),
    # Evidence can only add activity: its failure cannot hide compute that is busy now.
    pytest.param(
        cluster().build(),
        one_gpu(evidence().failing(Signal.POWER, "timeout"), peak=0.7, last_busy=0.5).build(),
        State.BUSY,
        Action.NONE,
        "above threshold",
        id="a-failed-signal-leaves-busy-compute-busy",
    ),
    # A signal configured but not exported (no series): no evidence either way.
    pytest.param(
        cluster().build(),
        one_gpu(evidence()).build(),
        State.IDLE,
        Action.DEACTIVATE,
        "idle for the whole window",
        id="missing-evidence-series-judged-on-compute-idle",
    ),
    pytest.param(
        cluster().build(),
        one_gpu(evidence(), peak=0.6, last_busy=0.5).build(),
        State.BUSY,
        Action.NONE,
        "above threshold",
        id="missing-evidence-series-judged-on-compute-busy",
    ),
]


@pytest.mark.parametrize(("workload", "fleet", "state", "action", "reason"), ROWS)
def test_the_class_follows_compute_and_the_evidence_signals(
    workload: WorkloadInfo, fleet: FleetUsage, state: State, action: Action, reason: str
) -> None:
    decision = judge(workload, fleet)

    assert (decision.state, decision.action) == (state, action), decision.reason
    assert reason in decision.reason


def test_a_failed_ray_signal_leaves_a_batch_job_judged_on_the_rest() -> None:
    job = cluster().owned_by("Job").build()
    fleet = one_gpu(evidence().failing(Signal.RAY, "HTTP 503")).build()

    decision = judge(job, fleet)

    assert (decision.state, decision.action) == (State.IDLE, Action.DEACTIVATE)


def test_the_evidence_lines_are_the_usable_sightings_and_the_notes_one_each() -> None:
    seen = (
        board_power("a-0", uuid="GPU-m", mig={"a-0": "1"})
        .framebuffer(NS, "a-0", uuid="GPU-m", mig="1", since=minutes_ago(90), until=minutes_ago(80))
        .note(NS, "a-0", "driver attached")
    )
    workload = a_workload(NS, "a").gpu_pod("a-0").build()

    decision = judge(workload, mig_board(seen).build())

    # The board's power is not this instance's: not shown as its evidence either. Loading
    # that ended earlier says when, so it never reads as going on now (NOW is 12:00).
    assert decision.evidence == ("framebuffer rose 18.0 GiB (until 10:40)", "driver attached")


def test_a_current_sighting_is_shown_without_a_time() -> None:
    seen = evidence().framebuffer(NS, "w-0", uuid="GPU-a", since=minutes_ago(5))

    decision = judge(cluster().build(), one_gpu(seen).build())

    assert decision.state is State.LOADING
    assert decision.evidence == ("framebuffer rose 18.0 GiB",)


def test_an_idle_held_decision_counts_its_idle_gpus() -> None:
    decision = judge(cluster(gpus=2).build(), gpus_of_w0(busy=1, idle=1).build())

    assert (decision.state, decision.idle_held_gpus) == (State.IDLE_HELD, 1)


def test_an_idle_decision_without_loading_lets_new_loading_count_from_now() -> None:
    fleet = one_gpu(evidence(), peak=0.9, last_busy=40).build()

    decision = judge(cluster().build(), fleet)

    # Loading first seen from here on would start its own episode, bounded from then.
    assert decision.state is State.IDLE
    assert (
        decision.loading_counts_until == minutes_ago(0) + a_policy().default_rule.usage.max_loading
    )


def test_a_gpu_loading_its_shard_beside_a_busy_one_is_not_idle_held() -> None:
    # maxLoading longer than the window, so the idle GPU's own loading still counts for it.
    policy = a_policy(kinds=("RayCluster",))
    policy = with_default(
        policy, usage=replace(policy.default_rule.usage, max_loading=timedelta(minutes=90))
    )
    workload = young(cluster(gpus=2), minutes=70).build()
    loading = evidence().framebuffer(
        NS, "w-0", uuid="GPU-1", since=minutes_ago(30), until=minutes_ago(20)
    )

    with_loading = judge(
        workload, gpus_of_w0(busy=1, idle=1).seeing(loading.build()).build(), policy=policy
    )
    without = judge(workload, gpus_of_w0(busy=1, idle=1).build(), policy=policy)

    assert (with_loading.state, with_loading.idle_held_gpus) == (State.BUSY, 0)
    assert (without.state, without.idle_held_gpus) == (State.IDLE_HELD, 1)
