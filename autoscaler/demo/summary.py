"""The end of the demo: what acting changed, in the savings report's own figures.

Every number here is the savings report's (domain/audit/savings.py, over the service's audit
trail and last snapshot, for the trailing period the dashboard's gauges cover), so the
summary, `report`, the REST report and the dashboard say the same:

- GPU-hours reclaimed: per stop (a RayCluster's suspension, for one KAI Scheduler queues),
  GPUs held x the time from the stop until it was reactivated or the story ended; a stop that
  is a requeue (Kueue's pod integration) hands its GPU-hours to the queue instead, said apart;
  the warnings and snoozes that came before say why the stop came when it did; a workload
  Kueue does not manage is named with its manager; those whose GPU pods never ran (quota held
  without work) are said apart, as the savings report keeps them;
- admitted sooner: the queue wait shortened (domain/audit/waits.py), per waiter admitted into
  the quota a stop freed; "at least" while the stopped workload was not seen ending. The same
  story replayed in dry-run (where nothing is ever stopped) is named beside it as a check;
- left alone: every admitted workload the service did not stop, with its last reason, how
  long it was judged loading and how many GPUs it held idle while others were busy.

The lines are short, for an 80 x 24 terminal to hold the header, the summary and what
follows it: times as HH:MM (a reason's timestamps too), spans as 10:00–10:20; what `explain`
says at length (the quota a dry-run waiter lacked, the power and traffic behind a busy
verdict) is left to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from autoscaler.demo.story import Outcome, Watch
from autoscaler.demo.telling import clock_times, held_why, managed_name, stopped_word
from autoscaler.domain.audit.savings import Figures, StopFigures, savings, stops
from autoscaler.domain.audit.waits import WaitShortened
from autoscaler.domain.models import Action, Decision, State, WorkloadRef
from autoscaler.domain.policy.management import DEFAULT_MANAGER, Manager
from autoscaler.domain.text import counted
from autoscaler.domain.usage.words import class_text, evidence_text
from autoscaler.engine.metrics.savings import PERIOD

NOT_RUNNING = "its GPU pods never ran: quota held without work"
_NOT_LEFT_ALONE = (State.DEACTIVATED, State.PENDING)
# The classes whose verdict the evidence is (near-zero compute, yet loading); the others'
# reason says why on its own ("peak utilization 85% ..."), their evidence is `explain`'s.
_RESTS_ON_EVIDENCE = (State.LOADING,)


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
    gpu_hours: float = 0.0  # the report's: reclaimed, or handed to the queue by a requeue
    requeue: bool = False  # its kind's stop is a requeue (Kueue's pod integration)


@dataclass(frozen=True)
class Sooner:
    raycluster: str
    admitted_at: datetime
    dry_run_admitted_at: datetime | None  # None: still waiting when the replay ended
    dry_run_waiting: str | None  # why it was still waiting
    by: timedelta  # the report's queue wait shortened for this waiter
    after: str = ""  # the stopped workload whose quota it was admitted into
    at_least: bool = True  # `by` is a lower bound: the stopped workload was not seen ending


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
    figures: Figures = field(
        default_factory=Figures
    )  # the savings report's total over the trailing period

    @property
    def gpu_hours(self) -> float:
        return self.figures.reclaimed_gpu_hours

    @property
    def not_running_gpu_hours(self) -> float:
        """Of `gpu_hours`, those of quota held without work."""
        return sum(r.gpu_hours for r in self.reclaimed if r.not_running and not r.requeue)


def summarize(live: Outcome, replay: Outcome) -> Summary:
    since = live.ended_at - PERIOD  # the period the dashboard's gauges cover
    rows = live.final.workloads
    found = stops(live.trail, rows, since=since, now=live.ended_at)
    return Summary(
        scenario=live.scenario.name,
        started=live.scenario.start,
        ended=live.ended_at,
        reclaimed=tuple(_reclaimed(live, found)),
        sooner=tuple(_sooner(live, replay, found)),
        left_alone=tuple(_left_alone(live)),
        window=live.scenario.settings(dry_run=False).policy.idle_window,
        figures=savings(live.trail, rows, since=since, now=live.ended_at).total,
    )


def render(summary: Summary) -> list[str]:
    total = summary.figures
    lines = [
        f"Summary of {summary.scenario} ({_span(summary.started, summary.ended)}, simulated)",
        f"  GPU-hours reclaimed: {summary.gpu_hours:.2f}"
        + (
            f" ({summary.not_running_gpu_hours:.2f} of them quota held without work)"
            if summary.not_running_gpu_hours
            else ""
        )
        + f" by {counted(total.deactivations, 'stop')}"
        + (
            f"; {counted(total.requeues, 'requeue')} handed "
            f"{total.requeued_gpu_hours:.2f} to the queue"
            if total.requeues
            else ""
        ),
    ]
    lines += [f"    {_reclaimed_text(r)}" for r in summary.reclaimed]
    lines.append(
        f"  Queue wait shortened: {_wait_text(total)}, "
        f"{counted(total.waiters_admitted, 'waiter')} admitted sooner:"
    )
    lines += [f"    {_sooner_text(s)}" for s in summary.sooner] or ["    none"]
    lines.append("  Left alone:")
    lines += [f"    {_left_alone_text(a, summary.window)}" for a in summary.left_alone]
    return lines if summary.left_alone else [*lines, "    none"]


def _span(start: datetime, end: datetime) -> str:
    return f"{start:%H:%M}–{end:%H:%M}"


def _reclaimed_text(stop: Reclaimed) -> str:
    """ "first-raycluster: 2 GPUs 11:35–11:50 (story end) = 0.50 GPU-hours (warned at 11:05)"."""
    name = managed_name(stop.raycluster, stop.manager, stopped_word(stop.manager))
    end = "reactivated" if stop.reactivated else "story end"
    unit = "GPU-hours handed to the queue" if stop.requeue else "GPU-hours"
    why = "; ".join(
        (["requeued"] if stop.requeue else [])
        + ([NOT_RUNNING] if stop.not_running else [])
        + ([stop.notice] if stop.notice else [])
    )
    return (
        f"{name}: {stop.gpus} GPUs {_span(stop.since, stop.until)} ({end}) = "
        f"{stop.gpu_hours:.2f} {unit}" + (f" ({why})" if why else "")
    )


def _wait_text(figures: Figures) -> str:
    shown = _minutes(figures.wait_shortened)
    return f"at least {shown}" if figures.wait_shortened_at_least else shown


def _reclaimed(live: Outcome, found: list[StopFigures]) -> list[Reclaimed]:
    """Each stop the cluster saw, with the report's figures for it."""
    result = []
    for entry in live.audits:
        back = live.reactivated_at.get(entry.workload)
        reactivated = back is not None and back > entry.audit.at
        until = back if back is not None and reactivated else live.ended_at
        watch = live.watched.get(entry.raycluster, Watch())
        stop = _stop_of(found, entry.workload, entry.audit.at)
        figures = stop.figures if stop is not None else Figures()
        requeue = stop is not None and stop.requeue
        result.append(
            Reclaimed(
                entry.raycluster,
                entry.gpus,
                entry.audit.at,
                until,
                reactivated,
                _notice_text(watch),
                _manager(live, entry.workload),
                watch.not_running,
                figures.requeued_gpu_hours if requeue else figures.reclaimed_gpu_hours,
                requeue,
            )
        )
    return result


def _stop_of(found: list[StopFigures], target: WorkloadRef, at: datetime) -> StopFigures | None:
    """The report's stop of `target` closest in time to the cluster's record of it."""
    same = [stop for stop in found if stop.stop.target == target]
    return min(same, key=lambda stop: abs(stop.stop.at - at), default=None)


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


def _sooner(live: Outcome, replay: Outcome, found: list[StopFigures]) -> list[Sooner]:
    """The report's waiters, named as the story names them, with the dry-run replay's
    admission beside each (None: it was still waiting there when the story ended)."""
    waits: list[WaitShortened] = [wait for stop in found for wait in stop.waits]
    result = []
    for wait in sorted(waits, key=lambda w: w.admitted_at):
        ref = WorkloadRef.parse(wait.waiter)
        name = live.names.get(ref, wait.waiter) if ref is not None else wait.waiter
        result.append(
            Sooner(
                raycluster=name,
                admitted_at=wait.admitted_at,
                dry_run_admitted_at=replay.admitted_at.get(name),
                dry_run_waiting=replay.waiting.get(name),
                by=wait.by,
                after=live.names.get(wait.stopped, str(wait.stopped)),
                at_least=wait.at_least,
            )
        )
    return result


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
    held = alone.state is State.IDLE and bool(alone.longest_idle)  # "idle N min" follows
    reason = held_why(last) if held else clock_times(alone.reason)
    text = f"{managed_name(alone.raycluster, alone.manager)}, now {now}: {reason}"
    if last.evidence and alone.state in _RESTS_ON_EVIDENCE:
        text += f"; evidence: {evidence_text(last.evidence)}"
    if alone.longest_idle:
        # the stretch may be longer than the window: "of" would read as a part of it
        text += f"; idle {_minutes(alone.longest_idle)} (window {_minutes(window)})"
    if alone.unknown_for:  # its reason once: it may be the last reason, already said
        said = not alone.unknown_reason or alone.unknown_reason in alone.reason
        why = "" if said else f" ({clock_times(alone.unknown_reason)})"
        text += f"; unknown for {_minutes(alone.unknown_for)}{why}"
    if alone.loading_for:
        text += f"; loading for {_minutes(alone.loading_for)}"
    if alone.idle_held_gpus:
        text += f"; {alone.idle_held_gpus} GPUs idle-held"
    return text


def _minutes(span: timedelta) -> str:
    return f"{int(span / timedelta(minutes=1))} min"


def _sooner_text(sooner: Sooner) -> str:
    """The waiter, and the dry-run replay beside it; why it still waited there (its quota)
    is `explain`'s to say."""
    head = f"{sooner.raycluster}: admitted at {sooner.admitted_at:%H:%M}"
    head += f" after {sooner.after}'s stop" if sooner.after else ""
    by = f"at least {_minutes(sooner.by)}" if sooner.at_least else _minutes(sooner.by)
    if sooner.dry_run_admitted_at is not None:
        check = f"in dry-run admitted at {sooner.dry_run_admitted_at:%H:%M}"
    else:
        check = "in dry-run still waiting at the end"
    return f"{head}, {by} sooner ({check})"
