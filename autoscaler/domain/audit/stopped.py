"""Why a stopped workload is stopped, read back from what is durable: the annotations our stop
patch wrote on the Workload (in the same patch as `spec.active: false`, so they are proof it
applied) and copied on its owner. Never from memory: any replica, and a restarted service,
tells the same story.

When it was stopped, by which rule (or which person), for which waiter, the evidence it was
stopped on (idle how long, the peak, the coverage), and what brings it back: the command for a
stop that lasts, or that it comes back by itself for a requeue. A workload stopped by someone
else (no `deactivated-at` of ours) says so, and what stopped it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from autoscaler.domain import annotations as keys
from autoscaler.domain.durations import format_duration
from autoscaler.domain.models import WorkloadInfo, WorkloadRef
from autoscaler.domain.policy.management import inactive_reason
from autoscaler.domain.policy.owner_words import stop_words
from autoscaler.domain.program import PROGRAM
from autoscaler.domain.tenant_names import MayRead, Named, told
from autoscaler.domain.usage.assessment import dated_clock

_ADMIN_POLICY = "deactivated by an admin through the API"


@dataclass(frozen=True)
class Stopped:
    """A stopped workload's story. `ours` False: not stopped by this service (only `what`
    and `bring_back` are said)."""

    ours: bool
    what: str  # the field that holds it stopped: "spec.active is false"
    at: datetime | None = None
    rule: str | None = None
    by: str | None = None  # the person, for a "deactivate now"
    waiter: Named | None = None
    reason: str | None = None  # the reason the stop was made on, as it was said then
    idle_for: timedelta | None = None
    peak: float | None = None
    coverage: float | None = None
    threshold: float | None = None
    lasts: bool = True
    bring_back: str = ""

    @property
    def stopper(self) -> str:
        """ "rule default", "alice", "this service" (neither written), or "not this
        service"."""
        if not self.ours:
            return "not this service"
        if self.rule:
            return f"rule {self.rule}"
        return self.by or "this service"

    def reason_told(self, *, may_read: MayRead) -> str | None:
        """The stop's reason, the waiter it names told only to who may read its namespace."""
        if self.reason is None:
            return None
        return told(self.reason, (self.waiter,) if self.waiter else (), may_read=may_read)

    def waiter_told(self, *, may_read: MayRead) -> str | None:
        if self.waiter is None:
            return None
        return self.waiter.words(shown=may_read(self.waiter.ref.namespace))

    def evidence(self) -> str | None:
        """ "idle 1h50m at peak 2% (threshold 5%), coverage 100%": the figures it was stopped
        on, each only where it was written."""
        parts = [f"idle {format_duration(self.idle_for, split='always')}"] if self.idle_for else []
        if self.peak is not None:
            limit = f" (threshold {self.threshold:.0%})" if self.threshold is not None else ""
            parts.append(f"peak {self.peak:.0%}{limit}")
        if self.coverage is not None:
            parts.append(f"coverage {self.coverage:.0%}")
        return ", ".join(parts) or None

    def summary(self, *, now: datetime) -> str:
        """One line for a reason: "stopped at 10:15 by rule default (spec.active is false)",
        or "spec.active is false: not stopped by this service"; the waiter is left to the
        surfaces that tell it per reader."""
        if not self.ours or self.at is None:
            return f"{self.what}: not stopped by this service"
        return f"stopped at {dated_clock(self.at, now=now)} by {self.stopper} ({self.what})"


def stopped_of(workload: WorkloadInfo) -> Stopped | None:
    """The story of an inactive workload, from our annotations on it (else its owner's copy);
    None while it is active."""
    if workload.active:
        return None
    what = inactive_reason(workload.manager)
    stop = stop_words(workload.owner, manager=workload.manager)
    found = _ours(workload)
    if found is None:
        return Stopped(ours=False, what=what, lasts=stop.lasts, bring_back=_not_ours(what))
    notes, at = found
    reason = notes.get(keys.DEACTIVATED_REASON) or None
    idle_since = keys.parse_time(notes.get(keys.DEACTIVATED_IDLE_SINCE, ""))
    return Stopped(
        ours=True,
        what=what,
        at=at,
        rule=_rule(notes),
        by=notes.get(keys.DEACTIVATED_BY) or None,
        waiter=_waiter(notes, reason=reason or ""),
        reason=reason,
        idle_for=at - idle_since if idle_since is not None and idle_since < at else None,
        peak=keys.parse_ratio(notes.get(keys.DEACTIVATED_PEAK)),
        coverage=keys.parse_ratio(notes.get(keys.DEACTIVATED_COVERAGE)),
        threshold=keys.parse_ratio(notes.get(keys.DEACTIVATED_THRESHOLD)),
        lasts=stop.lasts,
        bring_back=bring_back_command(workload) if stop.lasts else f"it {stop.said}",
    )


def bring_back_command(workload: WorkloadInfo) -> str:
    """The CLI command that reactivates it, named as people know it (its owner's name, which
    the API resolves to the Workload)."""
    return reactivate_command(namespace=workload.ref.namespace, name=cli_name(workload))


def reactivate_command(*, namespace: str, name: str) -> str:
    """The one wording of the reactivate command, for whoever knows only the names (a
    notification's hint)."""
    return f'{PROGRAM} reactivate -n {namespace} {name} --reason "back to work"'


def cli_name(workload: WorkloadInfo) -> str:
    """The name the CLI takes: the owner's, as people know it, else the Workload's."""
    return workload.owner.name if workload.owner is not None else workload.ref.name


def _ours(workload: WorkloadInfo) -> tuple[Mapping[str, str], datetime] | None:
    """Our annotations, with the stop's time: the Workload's own first (the record), else
    the owner's copy (a RayCluster a suspend actuator stops is its own row). None when we
    reactivated it since: stopped again, it was by someone else (Kueue's backoff, an admin)."""
    for notes in (workload.annotations, workload.owner_annotations):
        at = keys.deactivated_at(notes)
        if at is not None:
            sources = (workload.annotations, workload.owner_annotations)
            return None if keys.reactivated_since(at, *sources) else (notes, at)
    return None


def _rule(notes: Mapping[str, str]) -> str | None:
    """The rule annotation; for a stop written before it, the rule its policy line names
    ("rule default: threshold 5%, ...")."""
    if notes.get(keys.DEACTIVATED_RULE):
        return notes[keys.DEACTIVATED_RULE]
    policy = notes.get(keys.DEACTIVATED_POLICY, "")
    if policy == _ADMIN_POLICY or not policy.startswith("rule "):
        return None
    name, colon, _ = policy.removeprefix("rule ").partition(":")
    return name if colon and name else None


def _waiter(notes: Mapping[str, str], *, reason: str) -> Named | None:
    """The waiter it was stopped for: only the one the stop's own reason names, so the key of
    an earlier stop (the workload reactivated since) never passes for this one's."""
    ref = WorkloadRef.parse(notes.get(keys.DEACTIVATED_FOR, ""))
    if ref is None or str(ref) not in reason:
        return None
    return Named(ref, notes.get(keys.DEACTIVATED_FOR_QUEUE) or None)


def _not_ours(what: str) -> str:
    return f"not stopped by this service ({what}): whoever stopped it brings it back"
