"""Finding the workload a request names (by its Workload name or by its owner's name), and the
rule it falls under.

Reads answer from the latest snapshot. Changes then read the Workload afresh, so they act on
what the cluster holds now, not on what the last cycle saw.
"""

from __future__ import annotations

from autoscaler.api.access import unseen_change, workload_target
from autoscaler.api.context import ApiContext
from autoscaler.api.problems import ApiProblem
from autoscaler.domain.access import Identity
from autoscaler.domain.models import Snapshot, State, WorkloadInfo, WorkloadRef, WorkloadStatus
from autoscaler.domain.policy.rules import Rule
from autoscaler.domain.problem_types import ProblemType
from autoscaler.domain.usage.assessment import held_class


def named_rows(snapshot: Snapshot | None, namespace: str, name: str) -> list[WorkloadStatus]:
    """The row whose Workload has this name, else every row whose owner has it."""
    if snapshot is None:
        return []
    rows = [row for row in snapshot.workloads if row.ref.namespace == namespace]
    exact = next((row for row in rows if row.ref.name == name), None)
    if exact is not None:
        return [exact]
    return [row for row in rows if row.info.owner is not None and row.info.owner.name == name]


def find_row(snapshot: Snapshot | None, namespace: str, name: str) -> WorkloadStatus | None:
    """The row whose Workload, or else whose owner, has this name; 409 when ambiguous. Only
    for a caller already known to read the namespace (or an admin): the 409 names them."""
    rows = named_rows(snapshot, namespace, name)
    if len(rows) > 1:
        raise _ambiguous(namespace, name, rows)
    return rows[0] if rows else None


def _ambiguous(namespace: str, name: str, rows: list[WorkloadStatus]) -> ApiProblem:
    names = ", ".join(sorted(row.ref.name for row in rows))
    return ApiProblem(
        409, f"{namespace}/{name} owns several Workloads ({names}); name the Workload"
    )


def require_row(snapshot: Snapshot | None, namespace: str, name: str) -> WorkloadStatus:
    row = find_row(snapshot, namespace, name)
    if row is None:
        hint = "" if snapshot is not None else " (no cycle has finished yet)"
        raise no_such_workload(namespace, name, hint=hint)
    return row


def no_such_workload(namespace: str, name: str, *, hint: str = "") -> ApiProblem:
    return ApiProblem(
        404, f"no workload {namespace}/{name}{hint}", type=ProblemType.NO_SUCH_WORKLOAD
    )


def fresh_workload(
    context: ApiContext, who: Identity, namespace: str, name: str
) -> tuple[WorkloadInfo, WorkloadStatus | None]:
    """The Workload as the cluster holds it now, and its row in the latest snapshot, for a
    caller already authorized whatever the name matches (an admin). One who may not read the
    namespace gets 403 rather than 404: no existence oracle."""
    row = find_row(context.store.latest(), namespace, name)
    ref = row.ref if row is not None else WorkloadRef(namespace, name)
    fresh = context.cluster.get_workload(ref)
    if fresh is None:
        context.access.require_read(who, namespace)
        raise no_such_workload(namespace, name)
    return fresh, row


def workload_to_change(
    context: ApiContext, who: Identity, namespace: str, name: str
) -> tuple[WorkloadInfo, WorkloadStatus | None]:
    """As `fresh_workload`, for a caller who needs the change right on what the name matches:
    asked on each candidate of the snapshot before anything about them is told or read (the
    409 that names several Workloads comes after it, and so does the fresh read, whose errors
    would name the Workload), and again on the fresh Workload if its owner differs. Refused to
    a caller who may not read the namespace, the answer is the same whatever was found.

    A name the snapshot lacks is read from the cluster (the Workload, its owner, its pods)
    only for a caller who may read the namespace or change its Workloads: asked from the
    request alone, so it reveals nothing, and a caller with no right there makes the service
    send no request and learns nothing from how long the answer took. One who may change
    just their own owner, and not read, waits for a cycle to have seen it."""
    asked = WorkloadRef(namespace, name)
    rows = named_rows(context.store.latest(), namespace, name)
    for candidate in rows:
        context.access.require_workload_change(who, candidate.info, asked=asked)
    if len(rows) > 1:
        raise _ambiguous(namespace, name, rows)
    row = rows[0] if rows else None
    if row is None and not context.access.may_read_or_change(who, namespace):
        raise unseen_change(who, asked)
    fresh = context.cluster.get_workload(row.ref if row is not None else asked)
    if fresh is None:
        if not context.access.may_read(who, namespace):
            raise unseen_change(who, asked)
        raise no_such_workload(namespace, name)
    if row is None or workload_target(fresh) != workload_target(row.info):
        context.access.require_workload_change(who, fresh, asked=asked)
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
    """How the latest cycle saw this very Workload hold its GPUs (idle or not running), for a
    notice's words (`domain/notices/held.py`); idle when no cycle saw it. Matched by its ref
    alone: its name may be an owner's too, and that owner's rows are other workloads (or a
    409 naming them, after a snooze was written or on a keep-it link's page)."""
    snapshot = context.store.latest()
    row = snapshot.find(ref) if snapshot is not None else None
    return held_class(row.decision if row is not None else None)
