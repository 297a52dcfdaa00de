"""What a demo story is: its Kueue set-up, the RayClusters that arrive and their GPUs' story,
the narration, and the settings it runs with (`demo.scenarios` tells the stories)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from autoscaler.demo.people import SnoozeAtWarning
from autoscaler.domain.policy.management import SUSPENDED_BY_US
from autoscaler.settings.tree import LoopSettings, PolicySettings, Settings
from autoscaler.sim.kueue_model import KueueState
from autoscaler.sim.pods import GPU, RayClusterSpec
from autoscaler.sim.profiles import Profile

CYCLE = timedelta(minutes=1)
ROOMY = {"cpu": 96_000, "memory": 768 * 2**30}  # CPU and memory never hold anyone back here


@dataclass(frozen=True)
class Arrival:
    """A RayCluster applied at `minute` (negative: before the demo starts) and its GPUs' story."""

    minute: float
    spec: RayClusterSpec
    profile: Profile


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    start: datetime  # the simulated time of minute 0
    kueue: KueueState
    arrivals: tuple[Arrival, ...]
    notes: tuple[tuple[float, str], ...]  # what happens at a minute, told in the live view
    end_minute: float
    rules: tuple[Mapping[str, Any], ...] = ()  # `rules:` entries, as a settings file has them
    people: tuple[SnoozeAtWarning, ...] = ()  # what people do when the service tells them
    actuators: Mapping[str, Any] = field(default_factory=dict)  # `actuators:`, as in a file
    cluster: Mapping[str, Any] = field(default_factory=dict)  # `cluster:`, as in a file

    @property
    def gpus(self) -> int:
        """GPUs on the nodes: the ClusterQueues' GPU quota, and the GPUs of the RayClusters
        no Kueue Workload admits (KAI Scheduler's, plain KubeRay's: no quota counts them)."""
        quota = sum(q.quotas[GPU].nominal for q in self.kueue.cluster_queues.values())
        own = sum(a.spec.gpus for a in self.arrivals if a.spec.manager in SUSPENDED_BY_US)
        return quota + own

    @property
    def end(self) -> datetime:
        return self.start + timedelta(minutes=self.end_minute)

    def profiles(self) -> dict[tuple[str, str], Profile]:
        return {(a.spec.namespace, a.spec.name): a.profile for a in self.arrivals}

    def settings(self, *, dry_run: bool) -> Settings:
        """The product's defaults (60-minute window, 5%, 15-minute grace), acting or not,
        with the scenario's rules, actuators and owner kinds."""
        return scenario_settings(
            dry_run=dry_run, rules=self.rules, actuators=self.actuators, cluster=self.cluster
        )


def scenario_settings(
    *,
    dry_run: bool,
    rules: Sequence[Mapping[str, Any]],
    actuators: Mapping[str, Any] | None = None,
    cluster: Mapping[str, Any] | None = None,
) -> Settings:
    """Every scenario's settings are built here, and only here: the product's defaults, one
    cycle a minute, and the scenario's `rules:`, `actuators:` and `cluster:` validated as a
    settings file's are."""
    base = Settings(policy=PolicySettings(dry_run=dry_run), loop=LoopSettings(interval=CYCLE))
    if not rules and not actuators and not cluster:
        return base
    tree: dict[str, Any] = {"policy": base.policy, "loop": base.loop, "rules": rules}
    sections = {"actuators": actuators, "cluster": cluster}
    return Settings.model_validate(tree | {key: found for key, found in sections.items() if found})
