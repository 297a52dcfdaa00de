"""Every decision is logged once per cycle with its reason and numbers, as structured fields.

The line names the workload's class (busy, loading, idle-held with its idle GPUs, idle,
unknown, or why usage does not decide) and what the evidence signals saw, so a person who
greps for a workload reads why it was left alone or stopped, as the idle-culler's lines do.

An exempt workload's line also says who exempted it and why, as its annotations say: text a
person wrote, maybe with kubectl, which the log formatters escape (`core/logs.py`).
"""

from __future__ import annotations

import logging
from datetime import datetime

from autoscaler.domain.audit.subjects import owner_text
from autoscaler.domain.exemptions import exemption_of
from autoscaler.domain.models import ActionRecord, Decision, State, WorkloadInfo
from autoscaler.domain.usage.words import class_text, evidence_text


def log_decision(
    logger: logging.Logger, workload: WorkloadInfo, decision: Decision, *, now: datetime
) -> None:
    fields: dict[str, object] = {
        "namespace": decision.workload.namespace,
        "workload": decision.workload.name,
        "owner": owner_text(workload.owner),
        "rule": decision.rule.name,
        "state": decision.state.value,
        "action": decision.action.value,
        "gpus": decision.gpus,
        "peak": decision.peak,
        "coverage": decision.coverage,
        "idle_since": decision.idle_since.isoformat() if decision.idle_since else None,
        "time_left_s": decision.time_left.total_seconds() if decision.time_left else None,
        "evidence": list(decision.evidence),
        "idle_held_gpus": decision.idle_held_gpus,
        **_notice_fields(decision),
    }
    said = _exempted_by(workload, fields, now=now) if decision.state is State.EXEMPT else ""
    logger.info(
        "%s %s, %s: %s%s; evidence: %s (rule %s)",
        decision.action.value,
        decision.workload,
        class_text(
            decision.state.value, idle_held_gpus=decision.idle_held_gpus, gpus=decision.gpus
        ),
        decision.reason,
        said,
        evidence_text(decision.evidence),
        decision.rule.name,
        extra=fields,
    )


def _notice_fields(decision: Decision) -> dict[str, object]:
    """The warning, snooze and planned stop or deletion (ISSUE 15), those there are."""
    notice = decision.notice
    times = {
        "warned_at": notice.warned_at,
        "stop_at": notice.stop_at,
        "snoozed_until": notice.snoozed_until,
        "delete_at": notice.delete_at,
    }
    found: dict[str, object] = {k: t.isoformat() for k, t in times.items() if t is not None}
    if notice.snoozed_by is not None:
        found["snoozed_by"] = notice.snoozed_by
    return found


def _exempted_by(workload: WorkloadInfo, fields: dict[str, object], *, now: datetime) -> str:
    exemption = exemption_of(workload, now=now)
    if exemption is None or (exemption.by is None and exemption.reason is None):
        return ""
    fields.update(exempt_by=exemption.by, exempt_reason=exemption.reason)
    return f" (by {exemption.by or '?'}: {exemption.reason or ''})"


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
