"""What the kubelet reports of a simulated pod's container while it does not run: the
`waiting` state the real adapter reads (`adapters/kubernetes/pod_starts.py`), so the
not-running class (`domain/usage/not_running.py`) judges the demo from the same facts.

The kubelet's own behaviour, as the simulation follows it:
- Until its container starts, a scheduled pod is Pending and its container waits with the
  reason `ContainerCreating` (kubernetes pkg/kubelet/kubelet_pods.go,
  convertToAPIContainerStatuses: the default reason of a container not yet created; the
  image pull happens in that time).
- An image the registry does not have fails its pull: `ErrImagePull` with the runtime's
  error as the message, and the image's back-off starts (kubernetes
  pkg/kubelet/images/image_manager.go, EnsureImageExists: `m.backOff.Next` after a failed
  pull). While the back-off runs, each sync answers `ImagePullBackOff`, message
  `Back-off pulling image "<image>"`, without pulling (same function,
  `IsInBackOffSinceUpdate`). The back-off starts at 10 s and doubles up to 300 s
  (pkg/kubelet/kubelet.go: `backOffPeriod`, `MaxContainerBackOff`); each retry fails at
  once and starts the next one, so after the first back-off the pod says
  `ImagePullBackOff` for good, phase Pending, and never runs.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from autoscaler.domain.usage.pod_states import ContainerWait

CONTAINER_CREATING = "ContainerCreating"
ERR_IMAGE_PULL = "ErrImagePull"
IMAGE_PULL_BACK_OFF = "ImagePullBackOff"
FIRST_BACK_OFF = timedelta(seconds=10)  # kubelet.go backOffPeriod


def container_name(group: str) -> str:
    """KubeRay's container name for a head or worker pod."""
    return "ray-head" if group == "head" else "ray-worker"


def waiting(
    *, group: str, image: str, pullable: bool, created_at: datetime, now: datetime
) -> tuple[ContainerWait, ...]:
    """The pod's container in state `waiting` at `now`, as the kubelet reports it, for a pod
    whose container has not started: ContainerCreating while a pullable image is pulled,
    ErrImagePull then ImagePullBackOff when the image cannot be pulled."""
    container = container_name(group)
    if pullable:
        return (ContainerWait(container, image, CONTAINER_CREATING),)
    if now - created_at < FIRST_BACK_OFF:
        return (ContainerWait(container, image, ERR_IMAGE_PULL, _not_found(image)),)
    back_off = f'Back-off pulling image "{image}"'
    return (ContainerWait(container, image, IMAGE_PULL_BACK_OFF, back_off),)


def _not_found(image: str) -> str:
    """containerd's error for an image the registry does not have, as the kubelet passes it on."""
    return (
        f'rpc error: code = NotFound desc = failed to pull and unpack image "{image}": '
        f'failed to resolve reference "{image}": {image}: not found'
    )
