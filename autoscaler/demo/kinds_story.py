"""The `many-kinds` story (issue 30): a notebook, a training job hung at 0 %, an idle
inference server and a busy RayCluster under one ClusterQueue, and a training job waiting.

The ml team's cq-ml has 10 GPUs: Notebook ml/alice (2, one pod: OpenShift AI queues it
through Kueue's pod integration), PyTorchJob ml/train-7 (4: a master and three workers),
LeaderWorkerSet ml/llm-server (2: a leader and a worker) and RayCluster ml/ray-tune (2). The
admins enabled Notebook, PyTorchJob and LeaderWorkerSet in `cluster.ownerKinds` (only
RayCluster is on by default): a PyTorchJob's stop restarts its training, which is why the
kind is opt-in, and a hung one restarting is what they want. Each is judged on its own GPUs:
train-7 hangs at minute 0, llm-server's users leave at 5, alice at 10, ray-tune trains on.
PyTorchJob ml/train-8 (8 GPUs) waits from minute 20. Each idle one is warned 15 minutes
before its 60-minute window completes and deactivated when it does: train-7 at 60 and
llm-server at 65 stay stopped (their Workloads stay, inactive); alice's stop at 70 is a
requeue: her pod is deleted, the Notebook's StatefulSet makes it again, and its new Workload
queues behind train-8, which the 8 freed GPUs admit in that same minute.
"""

from __future__ import annotations

from datetime import UTC, datetime

from autoscaler.demo.scenario import ROOMY, Arrival, Scenario
from autoscaler.sim.kueue_model import KueueState, LocalQueue
from autoscaler.sim.pods import GPU, RayClusterSpec, WorkerGroup
from autoscaler.sim.profiles import Profile
from autoscaler.sim.quota import ClusterQueue

TEAM = "ml"
QUEUE = "lq-ml"
# Acted on in this story; the others keep their rows' defaults. RayCluster is listed because
# a written `cluster.ownerKinds` replaces the defaults.
ENABLED_KINDS = ("RayCluster", "Notebook", "PyTorchJob", "LeaderWorkerSet")


def many_kinds() -> Scenario:
    kueue = (
        KueueState()
        .with_cluster_queue(ClusterQueue.from_nominal("cq-ml", {**ROOMY, GPU: 10}))
        .with_local_queue(LocalQueue(TEAM, QUEUE, "cq-ml"))
    )
    notebook = RayClusterSpec(TEAM, "alice", QUEUE, head_gpus=2, kind="Notebook")
    hung = _pytorchjob("train-7", workers=3)
    server = RayClusterSpec(
        TEAM,
        "llm-server",
        QUEUE,
        head_gpus=1,
        workers=(WorkerGroup("worker", replicas=1, gpus=1),),
        kind="LeaderWorkerSet",
    )
    ray = RayClusterSpec(TEAM, "ray-tune", QUEUE, workers=(WorkerGroup("gpu-group", 1, 2),))
    return Scenario(
        name="many-kinds",
        title="A notebook, a hung training job and an idle server beside a RayCluster",
        start=datetime(2026, 3, 2, 9, 0, tzinfo=UTC),
        kueue=kueue,
        arrivals=(
            Arrival(-120, ray, Profile.busy(85)),
            Arrival(-119, notebook, Profile.busy(60).idle_from(10)),
            Arrival(-118, hung, Profile.busy(95).idle_from(0).described("hung at 0 % from 0")),
            Arrival(-117, server, Profile.busy(40).idle_from(5)),
            Arrival(20, _pytorchjob("train-8", workers=7), Profile.busy(95)),
        ),
        notes=(
            (
                0,
                "cq-ml's 10 GPUs: Notebook ml/alice 2, PyTorchJob ml/train-7 4, "
                "LeaderWorkerSet ml/llm-server 2, RayCluster ray-tune 2",
            ),
            (
                0,
                "cluster.ownerKinds enables Notebook, PyTorchJob and LeaderWorkerSet: a "
                "PyTorchJob's stop restarts its training, so the kind is opt-in",
            ),
            (0, "train-7's all-reduce hangs: its 4 GPUs sit at 0 %, the job never fails"),
            (5, "llm-server's users are gone: no requests, its 2 GPUs idle"),
            (10, "alice leaves her notebook open; it keeps its 2 GPUs"),
            (20, "PyTorchJob ml/train-8 (8 GPUs) is submitted: cq-ml is full, it waits"),
        ),
        end_minute=80,
        cluster={"ownerKinds": {kind: {"enabled": True} for kind in ENABLED_KINDS}},
    )


def _pytorchjob(name: str, *, workers: int) -> RayClusterSpec:
    """A master and `workers` workers of one GPU each."""
    group = WorkerGroup("worker", replicas=workers, gpus=1)
    return RayClusterSpec(TEAM, name, QUEUE, head_gpus=1, workers=(group,), kind="PyTorchJob")
