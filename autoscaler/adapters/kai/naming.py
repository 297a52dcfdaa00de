"""How KAI Scheduler's queues are named in `domain/queues.py` terms, for the queues' reader
and for the rows of KAI-managed RayClusters alike: both must agree for the when-contended
planner to match an idle row with the waiter it would let in."""

from __future__ import annotations

KAI_GROUP = "scheduling.run.ai"
KAI_FLAVOR = "kai"  # KAI has no flavors: one pseudo-flavor holds every KAI queue's GPUs
KAI_GPU = "nvidia.com/gpu"  # whole GPUs; KAI's GPU sharing (fractions) is not modelled
# Every KAI queue in one cohort: KAI reclaims across all its queues. The "/" keeps it apart
# from any Kueue cohort, whose names are DNS labels.
KAI_COHORT = "kai/all-queues"
POD_GROUP_ANNOTATION = "pod-group-name"  # KAI's PodGrouper names each pod's PodGroup here


def kai_cluster_queue(queue: str) -> str:
    """The ClusterQueue-like name of a KAI queue: "kai/<queue>" (never a Kueue name, which
    cannot hold a "/")."""
    return f"kai/{queue}"
