"""What Kubernetes itself says about whether a workload's GPU pods run: the facts the
`not-running` class (`not_running.py`) is decided from, read from the objects the cycle
already watches (pods, Workloads, the node autoscaler's Events), never from metrics.

The words are upstream's own:
- a container's waiting reasons are the kubelet's: `ImagePullBackOff` (and `ErrImagePull`,
  a pull that just failed, not stuck before its back-off; kubernetes
  pkg/kubelet/images/types.go), `CrashLoopBackOff` (pkg/kubelet/container/sync_result.go),
  `CreateContainerConfigError` (pkg/kubelet/kuberuntime/kuberuntime_container.go);
- `Unschedulable` is the reason the scheduler writes on a pod's `PodScheduled=False`
  condition (staging/src/k8s.io/api/core/v1/types.go, `PodReasonUnschedulable`);
- `TriggeredScaleUp` is the Event the cluster autoscaler records on a pod it scales up for
  (kubernetes/autoscaler cluster-autoscaler/core/scaleup/orchestrator/orchestrator.go);
- `PodsReady` and `Requeued=True/Reactivated` are Kueue's Workload conditions
  (kueue apis/kueue/v1beta2/workload_types.go): PodsReady is written only where Kueue's
  `waitForPodsReady` is on (pkg/controller/jobframework/reconciler.go), so its presence on a
  Workload says Kueue's own timer is in charge of that Workload.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from autoscaler.domain.kueue_config import KueueConfiguration

# The image's back-off: pulls failed and the kubelet waits before the next. `ErrImagePull`
# is a pull that just failed, the first attempt included (a registry hiccup, a node just
# drained): never stuck by itself; the kubelet answers ImagePullBackOff from the next sync on
# (pkg/kubelet/images/image_manager.go, EnsureImageExists).
IMAGE_PULL = "ImagePullBackOff"
CRASH_LOOP = "CrashLoopBackOff"
CONFIG_ERROR = "CreateContainerConfigError"
UNSCHEDULABLE = "Unschedulable"
# The waiting reasons that say a container will not start by itself.
STUCK_REASONS = frozenset({IMAGE_PULL, CRASH_LOOP, CONFIG_ERROR})


@dataclass(frozen=True)
class ContainerWait:
    """A container (or init container) of a pod in state `waiting`, as the kubelet reports."""

    container: str
    image: str
    reason: str  # e.g. ContainerCreating, ImagePullBackOff, CrashLoopBackOff
    message: str = ""
    # It requests GPUs (or no container of its pod names GPUs, so the pod counts as a whole):
    # only such a container waiting makes a pod in phase Running not run its GPU work; a
    # log shipper crash-looping beside a busy GPU container does not.
    holds_gpus: bool = True

    @property
    def stuck(self) -> bool:
        return self.reason in STUCK_REASONS


@dataclass(frozen=True)
class PodsReady:
    """Kueue's PodsReady condition on a Workload."""

    status: str  # "True", "False" or "Unknown"
    reason: str  # e.g. WaitForStart, WaitForRecovery, Started
    since: datetime | None  # its lastTransitionTime


@dataclass(frozen=True)
class AdmissionFacts:
    """What a Kueue Workload's status says about its admission, beside `admitted_at`."""

    gpus: int  # GPUs its admission charges its ClusterQueue (the pod sets' resourceUsage)
    pods_read: bool  # its owner kind's pods are read (a pod selector is configured)
    scale_ups_read: bool  # the node autoscaler's TriggeredScaleUp Events could be read
    reactivated_at: datetime | None = None  # Requeued=True/Reactivated: lastTransitionTime
    pods_ready: PodsReady | None = None  # None: Kueue's waitForPodsReady is off for it
    pending_checks: tuple[str, ...] = ()  # admission checks in state Pending, by name
    # Kueue's Configuration as this cycle read it (one read per cycle, never per Workload):
    # its waitForPodsReady timeout dates Kueue's own deadline. None: not read at all.
    kueue: KueueConfiguration | None = None
    # How its pods were found ("pod selector ray.io/cluster=rc"), and why the chain from the
    # Workload to its pods may not have been followed (its owner object not found, a pod
    # skipped as malformed): then "no GPU pod" is unknown, never "none created".
    pods_found_by: str = ""
    pods_unsure: str | None = None

    @property
    def kueue_in_charge(self) -> bool:
        """Kueue's waitForPodsReady times this Workload out itself: its PodsReady is there,
        and not True."""
        return self.pods_ready is not None and self.pods_ready.status != "True"
