"""The act sequences, written once: the loop's Deactivator and the REST routes both call them.

Deactivate: ONE merge patch on the Workload carrying `spec.active: false` and the audit
annotations (so the annotation is proof the patch applied, even when its answer is lost),
then the same annotations on the owner, then the Event. Reactivate: `spec.active: true` with
the reactivation record in one guarded patch, then the Event. Only the Workload's patch can
fail the sequence: the owner's annotations and the Event are reported when missing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from autoscaler.core.errors import ClusterError
from autoscaler.core.ports import WorkloadActuator
from autoscaler.domain.annotations import DeactivationAudit
from autoscaler.domain.models import WorkloadInfo

DEACTIVATED_EVENT = "IdleGPUDeactivated"
REACTIVATED_EVENT = "IdleGPUReactivated"


def deactivate(
    actuator: WorkloadActuator,
    workload: WorkloadInfo,
    *,
    audit: DeactivationAudit,
    message: str,
    logger: logging.Logger,
) -> None:
    """Raises what the Workload's patch raised (AnswerLost: it may have applied)."""
    actuator.deactivate(workload, audit)
    if actuator.writes_owner(workload):  # else the Workload's patch already carried them
        try:
            actuator.annotate_owner(workload, audit.annotations())
        except ClusterError as exc:  # the Workload's own annotations already tell the story
            logger.warning(
                "audit annotations not written on the owner of %s: %s", workload.ref, exc
            )
    announce(actuator, workload, reason=DEACTIVATED_EVENT, message=message, logger=logger)


def reactivate(
    actuator: WorkloadActuator,
    workload: WorkloadInfo,
    *,
    annotations: Mapping[str, str | None],
    message: str,
    logger: logging.Logger,
) -> None:
    """Raises Conflict when the Workload changed since it was read."""
    actuator.reactivate(workload, annotations)
    announce(actuator, workload, reason=REACTIVATED_EVENT, message=message, logger=logger)


def announce(
    actuator: WorkloadActuator,
    workload: WorkloadInfo,
    *,
    reason: str,
    message: str,
    logger: logging.Logger,
) -> None:
    try:
        actuator.announce(workload, reason=reason, message=message)
    except ClusterError as exc:  # the change happened; a missing Event is only reported
        logger.warning("event not written for %s: %s", workload.ref, exc)
