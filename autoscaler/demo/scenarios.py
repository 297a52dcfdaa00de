"""The demo's stories, with the names of the blog posts they come from.

- `two-clusters` (seed 001): one 2-GPU ClusterQueue, two RayClusters of 2 GPUs; the first
  trains and its job is stopped. 15 minutes before its idle window completes it is warned
  (issue 15: the product's `warnBefore`); its user snoozes it for 30 minutes from the CLI; it
  is warned again 15 minutes before the snooze runs out, deactivated when it does, and the
  second is admitted.
- `rd-and-production` (seed 000): cq-production (12 GPUs, prod-priority 1000) and
  cq-development (8 GPUs, dev-priority 100) in the all-gpus cohort; three R&D workspaces of
  4 GPUs run since the afternoon (8 own + 4 borrowed); two go idle and are deactivated, so the
  12-GPU production job of 8 PM is admitted at once, without preempting anyone.
- `noisy`: bursty, slow-loading and telemetry-starved clusters that must not be stopped, next
  to one truly idle notebook that must (holding its memory flat: no evidence). Issue 16 adds
  a cluster that loads 60 GiB of weights at 0-2 % compute after 45 idle minutes (its
  framebuffer and PCIe show loading: never stopped, though compute alone would stop it at
  minute 60) and a 4-GPU cluster training on 2 GPUs (idle-held: reported, never stopped).
  Issue 31 adds the vision team's cq-vision (4 GPUs, its own namespace): vit-trainer's
  image was never pushed, so its pods stay in ImagePullBackOff; past the 30-minute
  `notRunningAfter` (warned 15 minutes ahead, as idle work is) it is deactivated and
  vit-eval, waiting behind it, is admitted. vit-notebook runs on a node dcgm-exporter
  does not cover: running but not monitored, reported, never stopped.
- `when-contended` (issue 14): cq-notebooks and cq-training (8 GPUs each) share the lab-gpus
  cohort under a `reclaim: when-contended` rule. Three 4-GPU notebooks (one borrowing 4 of
  cq-training's GPUs) and a 4-GPU eval server; three go idle and are left running while
  nobody waits. A 4-GPU fine-tuning job then waits for cq-training: the borrowing notebook
  idle the longest is picked for it, and only that one: warned when picked (the product's
  15-minute `warnBefore`), deactivated 15 minutes later, and the job is admitted then.
- `kai` (issue 17, in `demo.kai_story`): a Kueue team's trainer beside two RayClusters KAI
  Scheduler queues; the idle KAI notebook is warned, then suspended (`spec.suspend`), and the
  one sharing a GPU by fraction is reported unsupported, never stopped.
- `many-kinds` (issue 30, in `demo.kinds_story`): a Notebook, a PyTorchJob hung at 0 %, an
  idle LeaderWorkerSet and a busy RayCluster under one 10-GPU quota, and a PyTorchJob waiting
  for 8: the three idle ones are warned, then deactivated; the notebook's stop is a requeue
  (its pod comes back queued behind the waiter); the waiter is admitted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime

from autoscaler.demo.kai_story import kai
from autoscaler.demo.kinds_story import many_kinds
from autoscaler.demo.people import SnoozeAtWarning
from autoscaler.demo.scenario import ROOMY, Arrival, Scenario
from autoscaler.sim.kueue_model import KueueState, LocalQueue
from autoscaler.sim.pods import GPU, RayClusterSpec, WorkerGroup
from autoscaler.sim.profiles import Profile
from autoscaler.sim.quota import PODS, ClusterQueue

__all__ = ["DEFAULT_SCENARIO", "SCENARIOS", "Arrival", "Scenario"]

MISSING_IMAGE = "ghcr.io/vision-lab/vit-trainer:v2"  # the noisy story's image nobody pushed


def two_clusters() -> Scenario:
    quota = {"cpu": 9000, "memory": 36 * 2**30, PODS: 5, GPU: 2}
    kueue = (
        KueueState()
        .with_cluster_queue(ClusterQueue.from_nominal("cluster-queue", quota))
        .with_local_queue(LocalQueue("demo", "user-queue", "cluster-queue"))
    )

    def raycluster(name: str) -> RayClusterSpec:
        worker = WorkerGroup("small-group", replicas=1, gpus=1)
        return RayClusterSpec("demo", name, "user-queue", head_gpus=1, workers=(worker,))

    return Scenario(
        name="two-clusters",
        title="Two RayClusters, one 2-GPU quota",
        start=datetime(2026, 3, 2, 10, 0, tzinfo=UTC),
        kueue=kueue,
        arrivals=(
            Arrival(0, raycluster("first-raycluster"), Profile.busy(85).idle_from(20)),
            Arrival(1, raycluster("second-raycluster"), Profile.busy(80)),
        ),
        notes=(
            (0, "first-raycluster runs the mnist training job (2 GPUs)"),
            (1, "second-raycluster is applied: the quota is full, it waits"),
            (20, "the training job is stopped (client.stop_job); first-raycluster keeps 2 GPUs"),
        ),
        end_minute=110,
        people=(
            SnoozeAtWarning(
                "first-raycluster", duration="30m", reason="checking the results after lunch"
            ),
        ),
    )


def rd_and_production() -> Scenario:
    kueue = KueueState()
    for cq, gpus, namespace, lq in (
        ("cq-production", 12, "prod", "lq-prod-batch"),
        ("cq-development", 8, "rd", "lq-rd-workspace"),
    ):
        queue = ClusterQueue.from_nominal(cq, {**ROOMY, GPU: gpus}, cohort="all-gpus")
        kueue = kueue.with_cluster_queue(queue).with_local_queue(LocalQueue(namespace, lq, cq))
    kueue = kueue.with_priority_class("prod-priority", 1000).with_priority_class(
        "dev-priority", 100
    )

    def workspace(name: str) -> RayClusterSpec:
        workers = (WorkerGroup("small-group", replicas=2, gpus=2),)
        return RayClusterSpec(
            "rd", name, "lq-rd-workspace", workers=workers, priority_class="dev-priority"
        )

    production = RayClusterSpec(
        "prod",
        "final-training-run",
        "lq-prod-batch",
        workers=(WorkerGroup("gpu-group", replicas=6, gpus=2),),
        priority_class="prod-priority",
        kind="RayJob",
    )
    return Scenario(
        name="rd-and-production",
        title="R&D workspaces and the nightly production job",
        start=datetime(2026, 3, 2, 18, 0, tzinfo=UTC),
        kueue=kueue,
        arrivals=(
            Arrival(-300, workspace("alice-workspace"), Profile.busy(80)),
            Arrival(-299, workspace("bob-workspace"), Profile.busy(75).idle_from(10)),
            Arrival(-298, workspace("carol-workspace"), Profile.busy(85).idle_from(20)),
            Arrival(120, production, Profile.busy(95)),
        ),
        notes=(
            (0, "since 13:00 three R&D workspaces hold 12 GPUs: 8 of cq-development, 4 borrowed"),
            (10, "bob goes home; bob-workspace keeps its 4 GPUs"),
            (20, "carol closes her notebook; carol-workspace keeps its 4 GPUs"),
            (120, "CI submits final-training-run: 12 GPUs, prod-priority (1000)"),
        ),
        end_minute=135,
    )


def noisy() -> Scenario:
    kueue = KueueState()
    for team, gpus in (("research", 14), ("vision", 4)):
        quota = ClusterQueue.from_nominal(f"cq-{team}", {**ROOMY, GPU: gpus})
        kueue = kueue.with_cluster_queue(quota)
        kueue = kueue.with_local_queue(LocalQueue(team, f"lq-{team}", quota.name))

    def raycluster(name: str, gpus: int = 2, *, team: str = "research") -> RayClusterSpec:
        worker = WorkerGroup("gpu-group", replicas=1, gpus=gpus)
        return RayClusterSpec(team, name, f"lq-{team}", workers=(worker,))

    trainer = raycluster("vit-trainer", team="vision")
    unpulled = replace(trainer, image=MISSING_IMAGE, image_published=False)

    gappy = Profile.busy(75).gap(10, 80).nan(95, 100).described("trains; telemetry drops out")
    notebook = Profile.busy(60).idle_from(5).holding(gib=24).described("idle from minute 5")
    loader = Profile.weight_loading(start=45, minutes=20, gib=60)
    return Scenario(
        name="noisy",
        title="Noisy GPUs that only look idle, and one that is",
        start=datetime(2026, 3, 2, 9, 0, tzinfo=UTC),
        kueue=kueue,
        arrivals=(
            Arrival(0, raycluster("bursty-eval"), Profile.bursty(every=25, busy_for=3)),
            Arrival(0, raycluster("slow-loader"), Profile.loading(until=50).busy_from(50, 90)),
            Arrival(0, raycluster("gappy-trainer"), gappy),
            Arrival(0, raycluster("idle-notebook"), notebook),
            Arrival(0, raycluster("weight-loader"), loader),
            Arrival(0, raycluster("half-used", gpus=4), Profile.half_used(gpus=4, busy=2)),
            # A minute later, so the research clusters' pods keep their nodes and GPUs.
            Arrival(1, unpulled, Profile.busy(90)),
            Arrival(1, raycluster("vit-notebook", team="vision"), Profile.unexported()),
            Arrival(3, raycluster("vit-eval", team="vision"), Profile.busy(80)),
        ),
        notes=(
            (0, "five 2-GPU RayClusters and a 4-GPU one start in namespace research"),
            (0, "half-used trains on 2 of its 4 GPUs; the other 2 sit at 0 %: idle-held"),
            (1, f"vit-trainer is applied with {MISSING_IMAGE}, which was never pushed"),
            (1, "vit-notebook runs on a node dcgm-exporter does not cover: no GPU series"),
            (3, "vit-eval is applied: cq-vision is full, it waits"),
            (5, "idle-notebook's user leaves for the day"),
            (10, "gappy-trainer's node exporter stops answering for 70 min; the job trains on"),
            (45, "weight-loader starts loading 60 GiB of weights: 3 GiB/min at 0-2 % compute"),
            (50, "slow-loader has loaded its weights and starts training"),
            (60, "weight-loader's compute has been idle an hour: its framebuffer still climbs"),
            (65, "weight-loader's weights are in: it starts fine-tuning"),
            (80, "gappy-trainer's exporter is back: no data never meant idle"),
            (95, "dcgm-exporter reports NaN for gappy-trainer's GPUs for 5 minutes"),
        ),
        end_minute=120,
    )


def when_contended() -> Scenario:
    kueue = KueueState().with_priority_class("dev-priority", 100)
    for name in ("notebooks", "training"):
        queue = ClusterQueue.from_nominal(f"cq-{name}", {**ROOMY, GPU: 8}, cohort="lab-gpus")
        kueue = kueue.with_cluster_queue(queue)
        kueue = kueue.with_local_queue(LocalQueue(f"lab-{name}", f"lq-{name}", queue.name))

    workers = (WorkerGroup("gpu-group", replicas=2, gpus=2),)  # 4 GPUs each

    def notebook(name: str) -> RayClusterSpec:
        return RayClusterSpec(
            "lab-notebooks", name, "lq-notebooks", workers=workers, priority_class="dev-priority"
        )

    def training(name: str, *, kind: str = "RayCluster") -> RayClusterSpec:
        return RayClusterSpec("lab-training", name, "lq-training", workers=workers, kind=kind)

    return Scenario(
        name="when-contended",
        title="Reclaim when someone waits: a cohort's idle clusters and one job",
        start=datetime(2026, 3, 2, 12, 0, tzinfo=UTC),
        kueue=kueue,
        arrivals=(
            Arrival(-120, training("eval-server"), Profile.busy(70).idle_from(0)),
            Arrival(-119, notebook("alice-notebook"), Profile.busy(80)),
            Arrival(-118, notebook("bob-notebook"), Profile.busy(75).idle_from(5)),
            Arrival(-117, notebook("carol-notebook"), Profile.busy(85).idle_from(10)),
            Arrival(90, training("nightly-finetune", kind="RayJob"), Profile.busy(95)),
        ),
        notes=(
            (0, "cq-notebooks borrows 4 of cq-training's GPUs: its three notebooks hold 12"),
            (5, "bob leaves; bob-notebook keeps its 4 GPUs"),
            (10, "carol closes her laptop; carol-notebook keeps its 4 GPUs"),
            (90, "nightly-finetune (RayJob, 4 GPUs) is submitted to cq-training"),
        ),
        end_minute=110,
        rules=(
            {
                "name": "lab-when-contended",
                "match": {"cohorts": ["lab-gpus"]},
                "reclaim": "when-contended",
            },
        ),
    )


SCENARIOS: Mapping[str, Scenario] = {
    s.name: s
    for s in (
        two_clusters(),
        rd_and_production(),
        noisy(),
        when_contended(),
        kai(),
        many_kinds(),
    )
}
DEFAULT_SCENARIO = "two-clusters"
# The stories `backtest --demo` replays side by side as one recorded day, under one settings
# file. `many-kinds` enables its kinds in its own `cluster:` section, which such a replay does
# not carry (its PyTorchJob would be judged with the kind off), so it is left out and the
# recorded day's figures stay as documented.
RECORDED_DAY: Mapping[str, Scenario] = {
    name: scenario for name, scenario in SCENARIOS.items() if not scenario.cluster
}
