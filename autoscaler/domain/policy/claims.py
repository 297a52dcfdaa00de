"""Whose a RayCluster is: the one question asked before the service may suspend it.

An object is Kueue's when a Kueue Workload owns its admission, whatever its labels: Kueue
also admits unlabelled RayClusters (`manageJobsWithoutQueueName`, a LocalQueue's defaulting),
and then only the Workload may be deactivated, never the RayCluster suspended under it. The
checks, first that applies wins (each answer carries the reason the reader logs):

1. a Workload references it, or the object that controls it (its owner reference): Kueue's;
2. it carries a `kueue.x-k8s.io/` label or annotation (no Workload yet, or Kueue's webhook
   touched it): Kueue's;
3. another object controls it (a RayJob, a CodeFlare AppWrapper): that owner's, never
   suspended on its own (a RayJob is stopped through its own Workload, under Kueue);
4. it carries a manager's claim label (`MANAGERS`, in the table's order: KAI Scheduler's queue
   label): that manager's, when its actuator is enabled;
5. else the manager that claims the rest (a plain KubeRay cluster), when that one is enabled.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from autoscaler.domain.models import OwnerRef
from autoscaler.domain.policy.management import KUEUE_PREFIX, MANAGERS, Manager


@dataclass(frozen=True)
class RayClusterFacts:
    """What the claim is read from: the RayCluster's metadata and the Workloads that name it."""

    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    controller: OwnerRef | None  # its controlling owner reference, if any
    admitting_workload: str | None  # the name of a Workload that references it, if any


@dataclass(frozen=True)
class Claim:
    """Who manages the RayCluster. `manager` is who would act on it directly: None when it is
    not ours to suspend (Kueue's, another controller's, an actuator not enabled)."""

    manager: Manager | None
    reason: str
    owned_elsewhere: bool = False  # another object controls it: report it, never suspend it


def claim(facts: RayClusterFacts, *, enabled: Collection[Manager]) -> Claim:
    if facts.admitting_workload is not None:
        return Claim(None, f"Kueue's: Workload {facts.admitting_workload} admits it")
    mark = _kueue_mark(facts)
    if mark is not None:
        return Claim(None, f"Kueue's: it carries {mark} (no Workload yet)")
    owner = facts.controller
    if owner is not None:
        why = f"controlled by {owner.kind} {owner.name}: never suspended on its own"
        return Claim(None, why, owned_elsewhere=True)
    for manager, row in MANAGERS.items():
        value = facts.labels.get(row.claim_label) if row.claim_label else None
        if value is not None:
            return _if_enabled(manager, row.claim_words.format(value=value), enabled)
    rest = next(manager for manager, row in MANAGERS.items() if row.claims_the_rest)
    return _if_enabled(rest, MANAGERS[rest].claim_words, enabled)


def _kueue_mark(facts: RayClusterFacts) -> str | None:
    keys = [*facts.labels, *facts.annotations]
    return next((key for key in sorted(keys) if key.startswith(KUEUE_PREFIX)), None)


def _if_enabled(manager: Manager, reason: str, enabled: Collection[Manager]) -> Claim:
    if manager in enabled:
        return Claim(manager, reason)
    return Claim(None, f"{reason}; the {manager} actuator is not enabled")
