"""Finding the workload a request names (by its Workload name or by its owner's name), and the
rule it falls under.

Reads answer from the latest snapshot. Changes then read the Workload afresh, so they act on
what the cluster holds now, not on what the last cycle saw.
"""

from __future__ import annotations

from autoscaler.api.context import ApiContext
from autoscaler.api.problems import ApiProblem
from autoscaler.domain.access import Identity
from autoscaler.domain.models import Snapshot, State, WorkloadInfo, WorkloadRef, WorkloadStatus
from autoscaler.domain.notices.held import held_class
from autoscaler.domain.policy.rules import Rule


def find_row(snapshot: Snapshot | None, namespace: str, name: str) -> WorkloadStatus | None:
    """The row whose Workload, or else whose owner, has this name; 409 when ambiguous."""
    if snapshot is None:
        return None
    rows = [row for row in snapshot.workloads if row.ref.namespace == namespace]
    exact = next((row for row in rows if row.ref.name == name), None)
    if exact is not None:
        return exact
    owned = [row for row in rows if row.info.owner is not None and row.info.owner.name == name]
    if len(owned) > 1:
        names = ", ".join(sorted(row.ref.name for row in owned))
        raise ApiProblem(
            409, f"{namespace}/{name} owns several Workloads ({names}); name the Workload"
        )
    return owned[0] if owned else None


def require_row(snapshot: Snapshot | None, namespace: str, name: str) -> WorkloadStatus:
    row = find_row(snapshot, namespace, name)
    if row is None:
        hint = "" if snapshot is not None else " (no cycle has finished yet)"
        raise ApiProblem(404, f"no workload {namespace}/{name}{hint}")
    return row


def fresh_workload(
    context: ApiContext, who: Identity, namespace: str, name: str
) -> tuple[WorkloadInfo, WorkloadStatus | None]:
    """The Workload as the cluster holds it now, and its row in the latest snapshot. A
    caller who may not read the namespace gets 403 rather than 404: no existence oracle."""
    row = find_row(context.store.latest(), namespace, name)
    ref = row.ref if row is not None else WorkloadRef(namespace, name)
    fresh = context.cluster.get_workload(ref)
    if fresh is None:
        context.access.require_read(who, namespace)
        raise ApiProblem(404, f"no workload {namespace}/{name}")
    return fresh, row


def rule_of(context: ApiContext, workload: WorkloadInfo) -> Rule:
    """The rule the workload falls under as it is now (the one that cannot be evaluated,
    when so: a snooze or an exemption only ever delays a stop)."""
    if context.policy is None:
        raise ApiProblem(503, "the service has no rulebook to bound a snooze with")
    snapshot = context.store.latest()
    usage = snapshot.usage if snapshot is not None else {}
    return context.policy.match(workload, usage).rule


def held_of(context: ApiContext, ref: WorkloadRef) -> State:
    """How the latest cycle saw it hold its GPUs (idle or not running), for a notice's words
    (`domain/notices/held.py`); idle when no cycle saw it."""
    row = find_row(context.store.latest(), ref.namespace, ref.name)
    return held_class(row.decision if row is not None else None)
