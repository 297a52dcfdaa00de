"""How every surface names a workload and says what a stop means to its people (issue 30).

A person knows their notebook, training job or RayCluster, not the Kueue Workload made for it:
every surface (REST, the CLI, Events, notifications, the keep-it page, the savings report)
names the owner as `<Kind> <namespace>/<name>` ("RayCluster team-a/alice-rc"), and keeps the
Workload's name beside it where an admin needs it.

What a stop means has two homes, one per question, and this module joins them:
- the owner kind's row (`owners.OWNER_KINDS`) says what the stop means to the people who own
  the workload and how it comes back, and whether it lasts (`stop_lasts`): under Kueue's pod
  integration a stop is a requeue that hands the quota to the waiter;
- the manager's row (`management.MANAGERS`) says how the stop is done (which field it sets).
For a Workload Kueue admits, the kind's words are said (Kueue's stop is the same for every
kind; what follows differs), and the manager's where the kind is not in the table. A manager
whose row is the owner itself (KAI Scheduler, plain KubeRay: the service suspends the
RayCluster) has its own words: they are the kind's, for the one kind it stops.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from autoscaler.domain.models import OwnerRef, WorkloadRef
from autoscaler.domain.policy.management import MANAGERS, Manager
from autoscaler.domain.policy.owners import KNOWN_OWNERS, OwnerKind, known_owner

# What a stop that is a requeue means, said on every surface (ISSUE-NOTES "Every kind, what a
# stop means"): the deleted pods come back as a new Workload that queues behind the waiters.
REQUEUE_WORDS = "yields its GPUs to the queue; it comes back when quota is free"
# The tables' texts may open with the act's label, "suspended: ..." or "reactivate its
# Workload: ...": one to three plain words before the first ": " (never a field in backticks,
# never a clause such as "its pods are deleted and gated: ...").
_ACT_LABEL = re.compile(r"^(?:[A-Za-z]+ ){0,2}[A-Za-z]+: ")


def owner_name(namespace: str, owner: OwnerRef | None) -> str | None:
    """The owner as people know it: "RayCluster team-a/alice-rc"; None without an owner."""
    return None if owner is None else f"{owner.kind} {namespace}/{owner.name}"


def named(ref: WorkloadRef, owner: OwnerRef | None) -> str:
    """The owner as people know it, else the Workload's own "namespace/name"."""
    return owner_name(ref.namespace, owner) or str(ref)


def with_workload(ref: WorkloadRef, owner: OwnerRef | None) -> str:
    """For an admin: "RayCluster team-a/alice-rc (Workload raycluster-alice-rc-d84f2)"; the
    Workload alone when it has no owner, or is its own (a RayCluster read as its row)."""
    said = owner_name(ref.namespace, owner)
    if said is None:
        return str(ref)
    return said if owner is not None and owner.name == ref.name else f"{said} (Workload {ref.name})"


def subject_name(namespace: str, owner: str | None) -> str | None:
    """An audit record's owner ("Kind/name", `audit/subjects.py`) as people know it."""
    if not owner:
        return None
    kind, _, name = owner.partition("/")
    return f"{kind} {namespace}/{name}" if name else owner


@dataclass(frozen=True)
class StopWords:
    """What a stop means for one workload, in the words every surface says."""

    means: str  # what the stop does to it
    bring_back: str  # how it comes back
    lasts: bool  # False: a requeue (its GPUs go to the queue; it comes back by itself)

    @property
    def said(self) -> str:
        """One clause: the requeue's words first where the stop is one."""
        return self.means if self.lasts else f"{REQUEUE_WORDS} ({self.means})"

    @property
    def if_stopped(self) -> str:
        """A sentence without its full stop, for a notice before the stop: "If stopped:
        suspended: ..."; "If stopped, it yields its GPUs to the queue; ..." for a requeue."""
        return f"If stopped: {self.means}" if self.lasts else f"If stopped, it {self.said}"

    @property
    def done(self) -> str:
        """What the stop does, as a clause a sentence can open with, its label dropped:
        "KubeRay deletes its pods; Kueue keeps it queued for later"; "it yields its GPUs to
        the queue; ..." for a requeue."""
        return _ACT_LABEL.sub("", self.means) if self.lasts else f"it {self.said}"

    @property
    def comes_back(self) -> str:
        """What follows the act that brings it back, its label dropped: "Kueue admits it again
        when quota is free and KubeRay recreates its pods"."""
        return _ACT_LABEL.sub("", self.bring_back)


def stop_words(
    owner: OwnerRef | None,
    *,
    manager: Manager,
    kinds: Mapping[str, OwnerKind] = KNOWN_OWNERS,
) -> StopWords:
    """The kind's words for a Workload Kueue admits, the manager's otherwise (see above).
    `kinds`: the owner kinds' table (tests pass rows of their own)."""
    management = MANAGERS[manager]
    row = known_owner(owner, kinds=kinds) if not management.row_is_owner else None
    if row is None:
        return StopWords(means=management.stop_means, bring_back=management.bring_back, lasts=True)
    return StopWords(means=row.stop_means, bring_back=row.bring_back, lasts=row.stop_lasts)


def stop_lasts(owner: str | None, *, kinds: Mapping[str, OwnerKind] = KNOWN_OWNERS) -> bool:
    """Whether a stop of a workload of this owner ("Kind/name", or a kind) lasts; a kind not
    in the table counts as lasting (a requeue is said only where the table says so)."""
    kind = (owner or "").partition("/")[0]
    row = kinds.get(kind)
    return row is None or row.stop_lasts
