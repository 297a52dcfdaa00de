"""What a person watching the demo sees: per RayCluster its queue, GPUs, utilization and state,
and the decisions as they happen.

`autoscaler.demo.screen.LiveTable` redraws the table under a fixed header in a terminal,
fitted to its width;
`PlainLines` (`--non-interactive`, or when the output is not a terminal) prints one line per
happening, for CI logs.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol, TextIO

from autoscaler.demo.header import Header
from autoscaler.demo.layout import fit_table
from autoscaler.demo.story import Cycle, World
from autoscaler.demo.telling import (
    STOPPING,
    action_text,
    clock_times,
    held_why,
    managed_name,
    notice_text,
    requeue_text,
    stopped_word,
)
from autoscaler.domain.models import (
    Action,
    Decision,
    State,
    WorkloadRef,
    WorkloadStatus,
)
from autoscaler.domain.usage.words import class_text, evidence_text
from autoscaler.sim.admission import queue_usage
from autoscaler.sim.kueue_model import Event, EventKind
from autoscaler.sim.pods import GPU


@dataclass(frozen=True)
class Row:
    owner: str  # its name, with its manager when that is not Kueue
    namespace: str
    queue: str
    gpus: str  # held / requested
    utilization: str
    state: str
    kind: str = "RayCluster"


class View(Protocol):
    def start(self, header: Header) -> None:
        """Show the lines that stay: the story, the policy, what the service does."""
        ...

    def show(self, world: World, cycle: Cycle) -> None:
        """One cycle's table and happenings."""
        ...

    def conclude(self, summary: Sequence[str], *, then: Sequence[str] = ()) -> None:
        """The summary in full, then `then` (where the API listens, the commands to try it,
        whether the demo serves on), each line whole; left on screen while it serves on."""
        ...


@dataclass(frozen=True)
class Filling:
    """What tells "the window is still filling" apart from busy: the GPUs are quiet now, but
    too little of the window holds samples for the engine to count idle time yet."""

    threshold: float  # ratio: at or below it the GPUs are quiet
    min_coverage: float  # ratio of the window that must hold samples

    @classmethod
    def of(cls, world: World) -> Filling:
        policy = world.settings.policy
        return cls(threshold=policy.threshold_percent / 100, min_coverage=policy.min_coverage)

    def text(self, decision: Decision, utilization: float | None) -> str | None:
        coverage = decision.coverage
        quiet = utilization is not None and utilization <= self.threshold
        if decision.state is not State.BUSY or not quiet or coverage is None:
            return None
        if coverage >= self.min_coverage:
            return None
        return f"quiet, window filling ({coverage:.0%} of {self.min_coverage:.0%})"


# Classes that exist because of evidence or a split between GPUs: their cell says why.
_SAYS_WHY = (State.LOADING, State.IDLE_HELD)


def state_text(decision: Decision, *, now: datetime, stopped: str = "deactivated") -> str:
    """The API's words (busy, loading, idle-held, grace, pending, exempt, unknown, ...), with
    the idle time, the idle-held GPUs and the evidence of loading, the snooze and the planned
    stop; `stopped` (`telling.stopped_word`: "deactivated", "suspended") when it is stopped or
    this cycle stopped it."""
    if decision.action in STOPPING:
        return stopped if decision.action is Action.DEACTIVATE else "deleted"
    gone = decision.state in (State.DEACTIVATED, State.PENDING)  # a notice is for running ones
    notice = None if gone else notice_text(decision.notice)
    if decision.state is State.SNOOZED and notice:
        return notice  # "snoozed until 11:35 by demo-admin"
    word = stopped if decision.state is State.DEACTIVATED else class_word(decision)
    if decision.state is State.IDLE:
        since = decision.idle_since or now
        word = f"idle for {int((now - since) / timedelta(minutes=1))} min"
    elif decision.state in _SAYS_WHY and decision.evidence:
        word = f"{word}: {evidence_text(decision.evidence)}"
    return f"{word}, {notice}" if notice else word


def class_word(decision: Decision) -> str:
    """The class as the CLI and the log say it: "idle-held (2 of 4 GPUs idle)", "loading"."""
    return class_text(
        decision.state.value, idle_held_gpus=decision.idle_held_gpus, gpus=decision.gpus
    )


def rows(world: World, cycle: Cycle) -> list[Row]:
    return [_row(world, cycle, status) for status in cycle.snapshot.workloads]


def happenings(
    world: World,
    cycle: Cycle,
    previous: dict[WorkloadRef, State],
    held: set[WorkloadRef] | None = None,
) -> list[str]:
    """Narration, Kueue's events, the service's actions, what the story's people did and each
    change of state, once, in causal order: what Kueue admits after the pass follows the
    deactivation that freed it; a snooze follows the warning it answers.
    `held`: the workloads already told as idle past the window but left running."""
    lines = list(cycle.notes)
    lines += [_event_text(world, event) for event in cycle.before_pass]
    for record in cycle.snapshot.actions:
        lines.append(action_text(world, cycle, record))
        requeue = requeue_text(world, cycle, record)
        lines += [requeue] if requeue is not None else []
    lines += [_event_text(world, event) for event in cycle.after_pass]
    lines += cycle.told
    lines += _held_lines(world, cycle, set() if held is None else held)
    acted = {r.workload for r in cycle.snapshot.actions if r.action in STOPPING}
    for status in cycle.snapshot.workloads:
        state, was = status.decision.state, previous.get(status.ref)
        previous[status.ref] = State.DEACTIVATED if status.ref in acted else state
        if was is not None and was != state and status.ref not in acted:
            name = world.cluster.spec(status.ref).known_as
            lines.append(f"{name}: {change_text(was, status.decision)}")
    return lines


def change_text(was: State, decision: Decision) -> str:
    """The new class with why, and what the evidence signals saw when they saw anything:
    "busy -> loading (reason; evidence: framebuffer rose 18.0 GiB)"."""
    seen = f"; evidence: {evidence_text(decision.evidence)}" if decision.evidence else ""
    return f"{was.value} -> {class_word(decision)} ({clock_times(decision.reason)}{seen})"


class PlainLines:
    """One line per happening, stamped with the simulated time, and the table every
    `table_every` simulated minutes."""

    def __init__(self, out: TextIO, *, table_every: int = 10) -> None:
        self._out = out
        self._every = table_every
        self._states: dict[WorkloadRef, State] = {}
        self._held: set[WorkloadRef] = set()

    def start(self, header: Header) -> None:
        self._out.write("".join(line + "\n" for line in [*header.lines(), ""]))
        self._out.flush()

    def show(self, world: World, cycle: Cycle) -> None:
        stamp = stamp_of(cycle)
        lines = happenings(world, cycle, self._states, self._held)
        if cycle.minute % self._every == 0:
            lines += [quota_line(world), *table(rows(world, cycle))]
        for line in lines:
            self._out.write(f"{stamp} {line}\n")
        self._out.flush()

    def conclude(self, summary: Sequence[str], *, then: Sequence[str] = ()) -> None:
        self._out.write("".join(line + "\n" for line in ["", *concluding(summary, then=then)]))
        self._out.flush()


def concluding(summary: Sequence[str], *, then: Sequence[str]) -> list[str]:
    """What a view's `conclude` shows: the summary, then `then` after a blank line."""
    return [*summary, *(["", *then] if then else [])]


def quota_line(world: World) -> str:
    """Each ClusterQueue's GPUs in use against its nominal quota, borrowing shown."""
    kueue = world.cluster.kueue()
    parts = []
    for name in sorted(kueue.cluster_queues):
        usage = queue_usage(kueue, name)
        used, nominal = usage.used.get(GPU, 0), usage.nominal.get(GPU, 0)
        borrowed = usage.borrowed.get(GPU, 0)
        lent = f", {borrowed} borrowed" if borrowed else ""
        parts.append(f"{name} {used}/{nominal} GPUs{lent}")
    return "quota: " + "; ".join(parts)


def table(found: Sequence[Row], *, width: int | None = None) -> list[str]:
    """One line per row (`width` None, for logs), or fitted to `width` columns: the least
    needed columns dropped, long cells wrapped inside their column, no word cut."""
    heads, cells = table_cells(found)
    return fit_table(heads, cells, width=width or sys.maxsize)


def table_cells(found: Sequence[Row]) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The headings and cells. The first column is named for what it holds: RAYCLUSTER when
    every row is one, else OWNER beside a KIND column (a Notebook is not a RayCluster)."""
    kinds = {r.kind for r in found}
    if len(kinds) <= 1:
        first = (next(iter(kinds), "RayCluster")).upper()
        heads: tuple[str, ...] = (first, "NAMESPACE", "QUEUE", "GPUS", "UTIL", "STATE")
        return heads, [
            (r.owner, r.namespace, r.queue, r.gpus, r.utilization, r.state) for r in found
        ]
    heads = ("OWNER", "KIND", "NAMESPACE", "QUEUE", "GPUS", "UTIL", "STATE")
    return heads, [
        (r.owner, r.kind, r.namespace, r.queue, r.gpus, r.utilization, r.state) for r in found
    ]


def _row(world: World, cycle: Cycle, status: WorkloadStatus) -> Row:
    spec = world.cluster.spec(status.ref)
    held = sum(len(pod.gpus) for pod in world.cluster.pods(status.ref))
    util = world.exporter.utilization(spec.namespace, spec.name, cycle.now) if held else None
    name = managed_name(spec.name, status.info.manager)
    admitted_since_the_pass = status.decision.state is State.PENDING and any(
        e.kind is EventKind.ADMITTED and e.workload == status.ref for e in cycle.events
    )
    queue = status.info.queue + (
        f" -> {status.info.cluster_queue}" if status.info.cluster_queue else ""
    )
    state = Filling.of(world).text(status.decision, util)
    stopped = stopped_word(status.info.manager)
    if admitted_since_the_pass:
        state = "admitted"
    return Row(
        owner=name,
        namespace=spec.namespace,
        queue=queue,
        gpus=f"{held}/{spec.gpus}",
        utilization="-" if util is None else f"{util:.0%}",
        state=state or state_text(status.decision, now=cycle.now, stopped=stopped),
        kind=spec.kind,
    )


def _held_lines(world: World, cycle: Cycle, held: set[WorkloadRef]) -> list[str]:
    """Once per idle episode: a workload idle for its whole window that the service left
    running (nobody waits that it would let in, or a guard held it), with the reason."""
    lines = []
    for status in cycle.snapshot.workloads:
        decision = status.decision
        past_window = decision.state is State.IDLE and decision.time_left == timedelta(0)
        warned = decision.notice.stop_at is not None  # its warning said what comes
        if not past_window or decision.action is not Action.NONE or warned:
            held.discard(status.ref)
        elif status.ref not in held:
            held.add(status.ref)
            why = held_why(decision)
            lines.append(f"{world.cluster.spec(status.ref).known_as}: idle past the window, {why}")
    return lines


def _event_text(world: World, event: Event) -> str:
    name = world.cluster.spec(event.workload).known_as
    if event.kind is EventKind.ADMITTED:
        return f"Kueue admitted {name} ({event.message})"
    if event.kind is EventKind.EVICTED:
        return f"Kueue evicted {name} and freed its quota in {event.cluster_queue}"
    return f"Kueue: {name} {event.kind.value.lower()} ({event.message})"


def stamp_of(cycle: Cycle) -> str:
    return f"[{cycle.now:%H:%M} +{cycle.minute}m]"
