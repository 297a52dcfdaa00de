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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from autoscaler.backtest.deactivation import Deactivation, Opened, closed, utc
from autoscaler.backtest.identity import Resolver, WorkloadKey
from autoscaler.backtest.queues import QueueHistory
from autoscaler.backtest.rulebook import EVERYONE, HistoryMatch, View, match_from_history, views_of
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
from autoscaler.domain.gpus import GpuKey
from autoscaler.domain.models import Action, Decision, FleetUsage, GpuUsage, Pauses, State
from autoscaler.domain.policy import Policy, apply_cap, decide

_ACTS = (Action.DEACTIVATE, Action.WOULD_DEACTIVATE)
_ALWAYS = (State.PROTECTED, State.KEDA_MANAGED)  # outcomes usage can never change here


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
    views: dict[str, View]  # by rule name, or one for EVERYONE
    off: dict[WorkloadKey, Opened] = field(default_factory=dict)
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
        queue_of: Mapping[str, str] | None = None,  # namespace -> ClusterQueue, for rules
    ) -> None:
        self.settings = settings
        self.queues = queues  # who waited, for when-contended variants
        self._resolver = resolver
        self._rules, self._queue_of = policy.rulebook, dict(queue_of or {})
        self.cap = policy.max_deactivations_per_cycle
        self._runs = [_Run(v, views_of(v, policy, slot=settings.slot)) for v in variants]
        views = [view for run in self._runs for view in run.views.values()]
        self._keep = max(v.span for v in views) + 1  # coverage reads window + 1 slots
        self._thresholds = tuple(sorted({v.threshold for v in views}))
        self.matches: dict[WorkloadKey, HistoryMatch] = {}  # each workload's rule
        self._models: dict[WorkloadKey, set[str]] = {}  # its GPUs' modelName
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
            for key, opened in sorted(run.off.items()):
                last = self.workloads[key].last_real() or opened.at
                until = min(max(last, opened.at), end)
                run.done.append(closed(opened, key, until=until, horizon=self.settings.horizon))
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
            models = self._models.setdefault(workload, set())
            models.update(m for m in [chunk.labels[key].get("modelName")] if m)
            self.matches[workload] = match_from_history(
                workload, models=models, rules=self._rules, queue_of=self._queue_of
            )


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
            view = self._view(track.key)
            if view is None or view.observe:
                continue  # rule unknown, or observed only: never a would-be deactivation
            self._came_back(track, view, after=-1)
            if track.key not in self._run.left_alone:
                self._schedule(track, view)
        while self._queue:
            index = self._queue[0][0]
            due = []
            while self._queue and self._queue[0][0] == index:
                _, key, end = heapq.heappop(self._queue)
                due.append((key, end))
            self._decide(index, due)

    def _view(self, key: WorkloadKey) -> View | None:
        """The view judging this workload: the variant's one, or its rule's (None: unknown)."""
        views = self._run.views
        if EVERYONE in views:
            return views[EVERYONE]
        match = self._replay.matches[key]
        return None if match.unknown is not None else views[match.rule.name]

    def _schedule(self, track: WorkloadTrack, view: View) -> None:
        chunk, threshold, span = self._chunk, view.threshold, view.span
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
        judged: dict[WorkloadKey, tuple[View, Judged]] = {}
        for key, _ in due:
            view = self._view(key)
            if view is None or self._blocked(key, now):
                continue
            reading = Reading(
                span=view.span,
                threshold=view.threshold,
                lookback=self._replay.settings.lookback,
                reactivated_at=self._run.reactivated.get(key),
            )
            found = judge(self._track(key), self._chunk, index, reading)
            if found is not None:
                judged[key] = (view, found)
        ends = dict(due)
        for key, decision in zip(judged, self._decisions(judged, now), strict=True):
            view = judged[key][0]
            if decision.action in _ACTS and self._contended(key, view, now):
                self._deactivate(key, view, now=now, gpus=decision.gpus, index=index)
            elif decision.state in _ALWAYS:
                self._run.left_alone.add(key)
            elif (following := index + self._every) < ends[key]:
                heapq.heappush(self._queue, (following, key, ends[key]))

    def _decisions(
        self, judged: Mapping[WorkloadKey, tuple[View, Judged]], now: int
    ) -> tuple[Decision, ...]:
        """Each workload decided under its view's rule, then the per-cycle cap over them all."""
        at = utc(now)
        pods: dict[str, dict[tuple[str, str], tuple[GpuUsage, ...]]] = {}
        for view, found in judged.values():
            pods.setdefault(view.rule, {}).update(found.gpus)
        usage = {
            view.rule: FleetUsage(
                view.window, view.threshold, evaluated_at=at, gpus=pods[view.rule]
            )
            for view, _ in judged.values()
        }
        decisions = [
            decide(found.info, usage[view.rule], policy=view.policy, pauses=Pauses(), now=at)
            for view, found in judged.values()
        ]
        return apply_cap(decisions, limit=self._replay.cap)

    def _contended(self, key: WorkloadKey, view: View, now: int) -> bool:
        """`always` acts whatever waits; `when-contended` only where someone waited in the
        workload's ClusterQueue or cohort at this step (else it is judged again next step)."""
        if view.reclaim == ALWAYS:
            return True
        queues = self._replay.queues
        return queues is not None and queues.contended(key.namespace, now)

    def _deactivate(self, key: WorkloadKey, view: View, *, now: int, gpus: int, index: int) -> None:
        self._run.off[key] = Opened(now, gpus, view.rule)
        self._came_back(self._track(key), view, after=index)

    def _came_back(self, track: WorkloadTrack, view: View, *, after: int) -> None:
        """Close a would-be deactivation at the workload's first busy slot after `after`, or
        where its series stop for a whole window (deleted: a later one of the same name is
        another RayCluster, not a user coming back)."""
        if track.key not in self._run.off:
            return
        loud = track.loud(view.threshold)
        first = bisect_right(loud, after)
        busy = loud[first] if first < len(loud) else None
        gone = silence(
            track.real(),
            carry=self._index(track.last_real()),
            after=after,
            span=view.span,
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
        opened = self._run.off.pop(key)
        horizon = self._replay.settings.horizon
        self._run.done.append(closed(opened, key, until=until, horizon=horizon, back=back))

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
