"""Who manages a workload, and so how the service frees its GPUs (ISSUE 17): one row per
manager in `MANAGERS`, the table every layer reads instead of branching on the manager.

Kueue's Workloads are deactivated (`spec.active: false`) and Kueue evicts them. A RayCluster
no Kueue Workload admits, under NVIDIA KAI Scheduler or under no queueing system at all, is
suspended (`spec.suspend: true`) and KubeRay deletes its pods. Which applies is decided per
RayCluster by `domain/policy/claims.py`; docs/ACTUATORS.md says what each writes and how to undo it.

A new manager is a member of `Manager` and its row here; its actuator (an adapter), its
simulated twin (`sim/actuators.py`) and its wiring (`compose/managers.py`) complete it. Its
settings switch, `actuators.<manager>.enabled`, is made from the row (`settings/actuators.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from autoscaler.domain.states import State


class Manager(StrEnum):
    """What admits a workload, and so which actuator writes on it."""

    KUEUE = "kueue"  # a Kueue Workload: its spec.active
    KAI = "kai"  # a RayCluster labelled with a KAI Scheduler queue: its spec.suspend
    KUBERAY = "kuberay"  # a RayCluster no queueing system admits: its spec.suspend


@dataclass(frozen=True)
class Management:
    """How the service stops the workloads one manager admits and brings them back, in the
    words every surface uses, and the settings switch that lets it."""

    stop_means: str  # what a stop writes, and what follows
    bring_back: str  # how a stopped one comes back
    stopped: str  # the stop's word: "deactivated", "suspended"
    inactive_reason: str  # the reason of a stopped row
    pending_reason: str  # the reason of a row with nothing running yet
    named: str | None  # who manages it, said beside a row's name; None: the default, Kueue
    stop_field: str  # the field a stop sets, as the CLI shows it beside the manager
    row_is_owner: bool  # the row IS the owner object (a RayCluster): no owner to write besides
    api_groups: tuple[str, ...]  # the API groups only its actuator calls (none granted without it)
    api_words: str  # how the REST API's `manager` field explains it
    enabled_by_default: bool  # `actuators.<manager>.enabled`
    switch_words: str  # that switch's description
    section_words: str | None = None  # `actuators.<manager>`'s description
    # Whose a RayCluster no Workload admits is (`claims.py`): a manager claims those carrying
    # its label (`{value}` in `claim_words` is the label's value), or, for the one that
    # `claims_the_rest`, every other; None and False: it claims no RayCluster.
    claim_label: str | None = None
    claims_the_rest: bool = False
    claim_words: str = ""


KAI_QUEUE_LABEL = "kai.scheduler/queue"
DEFAULT_MANAGER = Manager.KUEUE  # a row, or an answer, that names no manager is Kueue's

_SUSPEND_SWITCH = (
    "Suspend idle RayClusters of this kind (`spec.suspend: true`, KubeRay 1.1+); reactivating "
    "restores what was there. Opt-in; needs `cluster.ownerKinds.RayCluster` enabled (the row "
    "is the RayCluster). No new write right: it uses the `patch` on RayClusters that owner "
    "kind already grants (KAI's adds only `list` on its Queues and PodGroups, who waits)."
)
_SUSPEND_API = (
    "a RayCluster no Kueue Workload admits, under KAI Scheduler or none: its `spec.suspend`; "
    "`name` and `owner` are then the RayCluster"
)
_SUSPEND_MEANS = "the RayCluster's `spec.suspend: true`; KubeRay (1.1+) deletes its pods"
_SUSPEND_BACK = (
    "reactivate: `spec.suspend` back as it was (its `suspend-was` annotation); KubeRay "
    "recreates its pods"
)

MANAGERS: Mapping[Manager, Management] = {
    Manager.KUEUE: Management(
        stop_means="the Workload's `spec.active: false`; Kueue evicts it and keeps it queued",
        bring_back="reactivate: `spec.active: true`; Kueue admits it again when quota is free",
        stopped="deactivated",
        inactive_reason="spec.active is false",
        pending_reason="not admitted by Kueue",
        named=None,
        stop_field="spec.active",
        row_is_owner=False,
        api_groups=("kueue.x-k8s.io", "visibility.kueue.x-k8s.io"),
        api_words="its Workload's `spec.active`",
        enabled_by_default=True,
        switch_words="Deactivate idle Kueue Workloads (merge patch `spec.active: false`). Off "
        "only on a cluster without Kueue (KAI Scheduler alone, say): the service then reads no "
        "Workload, nor any kueue.x-k8s.io object, at all.",
        section_words="Kueue Workloads.",
    ),
    Manager.KAI: Management(
        stop_means=_SUSPEND_MEANS,
        bring_back=_SUSPEND_BACK,
        stopped="suspended",
        inactive_reason="spec.suspend is true",
        pending_reason="no pod running yet (KAI Scheduler has not placed its gang)",
        named="KAI Scheduler",
        stop_field="spec.suspend",
        row_is_owner=True,
        api_groups=("scheduling.run.ai",),
        api_words=_SUSPEND_API,
        enabled_by_default=False,
        switch_words=_SUSPEND_SWITCH,
        section_words="RayClusters labelled `kai.scheduler/queue` (NVIDIA KAI Scheduler) that "
        "no Kueue Workload admits. Their pending PodGroups tell who waits.",
        claim_label=KAI_QUEUE_LABEL,
        claim_words="KAI Scheduler's: queue {value}",
    ),
    Manager.KUBERAY: Management(
        stop_means=_SUSPEND_MEANS,
        bring_back=_SUSPEND_BACK,
        stopped="suspended",
        inactive_reason="spec.suspend is true",
        pending_reason="no pod running yet",
        named="plain KubeRay",
        stop_field="spec.suspend",
        row_is_owner=True,
        api_groups=(),
        api_words=_SUSPEND_API,
        enabled_by_default=False,
        switch_words=_SUSPEND_SWITCH,
        section_words="Plain RayClusters: no Kueue Workload, no KAI queue, no controlling owner.",
        claims_the_rest=True,
        claim_words="plain KubeRay: no Kueue Workload, no KAI queue",
    ),
}
# The managers whose row IS the RayCluster, suspended by its spec.suspend.
SUSPENDED_BY_US = frozenset(manager for manager, row in MANAGERS.items() if row.row_is_owner)

KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_PREFIX = "kueue.x-k8s.io/"  # any label or annotation of Kueue's marks an object Kueue's
KAI_PRIORITY_LABEL = "priorityClassName"  # KAI reads the priority class from this label
# KAI's GPU sharing: a pod asks for a share of a device by annotation, with no GPU request.
KAI_FRACTION_ANNOTATIONS = ("gpu-fraction", "gpu-memory")
# How KAI's queues are named in `domain/queues/facts.py` terms, by its queues' reader and by the
# rows of KAI-managed RayClusters alike: both must agree for the when-contended planner to match
# an idle row with the waiter it would let in.
KAI_FLAVOR = "kai"  # KAI has no flavors: one pseudo-flavor holds every KAI queue's GPUs
KAI_GPU = "nvidia.com/gpu"  # whole GPUs; KAI's GPU sharing (fractions) is not modelled
# Every KAI queue in one cohort: KAI reclaims across all its queues. The "/" keeps it apart
# from any Kueue cohort, whose names are DNS labels.
KAI_COHORT = "kai/all-queues"


def kai_cluster_queue(queue: str) -> str:
    """The ClusterQueue-like name of a KAI queue: "kai/<queue>" (never a Kueue name, which
    cannot hold a "/")."""
    return f"kai/{queue}"


def inactive_reason(manager: Manager) -> str:
    return MANAGERS[manager].inactive_reason


def pending_reason(manager: Manager) -> str:
    return MANAGERS[manager].pending_reason


def manager_words() -> str:
    """Every manager as the REST API explains them, managers with the same words together:
    "`kueue` (its Workload's `spec.active`), `kai` or `kuberay` (a RayCluster ...)"."""
    groups: list[tuple[list[str], str]] = []
    for manager, row in MANAGERS.items():
        if groups and groups[-1][1] == row.api_words:
            groups[-1][0].append(f"`{manager}`")
        else:
            groups.append(([f"`{manager}`"], row.api_words))
    return ", ".join(f"{' or '.join(names)} ({words})" for names, words in groups)


@dataclass(frozen=True)
class HandsOff:
    """Why the service must never act on a workload, whatever its usage: the state every
    surface reports (`unsupported`, `protected`) and the reason, read by the adapter."""

    state: State
    reason: str
