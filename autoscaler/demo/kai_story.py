"""The `kai` story (ISSUE 17): a team under KAI Scheduler beside a team under Kueue, on one
fleet, with the KAI actuator enabled (`actuators.kai.enabled`).

team-a's trainer runs under Kueue (a Workload, 4 GPUs) and trains all along. team-c's two
notebooks carry KAI's queue label `kai.scheduler/queue: team-c` and no Workload admits them:
each is a row of its own. kai-notebook (2 GPUs) goes idle at minute 10; it is warned 15
minutes before its idle window completes (the product's `warnBefore`) and suspended when it
does (`spec.suspend: true`, what it was recorded for reactivate). kai-shared-notebook shares
a GPU through KAI's `gpu-fraction` annotation: reported `unsupported`, never stopped.
"""

from __future__ import annotations

from datetime import UTC, datetime

from autoscaler.demo.scenario import ROOMY, Arrival, Scenario
from autoscaler.domain.policy.management import Manager
from autoscaler.sim.kueue_model import KueueState, LocalQueue
from autoscaler.sim.pods import GPU, RayClusterSpec, WorkerGroup
from autoscaler.sim.profiles import Profile
from autoscaler.sim.quota import ClusterQueue

KAI_QUEUE = "team-c"


def kai() -> Scenario:
    kueue = (
        KueueState()
        .with_cluster_queue(ClusterQueue.from_nominal("cq-team-a", {**ROOMY, GPU: 4}))
        .with_local_queue(LocalQueue("team-a", "lq-team-a", "cq-team-a"))
    )
    trainer = RayClusterSpec(
        "team-a", "trainer", "lq-team-a", workers=(WorkerGroup("gpu-group", replicas=2, gpus=2),)
    )
    notebook = _kai_cluster("kai-notebook", gpus=2)
    shared = _kai_cluster("kai-shared-notebook", gpus=0, gpu_fraction="0.5")
    return Scenario(
        name="kai",
        title="A KAI Scheduler team beside a Kueue team",
        start=datetime(2026, 3, 2, 14, 0, tzinfo=UTC),
        kueue=kueue,
        arrivals=(
            Arrival(0, trainer, Profile.busy(85)),
            Arrival(0, notebook, Profile.busy(70).idle_from(10)),
            Arrival(0, shared, Profile.idle().described("shares one GPU at half")),
        ),
        notes=(
            (0, "team-a's trainer runs under Kueue (a Workload admits it, 4 GPUs)"),
            (0, "team-c's notebooks run under KAI Scheduler (queue team-c): no Workload"),
            (0, "kai-shared-notebook holds half a GPU (gpu-fraction 0.5): never stopped"),
            (10, "kai-notebook's user leaves; it keeps its 2 GPUs"),
        ),
        end_minute=80,
        actuators={"kai": {"enabled": True}},
    )


def _kai_cluster(name: str, *, gpus: int, gpu_fraction: str | None = None) -> RayClusterSpec:
    return RayClusterSpec(
        "team-c",
        name,
        KAI_QUEUE,
        workers=(WorkerGroup("gpu-group", replicas=1, gpus=gpus),),
        manager=Manager.KAI,
        gpu_fraction=gpu_fraction,
    )
