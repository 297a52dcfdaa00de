"""What the simulated cluster's `ClusterReader` says of one Workload: its uid, the facts
a `when-contended` rule needs to free it for a waiter (its ClusterQueue's cohort, its
priority, what its admission charges the queue per (flavor, resource)), and what its status
says of its admission for the not-running class (`admission_facts`)."""

from __future__ import annotations

import hashlib

from autoscaler.domain.models import WorkloadRef
from autoscaler.domain.usage.pod_states import AdmissionFacts
from autoscaler.sim.kueue_model import KueueState, Phase, Workload
from autoscaler.sim.pods import GPU

FlavorUsage = dict[tuple[str, str], int]


def sim_uid(kind: str, ref: WorkloadRef) -> str:
    """A stable, uuid-shaped uid for an object of `kind` named like the Workload."""
    digest = hashlib.sha256(f"{kind}/{ref}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def workload_uid(ref: WorkloadRef) -> str:
    return sim_uid("workload", ref)


def cohort_of(kueue: KueueState, workload: Workload) -> str | None:
    """The cohort of the ClusterQueue the workload is (or would be) admitted by."""
    name = kueue.cluster_queue_name(workload)
    queue = None if name is None else kueue.cluster_queues.get(name)
    return None if queue is None else queue.cohort


def admitted_usage(kueue: KueueState, workload: Workload) -> FlavorUsage:
    """What the admission charges its ClusterQueue, keyed by the queue's one flavor; empty
    when the workload holds no admission."""
    admission = workload.admission
    if workload.phase is not Phase.ADMITTED or admission is None:
        return {}
    queue = kueue.cluster_queues.get(admission.cluster_queue)
    if queue is None:
        return {}
    return {(queue.flavor, resource): amount for resource, amount in admission.usage.items()}


def admission_facts(kueue: KueueState, workload: Workload) -> AdmissionFacts:
    """What the real adapter reads from a Workload's status (`adapters/kubernetes/
    pod_starts.admission_facts`), as the simulated Kueue writes it: the GPUs its admission
    charges; its latest reactivation (Kueue's Requeued=True/Reactivated); no PodsReady (the
    simulated Kueue runs without waitForPodsReady) and no admission checks. KubeRay's pods
    are read, and the simulated cluster has no node autoscaler: no scale-up Event is due."""
    charged = admitted_usage(kueue, workload)
    return AdmissionFacts(
        gpus=sum(n for (_, resource), n in charged.items() if resource == GPU),
        pods_read=True,
        scale_ups_read=True,
        reactivated_at=workload.requeued_at,
    )
