"""What a person watching the demo sees: per RayCluster its queue, GPUs, utilization and state,
and the decisions as they happen.

`LiveTable` redraws a table in a terminal each cycle; `PlainLines` (`--non-interactive`, or
when the output is not a terminal) prints one line per happening, for CI logs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol, TextIO

from autoscaler.demo.story import Cycle, World
from autoscaler.domain.models import (
    Action,
    ActionRecord,
    Decision,
    State,
    WorkloadRef,
    WorkloadStatus,
)
from autoscaler.domain.outcomes import OutcomeKind
from autoscaler.sim.admission import queue_usage
from autoscaler.sim.kueue_model import Event, EventKind
from autoscaler.sim.pods import GPU

_CLEAR = "\x1b[2J\x1b[H"
_RECENT = 10  # happenings kept under the table

_STATE_WORDS = {
    State.BUSY: "running",
    State.GRACE: "running (grace)",
    State.UNKNOWN: "unknown",
    State.PENDING: "pending",
    State.DEACTIVATED: "deactivated",
    State.EXEMPT: "exempt",
    State.PROTECTED: "protected",
    State.PAUSED: "paused",
    State.KEDA_MANAGED: "keda-managed",
}


@dataclass(frozen=True)
class Row:
    raycluster: str
    namespace: str
    queue: str
    gpus: str  # held / requested
    utilization: str
    state: str


class View(Protocol):
    def show(self, world: World, cycle: Cycle) -> None: ...


def state_text(decision: Decision, *, now: datetime) -> str:
    """running / pending / idle for N min / deactivated / exempt / unknown (and the rarer ones)."""
    if decision.action is Action.DEACTIVATE:
        return "deactivated"
    if decision.state is State.IDLE:
        since = decision.idle_since or now
        return f"idle for {int((now - since) / timedelta(minutes=1))} min"
    return _STATE_WORDS.get(decision.state, decision.state.value)


def rows(world: World, cycle: Cycle) -> list[Row]:
    return [_row(world, cycle, status) for status in cycle.snapshot.workloads]


def happenings(world: World, cycle: Cycle, previous: dict[WorkloadRef, State]) -> list[str]:
    """Narration, Kueue's events, the service's actions and each change of state, once."""
    lines = list(cycle.notes)
    lines += [_event_text(world, event) for event in cycle.events]
    lines += [_action_text(world, record) for record in cycle.snapshot.actions]
    acted = {record.workload for record in cycle.snapshot.actions}
    for status in cycle.snapshot.workloads:
        state, was = status.decision.state, previous.get(status.ref)
        previous[status.ref] = State.DEACTIVATED if status.ref in acted else state
        if was is not None and was != state and status.ref not in acted:
            name = world.cluster.spec(status.ref).name
            lines.append(f"{name}: {_word(was)} -> {_word(state)} ({status.decision.reason})")
    return lines


class PlainLines:
    """One line per happening, stamped with the simulated time, and the table every
    `table_every` simulated minutes."""

    def __init__(self, out: TextIO, *, table_every: int = 10) -> None:
        self._out = out
        self._every = table_every
        self._states: dict[WorkloadRef, State] = {}

    def show(self, world: World, cycle: Cycle) -> None:
        stamp = _stamp(cycle)
        lines = happenings(world, cycle, self._states)
        if cycle.minute % self._every == 0:
            lines += [quota_line(world), *table(rows(world, cycle))]
        for line in lines:
            self._out.write(f"{stamp} {line}\n")
        self._out.flush()


class LiveTable:
    """The table, redrawn in place every cycle, with the latest happenings under it."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._states: dict[WorkloadRef, State] = {}
        self._recent: list[str] = []

    def show(self, world: World, cycle: Cycle) -> None:
        stamp = _stamp(cycle)
        self._recent += [f"{stamp} {line}" for line in happenings(world, cycle, self._states)]
        self._recent = self._recent[-_RECENT:]
        speed = world.clock.speed
        pace = "max speed" if speed is None else f"{speed:g}x"
        header = f"{world.scenario.title}: {stamp} ({pace})"
        body = [quota_line(world), "", *table(rows(world, cycle))]
        text = "\n".join([header, "", *body, "", *self._recent])
        self._out.write(_CLEAR + text + "\n")
        self._out.flush()


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


def table(found: Sequence[Row]) -> list[str]:
    heads = ("RAYCLUSTER", "NAMESPACE", "QUEUE", "GPUS", "UTIL", "STATE")
    cells = [heads] + [
        (r.raycluster, r.namespace, r.queue, r.gpus, r.utilization, r.state) for r in found
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(heads))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    ]


def _row(world: World, cycle: Cycle, status: WorkloadStatus) -> Row:
    spec = world.cluster.spec(status.ref)
    held = sum(len(pod.gpus) for pod in world.cluster.pods(status.ref))
    util = world.exporter.utilization(spec.namespace, spec.name, cycle.now) if held else None
    name = spec.name if spec.kind == "RayCluster" else f"{spec.name} ({spec.kind})"
    admitted_since_the_pass = status.decision.state is State.PENDING and any(
        e.kind is EventKind.ADMITTED and e.workload == status.ref for e in cycle.events
    )
    queue = status.info.queue + (
        f" -> {status.info.cluster_queue}" if status.info.cluster_queue else ""
    )
    return Row(
        raycluster=name,
        namespace=spec.namespace,
        queue=queue,
        gpus=f"{held}/{spec.gpus}",
        utilization="-" if util is None else f"{util:.0%}",
        state="admitted" if admitted_since_the_pass else state_text(status.decision, now=cycle.now),
    )


def _action_text(world: World, record: ActionRecord) -> str:
    name = world.cluster.spec(record.workload).name
    if record.outcome.kind is OutcomeKind.DONE:
        return f"deactivated {name}: {record.reason}"
    return f"{record.action.value} {name}: {record.outcome} ({record.reason})"


def _word(state: State) -> str:
    return "idle" if state is State.IDLE else _STATE_WORDS.get(state, state.value)


def _event_text(world: World, event: Event) -> str:
    name = world.cluster.spec(event.workload).name
    if event.kind is EventKind.ADMITTED:
        return f"Kueue admitted {name} ({event.message})"
    if event.kind is EventKind.EVICTED:
        return f"Kueue evicted {name} and freed its quota in {event.cluster_queue}"
    return f"Kueue: {name} {event.kind.value.lower()} ({event.message})"


def _stamp(cycle: Cycle) -> str:
    return f"[{cycle.now:%H:%M} +{cycle.minute}m]"
