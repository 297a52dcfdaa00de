"""The policy engine replayed over history, one chunk at a time, for several variants at once.

At each decision step the real `decide_fleet` judges every workload that could be acted on:
those with a sample in the window and no slot above the threshold in it. Any other step
cannot lead to an action (the engine acts only on a known peak at or below the threshold),
so it is skipped without asking; this is what makes a week of a thousand GPUs fast. A
workload the policy protects whatever its usage (namespace, owner kind) is asked once.

A would-be deactivation holds its GPUs' hours until the workload's GPUs are busy again (the
user would have come back and reactivated it: a regret when within the horizon, and a fresh
grace period after), or until its series end, or until the end of the range.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from autoscaler.backtest.identity import Resolver, WorkloadKey
from autoscaler.backtest.queues import QueueHistory
from autoscaler.backtest.timeline import (
    Chunk,
    GpuTrack,
    WorkloadTrack,
    covered,
    minus,
    silence,
)
from autoscaler.backtest.usage import Judged, Reading, judge
from autoscaler.backtest.variant import ALWAYS, Variant
from autoscaler.domain.models import Action, FleetUsage, GpuKey, Pauses, State
from autoscaler.domain.policy import Policy, decide_fleet

_ACTS = (Action.DEACTIVATE, Action.WOULD_DEACTIVATE)
_ALWAYS = (State.PROTECTED, State.KEDA_MANAGED)  # outcomes usage can never change here


@dataclass(frozen=True)
class Deactivation:
    workload: WorkloadKey
    gpus: int
    at: datetime
    until: datetime
    came_back: bool  # its GPUs were busy again before the range ended
    regret: bool  # ... within the regret horizon

    @property
    def gpu_hours(self) -> float:
        return self.gpus * (self.until - self.at).total_seconds() / 3600


@dataclass(frozen=True)
class Settings:
    """What the replay needs besides the policy."""

    start: datetime  # first decision
    end: datetime
    slot: int  # seconds
    step: int  # seconds between decisions, a multiple of the slot
    horizon: timedelta  # activity back within this is a regret
    lookback: int  # seconds back to look for the last busy slot (policy.idleSinceLookback)


@dataclass
class _Run:
    variant: Variant
    policy: Policy
    span: int  # the window in slots
    off: dict[WorkloadKey, tuple[int, int]] = field(default_factory=dict)  # (at, GPUs)
    blocked_until: dict[WorkloadKey, int] = field(default_factory=dict)
    reactivated: dict[WorkloadKey, int] = field(default_factory=dict)
    left_alone: set[WorkloadKey] = field(default_factory=set)
    done: list[Deactivation] = field(default_factory=list)


class Replay:
    def __init__(
        self,
        *,
        policy: Policy,
        variants: Sequence[Variant],
        settings: Settings,
        resolver: Resolver,
        queues: QueueHistory | None = None,
    ) -> None:
        self.settings = settings
        self.queues = queues  # who waited, for when-contended variants
        self._resolver = resolver
        slot = settings.slot
        self._runs = [
            _Run(v, _with(policy, v), int(v.window.total_seconds()) // slot) for v in variants
        ]
        self._keep = max(r.span for r in self._runs) + 1  # coverage reads window + 1 slots
        self._thresholds = tuple(sorted({v.threshold for v in variants}))
        self._gpus: dict[GpuKey, GpuTrack] = {}
        self.workloads: dict[WorkloadKey, WorkloadTrack] = {}
        self.skipped: set[tuple[str, str]] = set()  # GPU pods that are not Ray pods

    @property
    def gpu_count(self) -> int:
        return len({(g.key.uuid, g.key.mig_instance) for g in self._gpus.values()})

    @property
    def workload_count(self) -> int:
        return len(self.workloads)

    def feed(self, chunk: Chunk) -> None:
        self._register(chunk)
        for gpu in self._gpus.values():
            gpu.load(chunk)
        for workload in self.workloads.values():
            workload.load(self._thresholds)
            for gpu in workload.gpus:
                if gpu.first_seen is not None:
                    first = workload.pods.get(gpu.key.pod, gpu.first_seen)
                    workload.pods[gpu.key.pod] = min(first, gpu.first_seen)
        for run in self._runs:
            _Pass(self, run, chunk).run()
        for gpu in self._gpus.values():
            gpu.finish(chunk, keep=self._keep)

    def results(self) -> list[tuple[Variant, list[Deactivation]]]:
        """Each variant's would-be deactivations, open ones closed at their series' end."""
        end = int(self.settings.end.timestamp())
        found = []
        for run in self._runs:
            for key, (at, gpus) in sorted(run.off.items()):
                last = self.workloads[key].last_real() or at
                until = min(max(last, at), end)
                run.done.append(_record(self.settings, key, gpus=gpus, at=at, until=until))
            run.off.clear()
            found.append((run.variant, sorted(run.done, key=lambda d: (d.at, d.workload))))
        return found

    def _register(self, chunk: Chunk) -> None:
        new = [key for key in chunk.values if key not in self._gpus]
        for key in new:
            self._resolver.learn(key.namespace, key.pod)
        for key in new:
            workload = self._resolver.resolve(key.namespace, key.pod, dict(chunk.labels[key]))
            if workload is None:
                self.skipped.add((key.namespace, key.pod))
                continue
            track = GpuTrack(key, workload, self._thresholds)
            self._gpus[key] = track
            self.workloads.setdefault(workload, WorkloadTrack(workload)).gpus.append(track)


class _Pass:
    """One variant over one chunk: schedule the candidate steps, decide them in time order."""

    def __init__(self, replay: Replay, run: _Run, chunk: Chunk) -> None:
        self._replay, self._run, self._chunk = replay, run, chunk
        settings = replay.settings
        self._every = settings.step // settings.slot
        self._first = max(0, -(-(int(settings.start.timestamp()) - chunk.start) // settings.slot))
        self._queue: list[tuple[int, WorkloadKey, int]] = []  # (index, workload, interval end)

    def run(self) -> None:
        for track in self._replay.workloads.values():
            self._came_back(track, after=-1)
            if track.key not in self._run.left_alone:
                self._schedule(track)
        while self._queue:
            index = self._queue[0][0]
            due = []
            while self._queue and self._queue[0][0] == index:
                _, key, end = heapq.heappop(self._queue)
                due.append((key, end))
            self._decide(index, due)

    def _schedule(self, track: WorkloadTrack) -> None:
        chunk, threshold, span = self._chunk, self._run.variant.threshold, self._run.span
        present = covered(track.real(), carry=self._index(track.last_real()), span=span,
                          steps=chunk.steps)  # fmt: skip
        busy = covered(track.loud(threshold), carry=self._index(track.last_loud(threshold)),
                       span=span, steps=chunk.steps)  # fmt: skip
        for begin, end in minus(present, busy):
            first = self._aligned(max(begin, self._first))
            if first < end:
                heapq.heappush(self._queue, (first, track.key, end))

    def _decide(self, index: int, due: list[tuple[WorkloadKey, int]]) -> None:
        now = self._chunk.time(index)
        judged: dict[WorkloadKey, Judged] = {}
        for key, _ in due:
            if self._blocked(key, now):
                continue
            reading = Reading(
                span=self._run.span,
                threshold=self._run.variant.threshold,
                lookback=self._replay.settings.lookback,
                reactivated_at=self._run.reactivated.get(key),
            )
            found = judge(self._track(key), self._chunk, index, reading)
            if found is not None:
                judged[key] = found
        usage = FleetUsage(
            self._run.variant.window,
            self._run.variant.threshold,
            evaluated_at=_utc(now),
            gpus={pod: gpus for j in judged.values() for pod, gpus in j.gpus.items()},
        )
        infos = [j.info for j in judged.values()]
        decisions = decide_fleet(
            infos, usage, policy=self._run.policy, pauses=Pauses(), now=_utc(now)
        )
        ends = dict(due)
        for key, decision in zip(judged, decisions, strict=True):
            if decision.action in _ACTS and self._contended(key, now):
                self._deactivate(key, now=now, gpus=decision.gpus, index=index)
            elif decision.state in _ALWAYS:
                self._run.left_alone.add(key)
            elif (following := index + self._every) < ends[key]:
                heapq.heappush(self._queue, (following, key, ends[key]))

    def _contended(self, key: WorkloadKey, now: int) -> bool:
        """`always` acts whatever waits; `when-contended` only where someone waited in the
        workload's ClusterQueue or cohort at this step (else it is judged again next step)."""
        if self._run.variant.reclaim == ALWAYS:
            return True
        queues = self._replay.queues
        return queues is not None and queues.contended(key.namespace, now)

    def _deactivate(self, key: WorkloadKey, *, now: int, gpus: int, index: int) -> None:
        self._run.off[key] = (now, gpus)
        self._came_back(self._track(key), after=index)

    def _came_back(self, track: WorkloadTrack, *, after: int) -> None:
        """Close a would-be deactivation at the workload's first busy slot after `after`, or
        where its series stop for a whole window (deleted: a later one of the same name is
        another RayCluster, not a user coming back)."""
        if track.key not in self._run.off:
            return
        loud = track.loud(self._run.variant.threshold)
        first = bisect_right(loud, after)
        busy = loud[first] if first < len(loud) else None
        gone = silence(
            track.real(),
            carry=self._index(track.last_real()),
            after=after,
            span=self._run.span,
            steps=self._chunk.steps,
        )
        if gone is not None and (busy is None or gone < busy):
            self._close(track.key, until=self._chunk.time(gone), back=False)
        elif busy is not None:
            back = self._chunk.time(busy)
            self._close(track.key, until=back, back=True)
            self._run.blocked_until[track.key] = back
            self._run.reactivated[track.key] = back

    def _close(self, key: WorkloadKey, *, until: int, back: bool) -> None:
        at, gpus = self._run.off.pop(key)
        until = max(until, at)
        self._run.done.append(
            _record(self._replay.settings, key, gpus=gpus, at=at, until=until, back=back)
        )

    def _blocked(self, key: WorkloadKey, now: int) -> bool:
        return key in self._run.off or now < self._run.blocked_until.get(key, now)

    def _track(self, key: WorkloadKey) -> WorkloadTrack:
        return self._replay.workloads[key]

    def _index(self, at: int | None) -> int | None:
        return None if at is None else (at - self._chunk.start) // self._chunk.slot

    def _aligned(self, index: int) -> int:
        """The first decision step at or after `index` (decisions every `step` from start)."""
        offset = (index - self._first) % self._every
        return index if offset == 0 else index + self._every - offset


def _record(
    settings: Settings, key: WorkloadKey, *, gpus: int, at: int, until: int, back: bool = False
) -> Deactivation:
    regret = back and until - at <= settings.horizon.total_seconds()
    return Deactivation(key, gpus, _utc(at), _utc(until), back, regret)


def _with(policy: Policy, variant: Variant) -> Policy:
    rules = replace(policy.rules, window=variant.window, threshold=variant.threshold)
    return replace(policy, rules=rules)


def _utc(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)
