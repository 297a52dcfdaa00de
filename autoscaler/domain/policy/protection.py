"""Why the policy keeps its hands off a workload whatever its usage: asked by the policy
before usage, and again by the delete rung (an inactive workload is decided before it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from autoscaler.domain.models import State, WorkloadInfo

if TYPE_CHECKING:
    from autoscaler.domain.policy.decisions import Policy


def protection(workload: WorkloadInfo, *, policy: Policy) -> tuple[State, str] | None:
    """Why the policy keeps its hands off the workload whatever its usage (hands off as read:
    fractional GPUs, another controller's; KEDA-managed, kind not enabled, namespace left out,
    priority class protected), or None. An inactive workload
    is decided before these checks, so the delete rung asks them again itself."""
    if workload.hands_off is not None:
        return workload.hands_off.state, workload.hands_off.reason
    ns = workload.ref.namespace
    checks: list[tuple[bool, State, str]] = [
        (workload.keda_managed, State.KEDA_MANAGED, "a KEDA ScaledObject uses our signal"),
        (
            workload.owner is None or workload.owner.kind not in policy.actionable_kinds,
            State.PROTECTED,
            f"owner kind {workload.owner.kind if workload.owner else 'none'} is not enabled",
        ),
        (
            bool(policy.include_namespaces) and ns not in policy.include_namespaces,
            State.PROTECTED,
            f"namespace {ns} is not in the included namespaces",
        ),
        (ns in policy.exclude_namespaces, State.PROTECTED, f"namespace {ns} is excluded"),
        (
            workload.priority_class in policy.protected_priority_classes,
            State.PROTECTED,
            f"priority class {workload.priority_class} is protected",
        ),
    ]
    return next(((state, reason) for applies, state, reason in checks if applies), None)
