"""Every decision is logged once per cycle with its reason and numbers, as structured fields."""

from __future__ import annotations

import logging

from autoscaler.domain.models import ActionRecord, Decision, WorkloadInfo


def log_decision(logger: logging.Logger, workload: WorkloadInfo, decision: Decision) -> None:
    fields = {
        "namespace": decision.workload.namespace,
        "workload": decision.workload.name,
        "owner": f"{workload.owner.kind}/{workload.owner.name}" if workload.owner else None,
        "state": decision.state.value,
        "action": decision.action.value,
        "gpus": decision.gpus,
        "peak": decision.peak,
        "coverage": decision.coverage,
        "idle_since": decision.idle_since.isoformat() if decision.idle_since else None,
        "time_left_s": decision.time_left.total_seconds() if decision.time_left else None,
    }
    logger.info(
        "%s %s: %s", decision.action.value, decision.workload, decision.reason, extra=fields
    )


def log_action(logger: logging.Logger, record: ActionRecord) -> None:
    fields = {
        "namespace": record.workload.namespace,
        "workload": record.workload.name,
        "action": record.action.value,
        "outcome": str(record.outcome),
    }
    level = logging.WARNING if record.outcome.went_wrong else logging.INFO
    logger.log(
        level, "%s %s: %s", record.action.value, record.workload, record.outcome, extra=fields
    )
