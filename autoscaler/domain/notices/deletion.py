"""The last rung, opt-in (rule action `delete` with `deleteAfter`): delete the RayCluster of a
Workload we deactivated and that stayed inactive for `deleteAfter`, after its own warning.

The inactive period counts only when it began with our own audited deactivation, read from
the Workload: it is inactive and carries our DEACTIVATED_AT (written in the same patch as
`spec.active: false`), and nothing since says the workload lived again:
- no reactivation recorded at or after it (REACTIVATED_AT, ours, on the Workload or owner);
- the object is not younger than it (re-created from YAML that kept our old annotation);
- no admission after it. The adapter fills `admitted_at` only while the Admitted condition is
  True, so a deactivated Workload whose eviction completed has none: that is our own stop
  (Kueue evicts after our patch). One still Admitted after that time was admitted again;
- no pod created after it (the owner ran again);
- no eviction after it (Kueue's Evicted condition, True, turned later than our patch plus a
  little slack): a hand reactivation then a hand deactivation leave that trace whenever Kueue
  reset the condition in between (it does when it admits the workload again). No condition
  read is no evidence either way.

Deletion has its own warning (DELETE_WARNED_AT, DELETE_PLANNED_AT): valid when written after
the deactivation and after any exemption or snooze since (they answer it as they answer a
stop warning), so a deletion they held is warned afresh once they end. The delete comes at
max(planned, warned + warnBefore). A pause, the policy's protections (KEDA, owner kind,
namespaces, priority class), an exemption or a snooze in force holds the deletion and its
warning. Pure: `now` is an argument; dry run writes nothing.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import (
    deactivated_at,
    parse_time,
    promise_time,
    reactivated_since,
    time_text,
)
from autoscaler.domain.durations import format_duration
from autoscaler.domain.exemptions import active_exemption
from autoscaler.domain.models import Action, Decision, Pauses, State, WorkloadInfo
from autoscaler.domain.notices.snoozes import latest_grant
from autoscaler.domain.notices.staging import (
    Warned,
    snooze_in_force,
    warnings_count_after,
)
from autoscaler.domain.policy.decisions import Policy
from autoscaler.domain.policy.protection import protection
from autoscaler.domain.policy.rules import Rule, RuleAction

DELETABLE_KINDS = frozenset({"RayCluster"})
# Kueue evicts right after our patch; an eviction later than this was another deactivation.
# (Kueue down for longer makes our own look foreign: the deletion waits, never the reverse.)
EVICTION_SLACK = timedelta(minutes=2)


def delete_stage(
    decision: Decision,
    workload: WorkloadInfo,
    *,
    rule: Rule,
    policy: Policy,
    pauses: Pauses,
    now: datetime,
) -> Decision:
    """A deactivated row under a `delete` rule: its deletion warned, done, or shown ahead."""
    delete_after = rule.notice.delete_after
    if not _applies(decision, workload, rule=rule) or delete_after is None:
        return decision
    since = our_deactivation(workload)
    if since is None:
        why = "not deleted: its inactive period did not begin with our deactivation"
        return replace(decision, reason=f"{decision.reason}; {why}")
    return _towards_delete(
        decision,
        workload,
        since=since,
        delete_after=delete_after,
        lead=rule.notice.warn_before,
        held=_held(workload, rule=rule, policy=policy, pauses=pauses, now=now),
        dry_run=policy.dry_run,
        now=now,
    )


def _towards_delete(
    decision: Decision,
    workload: WorkloadInfo,
    *,
    since: datetime,
    delete_after: timedelta,
    lead: timedelta,
    held: str | None,
    dry_run: bool,
    now: datetime,
) -> Decision:
    """Inactive since our deactivation: warn, delete, or show when, unless something holds it."""
    warned = _delete_warning(workload, since=since, lead=lead, now=now)
    delete_at = max(since + delete_after, warned) if warned is not None else since + delete_after
    shown = replace(decision, notice=replace(decision.notice, delete_at=delete_at))
    if held is not None:  # the deletion and its warning alike
        return replace(shown, reason=f"{decision.reason}; deletion held: {held}")
    if dry_run:
        return _dry_run(shown, delete_at=delete_at, lead=lead, now=now)
    if warned is None and lead > timedelta(0):
        return _warn_ahead(shown, delete_at=delete_at, lead=lead, now=now)
    if now >= delete_at:
        why = f"inactive since {time_text(since)}, deletion due at {time_text(delete_at)}"
        return replace(shown, action=Action.DELETE, reason=f"{decision.reason}; {why}")
    return _planned(shown, delete_at=delete_at)


def our_deactivation(workload: WorkloadInfo) -> datetime | None:
    """When the current inactive period began, if it began with our deactivation; else None."""
    since = deactivated_at(workload.annotations)
    if workload.active or since is None:
        return None
    lived_again = [
        reactivated_since(since, workload.annotations, workload.owner_annotations),
        workload.created_at > since,
        workload.admitted_at is not None and workload.admitted_at > since,
        any(pod.created_at > since for pod in workload.pods),
        workload.evicted_at is not None and workload.evicted_at > since + EVICTION_SLACK,
    ]
    return None if any(lived_again) else since


def _applies(decision: Decision, workload: WorkloadInfo, *, rule: Rule) -> bool:
    owner = workload.owner
    return (
        decision.state is State.DEACTIVATED
        and rule.action is RuleAction.DELETE
        and owner is not None
        and owner.kind in DELETABLE_KINDS
    )


def _delete_warning(
    workload: WorkloadInfo, *, since: datetime, lead: timedelta, now: datetime
) -> datetime | None:
    """The earliest deletion a valid delete warning allows, or None when there is none."""
    written = workload.annotations
    warned = parse_time(written.get(keys.DELETE_WARNED_AT, ""))
    if warned is None or warned <= _delete_warnings_count_after(workload, since=since, now=now):
        return None
    promised = parse_time(written.get(keys.DELETE_PLANNED_AT, ""))
    return Warned(at=warned, promised=promised).stop_at(warn_before=lead)


def _delete_warnings_count_after(
    workload: WorkloadInfo, *, since: datetime, now: datetime
) -> datetime:
    """A delete warning written at or before this time is void: from before our deactivation,
    or answered since by an exemption or a snooze (a snooze does not remove it as it removes
    a stop warning), so once they end the deletion is warned afresh."""
    answered = [since, warnings_count_after(workload)]
    snoozed = latest_grant(workload.annotations, now=now)
    return max([*answered, snoozed] if snoozed is not None else answered)


def _held(
    workload: WorkloadInfo, *, rule: Rule, policy: Policy, pauses: Pauses, now: datetime
) -> str | None:
    """What holds the deletion: the kill switch, the policy's protections (decided after
    `spec.active` by the policy, so asked here), an exemption or a snooze in force."""
    namespace = workload.ref.namespace
    if pauses.covers(namespace):
        return "paused (service)" if pauses.everything else f"paused (namespace {namespace})"
    protected = protection(workload, policy=policy)
    if protected is not None:
        return protected[1]
    exemption = active_exemption(workload.annotations, workload.owner_annotations, now=now)
    if exemption is not None:
        return f"exempt ({exemption.source})"
    snoozed = snooze_in_force(workload, rule=rule, now=now)
    if snoozed is not None:
        return f"snoozed until {time_text(snoozed.until)} by {snoozed.by}"
    return None


def _warn_ahead(
    decision: Decision, *, delete_at: datetime, lead: timedelta, now: datetime
) -> Decision:
    """No delete warning yet: given once the deletion is within the lead time, promising it
    no sooner than the lead time from now."""
    if delete_at - now > lead:
        return _planned(decision, delete_at=delete_at)
    planned = promise_time(max(delete_at, now + lead))  # kept to the second, never sooner
    notice = format_duration(lead, split="always")
    why = f"deletion warning: delete planned at {time_text(planned)} ({notice} notice)"
    return replace(
        decision,
        action=Action.WARN_DELETE,
        notice=replace(decision.notice, delete_at=planned),
        reason=f"{decision.reason}; {why}",
    )


def _dry_run(
    decision: Decision, *, delete_at: datetime, lead: timedelta, now: datetime
) -> Decision:
    if now < delete_at:
        return _planned(decision, delete_at=delete_at)
    first = (
        f", would warn {format_duration(lead, split='always')} first" if lead > timedelta(0) else ""
    )
    why = f"would delete: due at {time_text(delete_at)}{first}"
    return replace(decision, action=Action.WOULD_DELETE, reason=f"{decision.reason}; {why}")


def _planned(decision: Decision, *, delete_at: datetime) -> Decision:
    return replace(decision, reason=f"{decision.reason}; deletion at {time_text(delete_at)}")
