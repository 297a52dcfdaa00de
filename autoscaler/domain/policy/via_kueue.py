"""Rule `reclaim: via-kueue` (docs/RECLAIM.md): Kueue's own preemption as the reclaim.

Once a workload's stop is due under such a rule (its notice run: the warning stage turned
the stop into a warning first), the stop is a mark instead: our negative priority boost on
its Workload (`kueue.x-k8s.io/priority-boost`, KEP-7990; Kueue adds it to the priority it
preempts by, pkg/util/priority/priority.go `EffectivePriority`), with our `marked-at`. Kueue
then evicts it only when a waiter needs its quota, by all of its own rules. When Kueue has
preempted a marked Workload (its Evicted=True reason Preempted, or Preempted=True) and its
stop was still due as of the eviction (the caller's `at_eviction`: idle or not running up to
then), the Workload is deactivated at once (in a dry run: "would deactivate", nothing
written), for the preemptor its condition names, so it does not requeue while idle. A
marked workload whose stop is no longer due (busy, exempt, snoozed, unknown, another rule;
after a preemption: not due at the eviction, or its usage then unknown) loses the mark, and
Kueue requeues it.

Where Kueue is not known to serve the boost (the gate off or unknown), such a rule does
nothing at all: no warning, no mark, and never a stop by another route. Pure: the caller
says whether the gate is served and which Workload has which UID.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import parse_time, time_text
from autoscaler.domain.exemptions import active_exemption
from autoscaler.domain.kueue_config import PRIORITY_BOOST_GATE, GateServed
from autoscaler.domain.models import Action, Decision, Pauses, WorkloadInfo, WorkloadRef
from autoscaler.domain.notices.staging import snooze_in_force
from autoscaler.domain.policy.management import Manager
from autoscaler.domain.policy.rules import Reclaim

DUE = (Action.DEACTIVATE, Action.WOULD_DEACTIVATE)
# What a via-kueue rule does not do where the boost is not served: it promises no stop.
NOT_WITHOUT_THE_GATE = (Action.WARN, Action.WARN_DELETE, Action.DELETE)


def marked_at(workload: WorkloadInfo) -> datetime | None:
    """When we marked it, from our own annotation beside the boost; None: not our mark."""
    found = workload.annotations
    if keys.PRIORITY_BOOST not in found:
        return None
    return parse_time(found.get(keys.MARKED_AT, ""))


def boost_of_another(workload: WorkloadInfo) -> bool:
    """A priority boost someone else wrote (no `marked-at` of ours): never touched."""
    return keys.PRIORITY_BOOST in workload.annotations and marked_at(workload) is None


def marking(*, boost: int, now: datetime) -> dict[str, str | None]:
    return {keys.PRIORITY_BOOST: str(boost), keys.MARKED_AT: time_text(now)}


def unmarking() -> dict[str, str | None]:
    return dict.fromkeys(keys.MARK_KEYS)


def judge(
    workloads: Sequence[WorkloadInfo],
    decisions: Sequence[Decision],
    *,
    served: GateServed | None,
    by_uid: Mapping[str, WorkloadInfo],
    at_eviction: Mapping[WorkloadRef, Decision],
    pauses: Pauses,
    now: datetime,
) -> tuple[Decision, ...]:
    """The decisions with via-kueue's marks, unmarks and deactivations after a preemption.
    `served`: None when no rule says via-kueue (nothing read). `by_uid`: the cycle's
    Workloads by UID, to name a preemptor. `at_eviction`: a preempted marked Workload's
    decision as of its eviction (missing: unknown)."""
    return tuple(
        _judged(w, d, served=served, by_uid=by_uid, at_eviction=at_eviction, pauses=pauses, now=now)
        for w, d in zip(workloads, decisions, strict=True)
    )


def _judged(
    workload: WorkloadInfo,
    decision: Decision,
    *,
    served: GateServed | None,
    by_uid: Mapping[str, WorkloadInfo],
    at_eviction: Mapping[WorkloadRef, Decision],
    pauses: Pauses,
    now: datetime,
) -> Decision:
    via = decision.rule.reclaim is Reclaim.VIA_KUEUE
    since = marked_at(workload)
    if since is not None and via and held_after_preemption(workload, decision, pauses, now) is None:
        then = at_eviction.get(workload.ref)
        if then is not None and then.action in DUE:
            return preempted(workload, decision, by_uid=by_uid, due=then.action)
        why = (
            f"Kueue preempted it, and its stop was no longer due at the eviction ({then.reason})"
            if then is not None
            else "Kueue preempted it, and its usage up to the eviction is unknown (not seen "
            "admitted under our mark by this process)"
        )
        return replace(
            decision,
            action=Action.UNMARK,
            reason=f"{decision.reason}; {why}: mark removed, Kueue requeues it",
        )
    if via and (decision.action in DUE or decision.action in NOT_WITHOUT_THE_GATE):
        return _marked(workload, decision, served=served, since=since, now=now)
    if since is not None:
        why = "mark for Kueue's preemption removed: the stop is no longer due"
        return replace(decision, action=Action.UNMARK, reason=f"{decision.reason}; {why}")
    return decision


def _marked(
    workload: WorkloadInfo,
    decision: Decision,
    *,
    served: GateServed | None,
    since: datetime | None,
    now: datetime,
) -> Decision:
    """A via-kueue stop due (or its warning): a mark, or nothing, and why."""
    rule = decision.rule.name
    why = _cannot_mark(workload, served)
    if why is not None:
        if since is not None:  # no longer ours to keep: removed (a safe write)
            return replace(decision, action=Action.UNMARK, reason=f"{decision.reason}; {why}")
        left = f"left alone: rule {rule} reclaims via Kueue, and {why}"
        return replace(decision, action=Action.NONE, reason=f"{decision.reason}; {left}")
    if decision.action not in DUE:
        return decision  # the warning ahead of the mark
    if since is not None:
        marked = f"marked for Kueue's preemption since {time_text(since)}"
        return replace(decision, action=Action.NONE, reason=f"{decision.reason}; {marked}")
    if decision.action is Action.WOULD_DEACTIVATE:
        return replace(decision, reason=f"{decision.reason}; would mark for Kueue's preemption")
    return replace(
        decision,
        action=Action.MARK,
        reason=f"{decision.reason}; marked for Kueue's preemption at {time_text(now)}",
    )


def _cannot_mark(workload: WorkloadInfo, served: GateServed | None) -> str | None:
    if served is None or served.on is not True:
        return _gate_line(served)
    not_ours = _boost_not_ours(workload, naming_the_boost=True)
    return not_ours.why if not_ours is not None else None


def _gate_line(served: GateServed | None) -> str:
    return served.line if served is not None else "Kueue's feature gates are not read"


@dataclass(frozen=True)
class _NotOurs:
    does: str  # what via-kueue does with it: "does nothing", "leaves it alone"
    why: str


def _boost_not_ours(workload: WorkloadInfo, *, naming_the_boost: bool) -> _NotOurs | None:
    """Why its priority boost is not ours to set (not Kueue's Workload, or another's boost),
    or None: the one check of the stop and of `mark_status`; `naming_the_boost` quotes
    another's boost value in `why`."""
    if workload.manager is not Manager.KUEUE:
        return _NotOurs("does nothing", "only a Kueue Workload carries a priority boost")
    if boost_of_another(workload):
        boost = workload.annotations[keys.PRIORITY_BOOST]
        named = f" ({boost})" if naming_the_boost else ""
        return _NotOurs("leaves it alone", f"its priority boost{named} is not ours to change")
    return None


def held_after_preemption(
    workload: WorkloadInfo, decision: Decision, pauses: Pauses, now: datetime
) -> str | None:
    """None when Kueue preempted our marked, active Workload and nothing holds its stop; else
    why not. Kueue's conditions say it was preempted; `spec.active` and our annotations say
    whether it is stopped, never the eviction reason (Kueue keeps Evicted=True/Preempted and
    Requeued=True after our `spec.active: false`)."""
    if workload.preemption is None:
        return "not preempted by Kueue"
    if (held := _held(workload, pauses)) is not None:
        return held
    if active_exemption(workload.annotations, workload.owner_annotations, now=now) is not None:
        return "exempt"
    if snooze_in_force(workload, rule=decision.rule, now=now) is not None:
        return "snoozed"
    return None


def _held(workload: WorkloadInfo, pauses: Pauses) -> str | None:
    if not workload.active:
        return "already inactive"
    if workload.hands_off is not None:  # unknown (its owner unreadable), another's, ...
        return workload.hands_off.reason
    return "paused" if pauses.covers(workload.ref.namespace) else None


def preempted(
    workload: WorkloadInfo,
    decision: Decision,
    *,
    by_uid: Mapping[str, WorkloadInfo],
    due: Action = Action.DEACTIVATE,
) -> Decision:
    """Kueue preempted our marked Workload, its stop still due at the eviction: deactivate it
    at once, for its preemptor; `due` is WOULD_DEACTIVATE in a dry run (nothing written)."""
    preemption = workload.preemption
    uid = preemption.preemptor_uid if preemption is not None else ""
    preemptor = by_uid.get(uid)
    waiter = preemptor.ref if preemptor is not None else None
    # Named in full here (the snapshot keeps it); each surface tells it per caller.
    named = str(waiter) if waiter is not None else f"a Workload of UID {uid or 'unknown'}"
    why = preemption.reason if preemption is not None and preemption.reason else "Preempted"
    done = "deactivated" if due is Action.DEACTIVATE else "would be deactivated (dry run)"
    reason = (
        f"Kueue preempted it ({why}) for {named}, after our mark, its stop still due at the "
        f"eviction; {done} at once so it does not requeue while idle"
    )
    return replace(
        decision,
        action=due,
        reason=reason,
        beneficiary=waiter,
        beneficiary_queue=preemptor.cluster_queue if preemptor is not None else None,
        kueue_preempted=True,
    )


GATE_WORDS = {True: "on", False: "off", None: "unknown"}


@dataclass(frozen=True)
class MarkStatus:
    """What rule `via-kueue` does with one workload, as `explain` and `status` tell it: our
    mark and since when (from its annotations), whether Kueue serves the boost, and one
    sentence."""

    marked: bool
    since: datetime | None
    gate: str  # GATE_WORDS: on, off, unknown
    gate_line: str  # gate_served's line: the gate, where it was read, what it says
    said: str


def mark_status(
    workload: WorkloadInfo, decision: Decision, *, served: GateServed | None
) -> MarkStatus | None:
    """None where via-kueue has nothing to say: another rule, and no mark of ours."""
    since = marked_at(workload)
    if decision.rule.reclaim is not Reclaim.VIA_KUEUE and since is None:
        return None
    on = served.on if served is not None else None
    line = _gate_line(served)
    if decision.kueue_preempted and decision.action is Action.WOULD_DEACTIVATE:
        said = "Preempted by Kueue after our mark: would be deactivated at once (dry run)"
    elif decision.kueue_preempted:
        said = "Preempted by Kueue after our mark: deactivated at once, not requeued while idle"
    elif since is not None:
        said = f"Marked for Kueue's preemption since {time_text(since)}"
    elif on is not True:
        state = "not on" if on is False else "not known to be on"
        said = f"via-kueue does nothing: {PRIORITY_BOOST_GATE} is {state} in Kueue's Configuration"
    else:
        said = _unmarked(workload)
    return MarkStatus(
        marked=since is not None, since=since, gate=GATE_WORDS[on], gate_line=line, said=said
    )


def _unmarked(workload: WorkloadInfo) -> str:
    not_ours = _boost_not_ours(workload, naming_the_boost=False)
    if not_ours is not None:
        return f"via-kueue {not_ours.does}: {not_ours.why}"
    return "Not marked: it is marked for Kueue's preemption once its stop is due"
