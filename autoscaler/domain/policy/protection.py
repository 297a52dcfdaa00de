"""Why the policy keeps its hands off a workload whatever its usage: asked by the policy
before usage, and again by the delete rung (an inactive workload is decided before it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from autoscaler.domain.models import State, WorkloadInfo

if TYPE_CHECKING:
    from autoscaler.domain.policy.decisions import Policy


def kind_not_enabled(kind: str) -> str:
    """Why a workload of a kind the settings do not act on is left alone: not protection,
    a setting (`cluster.ownerKinds.<kind>.enabled`) that names how to act on it."""
    return f"kind {kind} not enabled (cluster.ownerKinds.{kind}.enabled)"


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
        (workload.owner is None, State.PROTECTED, "owner kind none is not enabled"),
        (
            workload.owner is not None and workload.owner.kind not in policy.actionable_kinds,
            State.KIND_NOT_ENABLED,
            kind_not_enabled(workload.owner.kind if workload.owner else ""),
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
