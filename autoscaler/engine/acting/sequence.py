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
    show_on_owner(actuator, workload, audit.annotations(), what="audit annotations", logger=logger)
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


def show_on_owner(
    actuator: WorkloadActuator,
    workload: WorkloadInfo,
    patch: Mapping[str, str | None],
    *,
    what: str,
    logger: logging.Logger,
) -> None:
    """Annotations copied on the owner, where people look (`kubectl get raycluster`), only to
    show: the Workload's own annotations are the record, so a failure is only reported. Not
    written when the owner is not ours to write (the Workload's patch already carried them)
    or there is nothing to show."""
    if not patch or not actuator.writes_owner(workload):
        return
    try:
        actuator.annotate_owner(workload, patch)
    except ClusterError as exc:
        logger.warning("%s not written on the owner of %s: %s", what, workload.ref, exc)


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
