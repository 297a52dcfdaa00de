"""The snooze act sequence, written once: the REST route and the signed link both call it.

Granting is the domain's (`domain/notices/snoozes.py`: clipped to the rule's longest snooze, refused
past its count per day). The grant's patch goes on the Workload in ONE request: the
annotations there are the truth the warning stage reads back, and the same patch removes the
warning the snooze answers, so a link naming that warning does nothing a second time; the
patch carries the resourceVersion read, so two requests racing on the same read cannot both
apply (the second is a Conflict) nor lose a grant from the day's count. The owner gets
SNOOZED_UNTIL only to show (`kubectl get raycluster -o yaml`); then the Event. Only the
Workload's patch can fail the sequence. The caller audits and notifies.
"""

from __future__ import annotations

import logging
from datetime import datetime

from autoscaler.core.ports import WorkloadActuator
from autoscaler.domain.annotations import SNOOZED_UNTIL, STOP_PLANNED_AT, time_text
from autoscaler.domain.models import WorkloadInfo
from autoscaler.domain.notices.snoozes import SnoozeGrant, grant_snooze, unsnoozing
from autoscaler.domain.policy.rules import Rule
from autoscaler.engine.acting.sequence import announce, show_on_owner

SNOOZED_EVENT = "IdleGPUSnoozed"
UNSNOOZED_EVENT = "IdleGPUUnsnoozed"


def snooze(
    actuator: WorkloadActuator,
    workload: WorkloadInfo,
    *,
    until: datetime,
    by: str,
    reason: str,
    rule: Rule,
    now: datetime,
    logger: logging.Logger,
) -> SnoozeGrant:
    """A refused grant writes nothing. Raises what the Workload's patch raised: Conflict
    when the Workload changed since `workload` was read (another snooze came first)."""
    grant = grant_snooze(
        workload, until=until, by=by, reason=reason, bounds=rule.notice.snooze, now=now
    )
    if grant.refused is not None or grant.until is None:
        logger.info("not snoozing %s for %s: %s", workload.ref, by, grant.refused)
        return grant
    # Granted from what was read (the warning it answers, the day's count): written only if
    # the Workload is unchanged since, so of two clicks at once the second is a Conflict.
    actuator.annotate_workload(workload, grant.patch, resource_version=workload.resource_version)
    # The answered warning's planned stop goes from the owner too, or it shows a stale one.
    shown = {SNOOZED_UNTIL: time_text(grant.until), STOP_PLANNED_AT: None}
    show_on_owner(actuator, workload, shown, what="snooze", logger=logger)
    clipped = (
        f" (asked until {time_text(grant.clipped_from)}, rule {rule.name}'s longest snooze)"
        if grant.clipped_from is not None
        else ""
    )
    message = f"Kept until {time_text(grant.until)}{clipped} by {by}: {reason}"
    announce(actuator, workload, reason=SNOOZED_EVENT, message=message, logger=logger)
    logger.warning("snoozed %s until %s by %s", workload.ref, time_text(grant.until), by)
    return grant


def unsnooze(
    actuator: WorkloadActuator, workload: WorkloadInfo, *, by: str, logger: logging.Logger
) -> None:
    """Removes the snooze from the Workload (its day's count stays) and the owner's copy."""
    actuator.annotate_workload(workload, unsnoozing())
    show_on_owner(actuator, workload, {SNOOZED_UNTIL: None}, what="snooze", logger=logger)
    message = f"Snooze removed by {by}: a stop needs a fresh warning"
    announce(actuator, workload, reason=UNSNOOZED_EVENT, message=message, logger=logger)
    logger.warning("unsnoozed %s by %s", workload.ref, by)
