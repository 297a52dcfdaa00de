"""Whose Workload names a reader is told (docs/SECURITY.md "Names of other namespaces").

A stop's waiter (the beneficiary of a `when-contended` stop, the preemptor Kueue evicted a
via-kueue mark for) and the heads fair sharing serves first may sit in any namespace. The
snapshot, the logs and the durable records keep their names: admins and the waiter's own
readers need them. Every surface that answers a caller names such a Workload only to one
who may read its namespace; anyone else reads "a Workload in ClusterQueue <cq>" (a
ClusterQueue is cluster-scoped, shown to everyone already).

The texts that name one are built where the decision is made (a reason grows by clauses,
stage after stage), always with `str(ref)`; each carries the refs it names, with their
ClusterQueues, beside it, and `told` renders it for one caller from those refs. This is the
one place that policy lives; the REST routes pass their caller's `may_read`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from autoscaler.domain.models import Decision, WorkloadRef

# Whether the caller may read one namespace (api/access.py `Access.may_read`, bound to it).
MayRead = Callable[[str], bool]

# A Workload name's characters (a DNS subdomain) around it: a longer name is another name.
_NAME_CHARS = "A-Za-z0-9-"


@dataclass(frozen=True)
class Named:
    """A Workload a text names, and its ClusterQueue (None: not known)."""

    ref: WorkloadRef
    cluster_queue: str | None

    def words(self, *, shown: bool) -> str:
        if shown:
            return str(self.ref)
        if self.cluster_queue:
            return f"a Workload in ClusterQueue {self.cluster_queue}"
        return "a Workload of another namespace"


def told(text: str, names: Iterable[Named], *, may_read: MayRead) -> str:
    """`text` as told to a caller: each of `names` it may not read replaced by its words."""
    for named in names:
        if may_read(named.ref.namespace):
            continue
        exact = rf"(?<![{_NAME_CHARS}./]){re.escape(str(named.ref))}(?![{_NAME_CHARS}]|\.\w)"
        text = re.sub(exact, named.words(shown=False), text)
    return text


def named_by(decision: Decision) -> tuple[Named, ...]:
    """The other Workloads a decision's reason names: its waiter, if any."""
    if decision.beneficiary is None:
        return ()
    return (Named(decision.beneficiary, decision.beneficiary_queue),)


def reason_told(decision: Decision, *, may_read: MayRead) -> str:
    return told(decision.reason, named_by(decision), may_read=may_read)


def record_names(beneficiary: str | None, cluster_queue: str | None) -> tuple[Named, ...]:
    """The waiter a durable record names (its subject's "namespace/name"), if any."""
    ref = WorkloadRef.parse(beneficiary) if beneficiary else None
    return (Named(ref, cluster_queue),) if ref is not None else ()


class ServedFor(str):
    """The judgement of the waiter a freed workload is for, as `explain` tells it: the
    waiter, its outcome and why; `others`: the other heads `reason` names. As a string, the
    text with every name (what the logs and a reader of every namespace read); `told`
    renders it for one caller."""

    waiter: Named
    outcome: str
    reason: str
    others: tuple[Named, ...]

    def __new__(
        cls, waiter: Named, outcome: str, reason: str, others: tuple[Named, ...] = ()
    ) -> ServedFor:
        text = f"{waiter.ref} ({waiter.cluster_queue}) {outcome}: {reason}"
        made = super().__new__(cls, text)
        made.waiter, made.outcome, made.reason, made.others = waiter, outcome, reason, others
        return made

    def told(self, *, may_read: MayRead) -> str:
        waiter = self.waiter
        if not may_read(waiter.ref.namespace):
            who = waiter.words(shown=False)
        else:
            who = f"{waiter.ref} ({waiter.cluster_queue})"
        why = told(self.reason, (waiter, *self.others), may_read=may_read)
        return f"{who} {self.outcome}: {why}"
