"""The demo's in-process cluster: a pure model of Kueue admission.

`kueue_model` holds the objects and the user transitions, `quota` the cohort arithmetic,
`admission` the admission step (one Kueue scheduling pass, preemption included) and its
explanations, `preemption` Kueue's choice of victims, `fair_sharing` its dominant resource
share; `KueueFeatures` are the emulated Kueue's gates (PriorityBoost, fair sharing). The
Kubernetes shapes of the model (objects read, statuses written) serve only the test API
server's Kueue emulation, and live beside it in tests/support (`kueue_objects`,
`kueue_status`, `quantity`).
"""

from autoscaler.sim.admission import (
    QueueUsage,
    admit_pending,
    ledger,
    pending_queue,
    pending_reason,
    queue_order,
    queue_usage,
)
from autoscaler.sim.kueue_model import (
    DEACTIVATED_MESSAGE,
    Admission,
    Event,
    EventKind,
    KueueFeatures,
    KueueState,
    LocalQueue,
    Phase,
    PodSet,
    Step,
    Workload,
)
from autoscaler.sim.quota import (
    PODS,
    ClusterQueue,
    Ledger,
    Preemption,
    PreemptionPolicy,
    QueueingStrategy,
    ResourceQuota,
    Shortfall,
)

__all__ = [
    "DEACTIVATED_MESSAGE",
    "PODS",
    "Admission",
    "ClusterQueue",
    "Event",
    "EventKind",
    "KueueFeatures",
    "KueueState",
    "Ledger",
    "LocalQueue",
    "Phase",
    "PodSet",
    "Preemption",
    "PreemptionPolicy",
    "QueueUsage",
    "QueueingStrategy",
    "ResourceQuota",
    "Shortfall",
    "Step",
    "Workload",
    "admit_pending",
    "ledger",
    "pending_queue",
    "pending_reason",
    "queue_order",
    "queue_usage",
]
