"""The soak's fleet: 1,000 RayClusters with what their GPUs really do (the truth) and what
dcgm-exporter reports of it (the telemetry: the truth with gaps, NaN and zero bursts).

Kinds, drawn at random with a seed:
- busy: trains throughout (40-95 %); two in five report zeros for 3 minutes at once, as
  when dcgm-exporter restarts on many nodes (the mass-idle breaker's case);
- stops: trains, then its job ends at a random minute and the GPUs idle (0-3 %);
- idle: never used after admission (a notebook left open);
- bursty: short bursts every 20-45 minutes, idle between: never idle for a whole window;
- loading: trains, reloads weights at 2 % for 10-50 minutes (less than a window), trains on;
- late: arrives during the run and idles (grace period, then the window);
- undone: idles, and a GitOps tool sets it back to active after each deactivation;
- exempt, paused, protected: idle, but annotated, in a paused namespace, or of a
  protected priority class: never to be touched.

Telemetry faults never hide a change of activity: they fall where the truth is constant
for a window around them (a gap that swallowed a job's last busy minutes would make any
reader, a person included, see idleness the data does not contradict; see RELIABILITY.md).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from autoscaler.domain import annotations as keys
from autoscaler.domain.models import Pauses
from autoscaler.sim.kueue_model import KueueState, LocalQueue
from autoscaler.sim.pods import GPU, RayClusterSpec, WorkerGroup
from autoscaler.sim.profiles import Profile
from autoscaler.sim.quota import PODS, ClusterQueue

START = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
TEAMS = 20
PAUSED_NAMESPACE = "team-paused"
PROTECTED_CLASS = "prod-priority"
NEVER_TOUCH = frozenset({"exempt", "paused", "protected"})
KINDS: tuple[tuple[str, float], ...] = (
    ("busy", 0.30),
    ("stops", 0.25),
    ("idle", 0.05),
    ("bursty", 0.10),
    ("loading", 0.05),
    ("late", 0.05),
    ("undone", 0.05),
    ("exempt", 0.05),
    ("paused", 0.05),
    ("protected", 0.05),
)


@dataclass(frozen=True)
class Member:
    kind: str
    spec: RayClusterSpec
    arrives: float  # minute from START (negative: before the run)
    truth: Profile
    telemetry: Profile

    @property
    def key(self) -> tuple[str, str]:
        return (self.spec.namespace, self.spec.name)


@dataclass(frozen=True)
class Fleet:
    members: tuple[Member, ...]
    kueue: KueueState
    pauses: Pauses
    gpus: int

    def telemetry(self) -> dict[tuple[str, str], Profile]:
        return {m.key: m.telemetry for m in self.members}

    def by_key(self) -> Mapping[tuple[str, str], Member]:
        return {m.key: m for m in self.members}


def build_fleet(*, size: int, minutes: float, seed: int) -> Fleet:
    """`size` members for a run of `minutes`, the same for the same seed."""
    rng = random.Random(seed)
    names, weights = zip(*KINDS, strict=True)
    kinds = rng.choices(names, weights=weights, k=size)
    members = tuple(
        _member(kind, index, rng=rng, minutes=minutes) for index, kind in enumerate(kinds)
    )
    members = _zero_burst(members, rng=rng, minutes=minutes)
    gpus = sum(m.spec.gpus for m in members)
    return Fleet(members, _queues(gpus), Pauses(namespaces=frozenset({PAUSED_NAMESPACE})), gpus)


def _queues(gpus: int) -> KueueState:
    quota = {"cpu": 10_000_000, "memory": 2**50, PODS: 100_000, GPU: gpus}
    kueue = KueueState().with_cluster_queue(ClusterQueue.from_nominal("cq-soak", quota))
    kueue = kueue.with_priority_class(PROTECTED_CLASS, 1000)
    for namespace in [*(f"team-{t:02d}" for t in range(TEAMS)), PAUSED_NAMESPACE]:
        kueue = kueue.with_local_queue(LocalQueue(namespace, "user-queue", "cq-soak"))
    return kueue


def _member(kind: str, index: int, *, rng: random.Random, minutes: float) -> Member:
    namespace = PAUSED_NAMESPACE if kind == "paused" else f"team-{index % TEAMS:02d}"
    workers = (WorkerGroup("gpu-group", replicas=rng.randint(1, 2), gpus=rng.randint(1, 2)),)
    spec = RayClusterSpec(
        namespace,
        f"{kind}-{index:04d}",
        "user-queue",
        head_gpus=rng.choice((0, 1)),
        workers=workers,
        priority_class=PROTECTED_CLASS if kind == "protected" else None,
        annotations={keys.EXEMPT: "true"} if kind == "exempt" else {},
    )
    arrives = rng.uniform(0, minutes * 0.8) if kind == "late" else rng.uniform(-240, -90)
    truth = _truth(kind, rng=rng, arrives=arrives, minutes=minutes)
    return Member(kind, spec, arrives, truth, _telemetry(kind, truth, rng=rng))


def _truth(kind: str, *, rng: random.Random, arrives: float, minutes: float) -> Profile:
    busy = rng.uniform(40, 95)
    idle = rng.uniform(0, 3)
    if kind == "busy":
        return Profile.busy(busy)
    if kind == "stops":
        return Profile.busy(busy).idle_from(rng.uniform(-150, minutes - 20), idle)
    if kind == "bursty":
        return Profile.bursty(every=rng.uniform(20, 45), busy_for=rng.uniform(2, 5))
    if kind == "loading":
        begins = rng.uniform(-30, minutes - 10)
        return Profile.busy(busy).level(2.0, start=begins, end=begins + rng.uniform(10, 50))
    return Profile.idle(idle)  # idle, late, undone, exempt, paused, protected


def _telemetry(kind: str, truth: Profile, *, rng: random.Random) -> Profile:
    """The truth, with a gap or NaN minutes on a fifth of those whose truth never changes."""
    if kind not in ("busy", "idle", *NEVER_TOUCH) or rng.random() > 0.2:
        return truth
    start, length = rng.uniform(-60, 100), rng.uniform(2, 12)
    if rng.random() < 0.5:
        return truth.gap(start, start + length)
    return truth.nan(start, start + length)


def _zero_burst(
    members: tuple[Member, ...], *, rng: random.Random, minutes: float
) -> tuple[Member, ...]:
    """Two in five of the busy ones report zeros for 3 minutes at the same time."""
    at = rng.uniform(minutes * 0.3, minutes * 0.6)
    chosen = [m for m in members if m.kind == "busy" and rng.random() < 0.4]
    zeroed = {m.key: m.telemetry.level(0.0, start=at, end=at + 3) for m in chosen}
    return tuple(
        Member(m.kind, m.spec, m.arrives, m.truth, zeroed.get(m.key, m.telemetry)) for m in members
    )


def minute_of(moment: datetime) -> float:
    return (moment - START) / timedelta(minutes=1)
