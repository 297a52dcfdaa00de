"""One variant over one chunk of the replay: which steps to judge, and judging them.

A workload is judged at the steps where the policy could act on it (some sample in the window
and no slot above the threshold: idle, loading or unknown) and at those where it could be
idle-held (busy on some GPUs while another had samples and no slot above the threshold in its
window). Other steps are plainly busy and skipped without asking. Each judgement gets the
cycle's evidence at that time (`sightings.py`), so the classes are the live loop's.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Mapping
from typing import TYPE_CHECKING

from autoscaler.backtest.deactivation import Opened, closed, utc
from autoscaler.backtest.identity import WorkloadKey
from autoscaler.backtest.rulebook import EVERYONE, View
from autoscaler.backtest.timeline import (
    Chunk,
    WorkloadTrack,
    covered,
    minus,
    silence,
    union,
)
from autoscaler.backtest.usage import Judged, Reading, judge
from autoscaler.backtest.variant import ALWAYS
from autoscaler.domain.models import Action, Decision, FleetUsage, GpuUsage, Pauses, State
from autoscaler.domain.policy.decisions import apply_cap, decide

if TYPE_CHECKING:
    from autoscaler.backtest.replay import Replay, Run

_ACTS = (Action.DEACTIVATE, Action.WOULD_DEACTIVATE)
# Outcomes usage can never change here.
_ALWAYS = (State.PROTECTED, State.KIND_NOT_ENABLED, State.KEDA_MANAGED)


class Pass:
    """One variant over one chunk: schedule the candidate steps, decide them in time order."""

    def __init__(self, replay: Replay, run: Run, chunk: Chunk) -> None:
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
        present = covered(
            track.real(), carry=self._index(track.last_real()), span=span, steps=chunk.steps
        )
        busy = covered(
            track.loud(threshold),
            carry=self._index(track.last_loud(threshold)),
            span=span,
            steps=chunk.steps,
        )
        for begin, end in union(minus(present, busy), self._idle_held(track, view, busy)):
            first = self._aligned(max(begin, self._first))
            if first < end:
                heapq.heappush(self._queue, (first, track.key, end))

    def _idle_held(
        self, track: WorkloadTrack, view: View, busy: list[tuple[int, int]]
    ) -> list[tuple[int, int]]:
        """Steps where the workload is busy yet one of its GPUs had samples and no slot above
        the threshold in its window: it may be idle-held, so it is judged there too."""
        if len(track.gpus) < 2 or not busy:
            return []
        steps, span, threshold = self._chunk.steps, view.span, view.threshold
        idle: list[tuple[int, int]] = []
        for gpu in track.gpus:
            present = covered(gpu.real, carry=self._index(gpu.last_real), span=span, steps=steps)
            loud = covered(
                gpu.loud[threshold],
                carry=self._index(gpu.last_loud.get(threshold)),
                span=span,
                steps=steps,
            )
            idle = union(idle, minus(present, loud))
        return minus(busy, minus(busy, idle))

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
            self._run.states.add(key, decision)
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
        gpus = [u.key for _, found in judged.values() for pod in found.gpus.values() for u in pod]
        evidence = self._replay.evidence_at(now, gpus)  # the cycle's: one for every view
        usage = {
            view.rule: FleetUsage(
                view.window,
                view.threshold,
                evaluated_at=at,
                gpus=pods[view.rule],
                evidence=evidence,
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
            self._run.reactivated[track.key] = back

    def _close(self, key: WorkloadKey, *, until: int, back: bool) -> None:
        opened = self._run.off.pop(key)
        horizon = self._replay.settings.horizon
        self._run.done.append(closed(opened, key, until=until, horizon=horizon, back=back))

    def _blocked(self, key: WorkloadKey, now: int) -> bool:
        return key in self._run.off or now < self._run.reactivated.get(key, now)

    def _track(self, key: WorkloadKey) -> WorkloadTrack:
        return self._replay.workloads[key]

    def _index(self, at: int | None) -> int | None:
        return None if at is None else (at - self._chunk.start) // self._chunk.slot

    def _aligned(self, index: int) -> int:
        """The first decision step at or after `index` (decisions every `step` from start)."""
        offset = (index - self._first) % self._every
        return index if offset == 0 else index + self._every - offset
