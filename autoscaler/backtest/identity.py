"""Which workload a GPU series belongs to, from its labels alone.

KubeRay names pods `<raycluster>-head-xxxxx` and `<raycluster>-<group>-worker-xxxxx`. A head
names its RayCluster outright; a worker is given to the longest RayCluster of its namespace
whose name, plus "-", starts the pod's name (heads seen so far). Without a head (heads often
hold no GPU, so dcgm-exporter never reports them) the worker's `<raycluster>-<group>` is the
unit, since both parts may contain dashes. A configured label (such as a relabelled
`ray.io/cluster`) wins over names. Pods that are not Ray pods are not Workloads we act on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SUFFIX = r"-[a-z0-9]{5}"
_HEAD = re.compile(rf"^(?P<name>.+)-head{_SUFFIX}$")
_WORKER = re.compile(rf"^(?P<prefix>.+)-worker{_SUFFIX}$")


@dataclass(frozen=True, order=True)
class WorkloadKey:
    namespace: str
    raycluster: str
    exact: bool = True  # False: `<raycluster>-<group>`, no head seen to split it

    def __str__(self) -> str:
        return f"{self.namespace}/{self.raycluster}"


class Resolver:
    """Remembers the RayClusters its heads reveal; a pod keeps the identity it first got."""

    def __init__(self, *, label: str | None = None) -> None:
        self._label = label
        self._heads: dict[str, set[str]] = {}
        self._known: dict[tuple[str, str], WorkloadKey | None] = {}

    def learn(self, namespace: str, pod: str) -> None:
        """Note a head pod before resolving the pods seen with it."""
        head = _HEAD.match(pod)
        if head is not None:
            self._heads.setdefault(namespace, set()).add(head["name"])

    def resolve(self, namespace: str, pod: str, labels: dict[str, str]) -> WorkloadKey | None:
        if (namespace, pod) not in self._known:
            self._known[(namespace, pod)] = self._identify(namespace, pod, labels)
        return self._known[(namespace, pod)]

    def _identify(self, namespace: str, pod: str, labels: dict[str, str]) -> WorkloadKey | None:
        if self._label and labels.get(self._label):
            return WorkloadKey(namespace, labels[self._label])
        head = _HEAD.match(pod)
        if head is not None:
            return WorkloadKey(namespace, head["name"])
        worker = _WORKER.match(pod)
        if worker is None:
            return None
        prefix = worker["prefix"]
        owners = [n for n in self._heads.get(namespace, ()) if prefix.startswith(n + "-")]
        if owners:
            return WorkloadKey(namespace, max(owners, key=len))
        return WorkloadKey(namespace, prefix, exact=False)
