"""The end of the demo: what acting changed, against the same story replayed in dry-run.

- GPU-hours reclaimed: from the audit records the service wrote, GPUs held x the time from
  the deactivation (a RayCluster's suspension, for one KAI Scheduler queues) until it was
  reactivated or the story ended; the warnings and snoozes that came before say why the
  stop came when it did; a workload Kueue does not manage is named with its manager; those
  whose GPU pods never ran (quota held without work) are said apart, as the savings
  report keeps them;
- admitted sooner: each RayCluster's first admission against the dry-run replay's (where
  nothing is ever deactivated); one still waiting there counts until the story's end, "at least";
- left alone: every admitted workload the service did not stop, with its last reason, how
  long it was judged loading and how many GPUs it held idle while others were busy.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from autoscaler.demo.story import Outcome, Watch
from autoscaler.demo.telling import managed_name, stopped_word
from autoscaler.domain.models import Action, Decision, State, WorkloadRef
from autoscaler.domain.policy.management import DEFAULT_MANAGER, Manager
from autoscaler.domain.usage.words import class_text, evidence_text

_HOUR = timedelta(hours=1)
NOT_RUNNING = "its GPU pods never ran: quota held without work"
_NOT_LEFT_ALONE = (State.DEACTIVATED, State.PENDING)


@dataclass(frozen=True)
class Reclaimed:
    raycluster: str
    gpus: int
    since: datetime
    until: datetime
    reactivated: bool
    notice: str = ""  # the warnings and snoozes before the stop, as the summary says them
    manager: Manager = DEFAULT_MANAGER
    not_running: bool = False  # its GPU pods never ran: quota held without work

    @property
    def gpu_hours(self) -> float:
        return self.gpus * ((self.until - self.since) / _HOUR)


@dataclass(frozen=True)
class Sooner:
    raycluster: str
    admitted_at: datetime
    dry_run_admitted_at: datetime | None  # None: still waiting when the replay ended
    dry_run_waiting: str | None  # why it was still waiting
    by: timedelta  # a lower bound when the replay never admitted it


@dataclass(frozen=True)
class LeftAlone:
    raycluster: str
    state: State
    reason: str  # the last cycle's
    decision: Decision  # the last cycle's, for its class words and evidence
    longest_idle: timedelta  # the closest it came to the window
    unknown_for: timedelta  # how long the data did not allow a judgement
    unknown_reason: str
    loading_for: timedelta = timedelta(0)  # judged loading (evidence at near-zero compute)
    idle_held_gpus: int = 0  # the most GPUs held idle while the others were busy
    manager: Manager = DEFAULT_MANAGER


@dataclass(frozen=True)
class Summary:
    scenario: str
    started: datetime
    ended: datetime
    reclaimed: tuple[Reclaimed, ...]
    sooner: tuple[Sooner, ...]
    left_alone: tuple[LeftAlone, ...]
    window: timedelta

    @property
    def gpu_hours(self) -> float:
        return sum(r.gpu_hours for r in self.reclaimed)

    @property
    def not_running_gpu_hours(self) -> float:
        """Of `gpu_hours`, those of quota held without work."""
        return sum(r.gpu_hours for r in self.reclaimed if r.not_running)


def summarize(live: Outcome, replay: Outcome) -> Summary:
    return Summary(
        scenario=live.scenario.name,
        started=live.scenario.start,
        ended=live.ended_at,
        reclaimed=tuple(_reclaimed(live)),
        sooner=tuple(_sooner(live, replay)),
        left_alone=tuple(_left_alone(live)),
        window=live.scenario.settings(dry_run=False).policy.idle_window,
    )


def render(summary: Summary) -> list[str]:
    lines = [
        f"Summary of {summary.scenario} ({summary.started:%H:%M} to {summary.ended:%H:%M}, "
        "simulated)",
        f"  GPU-hours reclaimed: {summary.gpu_hours:.2f}"
        + (
            f" ({summary.not_running_gpu_hours:.2f} of them quota held without work)"
            if summary.not_running_gpu_hours
            else ""
        ),
    ]
    for r in summary.reclaimed:
        end = "its reactivation" if r.reactivated else "the end of the story"
        name = managed_name(r.raycluster, r.manager, stopped_word(r.manager))
        why = "; ".join(([NOT_RUNNING] if r.not_running else []) + ([r.notice] if r.notice else []))
        lines.append(
            f"    {name}: {r.gpus} GPUs from {r.since:%H:%M} to {end} at "
            f"{r.until:%H:%M} = {r.gpu_hours:.2f} GPU-hours" + (f" ({why})" if why else "")
        )
    lines.append("  Admitted sooner than in the same story replayed in dry-run:")
    lines += [f"    {_sooner_text(s)}" for s in summary.sooner] or ["    none"]
    lines.append("  Left alone:")
    lines += [f"    {_left_alone_text(a, summary.window)}" for a in summary.left_alone]
    return lines if summary.left_alone else [*lines, "    none"]


def _reclaimed(live: Outcome) -> list[Reclaimed]:
    found = []
    for entry in live.audits:
        back = live.reactivated_at.get(entry.workload)
        reactivated = back is not None and back > entry.audit.at
        until = back if back is not None and reactivated else live.ended_at
        watch = live.watched.get(entry.raycluster, Watch())
        manager = _manager(live, entry.workload)
        found.append(
            Reclaimed(
                entry.raycluster,
                entry.gpus,
                entry.audit.at,
                until,
                reactivated,
                _notice_text(watch),
                manager,
                watch.not_running,
            )
        )
    return found


def _manager(live: Outcome, ref: WorkloadRef) -> Manager:
    row = live.final.find(ref)
    return DEFAULT_MANAGER if row is None else row.info.manager


def _notice_text(watch: Watch) -> str:
    """ "warned at 11:05 and 11:20; snoozed until 11:35 by demo-admin": why the GPU-hours
    start where they do."""
    parts = []
    if watch.warnings:
        parts.append("warned at " + " and ".join(f"{at:%H:%M}" for at in watch.warnings))
    parts += [f"snoozed until {until:%H:%M} by {by}" for until, by in watch.snoozes]
    return "; ".join(parts)


def _sooner(live: Outcome, replay: Outcome) -> list[Sooner]:
    found = []
    for name, at in sorted(live.admitted_at.items(), key=lambda item: item[1]):
        other = replay.admitted_at.get(name)
        if other is not None and other <= at:
            continue
        by = (other or replay.ended_at) - at
        found.append(Sooner(name, at, other, replay.waiting.get(name), by))
    return found


def _left_alone(live: Outcome) -> list[LeftAlone]:
    found = []
    cycle = live.scenario.settings(dry_run=live.dry_run).loop.interval
    for row in live.final.workloads:
        if row.decision.state in _NOT_LEFT_ALONE or row.decision.action is not Action.NONE:
            continue
        name = live.names[row.ref]
        watch = live.watched.get(name, Watch())
        found.append(
            LeftAlone(
                raycluster=name,
                state=row.decision.state,
                reason=row.decision.reason,
                decision=row.decision,
                longest_idle=watch.longest_idle,
                unknown_for=watch.unknown_cycles * cycle,
                unknown_reason=watch.last_unknown,
                loading_for=watch.loading_cycles * cycle,
                idle_held_gpus=watch.idle_held_gpus,
                manager=row.info.manager,
            )
        )
    return found


def _left_alone_text(alone: LeftAlone, window: timedelta) -> str:
    last = alone.decision
    now = class_text(alone.state.value, idle_held_gpus=last.idle_held_gpus, gpus=last.gpus)
    text = f"{managed_name(alone.raycluster, alone.manager)}, now {now}: {alone.reason}"
    if last.evidence:
        text += f"; evidence: {evidence_text(last.evidence)}"
    if alone.longest_idle:
        # the stretch may be longer than the window: "of" would read as a part of it
        text += f"; idle {_minutes(alone.longest_idle)} (window {_minutes(window)})"
    if alone.unknown_for:
        text += f"; unknown for {_minutes(alone.unknown_for)} ({alone.unknown_reason})"
    if alone.loading_for:
        text += f"; loading for {_minutes(alone.loading_for)}"
    if alone.idle_held_gpus:
        text += f"; {alone.idle_held_gpus} GPUs idle-held"
    return text


def _minutes(span: timedelta) -> str:
    return f"{int(span / timedelta(minutes=1))} min"


def _sooner_text(sooner: Sooner) -> str:
    head = f"{sooner.raycluster}: admitted at {sooner.admitted_at:%H:%M}"
    if sooner.dry_run_admitted_at is not None:
        replay = f"{sooner.dry_run_admitted_at:%H:%M}"
        return f"{head}, {_minutes(sooner.by)} sooner (dry-run: {replay})"
    why = f" ({sooner.dry_run_waiting})" if sooner.dry_run_waiting else ""
    return f"{head}, at least {_minutes(sooner.by)} sooner (dry-run: still waiting at the end{why})"
