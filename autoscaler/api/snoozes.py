"""What a snooze asked through the API comes to, for the REST route and the signed link alike:
the workload's rule, the act sequence (`engine.snoozing`), the audit record and the SNOOZED
notification. A refused snooze is a 409 and writes nothing."""

from __future__ import annotations

from datetime import datetime

from autoscaler.api.context import ApiContext
from autoscaler.api.problems import ApiProblem
from autoscaler.core.errors import Conflict
from autoscaler.domain.annotations import time_text
from autoscaler.domain.audit.records import AuditRecord
from autoscaler.domain.models import WorkloadInfo
from autoscaler.domain.notices.notifications import NoticeKind, Notification
from autoscaler.domain.notices.snoozes import SnoozeGrant
from autoscaler.domain.policy.rules import Rule
from autoscaler.engine.acting import snooze as snoozing
from autoscaler.engine.notify.notices import send


class SnoozeRaced(ApiProblem):
    """The Workload changed between its read and the snooze's patch (another snooze, or the
    loop, came first): nothing was written. A 409; the link shows "already used"."""


def rule_of(context: ApiContext, workload: WorkloadInfo) -> Rule:
    """The rule the workload falls under as it is now (the one that cannot be evaluated,
    when so: a snooze or an exemption only ever delays a stop)."""
    if context.policy is None:
        raise ApiProblem(503, "the service has no rulebook to bound a snooze with")
    snapshot = context.store.latest()
    usage = snapshot.usage if snapshot is not None else {}
    return context.policy.match(workload, usage).rule


def keep(
    context: ApiContext,
    workload: WorkloadInfo,
    *,
    until: datetime,
    by: str,
    reason: str,
    rule: Rule,
    now: datetime,
) -> SnoozeGrant:
    """Snooze under `rule` (`rule_of`, matched once by the caller), audit with `by` as the
    actor, and tell the workload's targets."""
    try:
        grant = snoozing.snooze(
            context.actuator,
            workload,
            until=until,
            by=by,
            reason=reason,
            rule=rule,
            now=now,
            logger=context.logger,
        )
    except Conflict as exc:
        raise SnoozeRaced(409, f"{workload.ref} changed since it was read: {exc}") from exc
    if grant.refused is not None or grant.until is None:
        raise ApiProblem(409, f"{workload.ref} cannot be snoozed: {grant.refused}")
    context.audit(
        AuditRecord(
            at=now,
            actor=by,
            action="snooze",
            target=str(workload.ref),
            reason=_audited(grant, rule=rule, reason=reason),
            namespace=workload.ref.namespace,
            gpus=workload.gpus or None,
        )
    )
    _notify(context, workload, grant=grant, rule=rule, by=by, reason=reason, now=now)
    return grant


def _audited(grant: SnoozeGrant, *, rule: Rule, reason: str) -> str:
    assert grant.until is not None
    said = f"until {time_text(grant.until)}"
    if grant.clipped_from is not None:  # the bound an admin set is visible in the trail
        said += f" (asked until {time_text(grant.clipped_from)}, clipped to rule {rule.name}'s "
        said += "longest snooze)"
    return f"{said}: {reason}"


def _notify(
    context: ApiContext,
    workload: WorkloadInfo,
    *,
    grant: SnoozeGrant,
    rule: Rule,
    by: str,
    reason: str,
    now: datetime,
) -> None:
    notification = Notification(
        kind=NoticeKind.SNOOZED,
        workload=workload.ref,
        uid=workload.uid,
        owner=workload.owner,
        rule=rule.name,
        reason=f"kept by {by}: {reason}",
        at=now,
        gpus=workload.gpus,
        snoozed_until=grant.until,
        snoozed_by=by,
    )
    send(context.notices.loop, notification, workload=workload, rule=rule)
