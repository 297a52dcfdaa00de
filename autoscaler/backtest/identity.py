"""Which workload a GPU series belongs to: its pod's owner from kube-state-metrics' history, or
else, without those series, KubeRay's pod names.

Where kube-state-metrics is scraped, a pod's owner is found as the live service finds it, by
ownership or by its kind's labels (`owners.py`); a pod whose owner cannot be told is not a
workload we judge, and the report says why for each. Where it is not (no `kube_pod_owner`
series at all), the names tell RayCluster pods only, as before: KubeRay names pods
`<raycluster>-head-xxxxx` and `<raycluster>-<group>-worker-xxxxx`. A head names its RayCluster
outright; a worker is given to the longest RayCluster of its namespace whose name, plus "-",
starts the pod's name (heads seen so far). Without a head (heads often hold no GPU, so
dcgm-exporter never reports them) the worker's `<raycluster>-<group>` is the unit, since both
parts may contain dashes. A configured label (such as a relabelled `ray.io/cluster`) wins over
both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from autoscaler.backtest.owners import NOT_SCRAPED, NotOurs, Owner, OwnerHistory
from autoscaler.domain.models import OwnerRef
from autoscaler.domain.policy.owners import KNOWN_OWNERS

_SUFFIX = r"-[a-z0-9]{5}"
_HEAD = re.compile(rf"^(?P<name>.+)-head{_SUFFIX}$")
_WORKER = re.compile(rf"^(?P<prefix>.+)-worker{_SUFFIX}$")
RAYCLUSTER = KNOWN_OWNERS["RayCluster"]


@dataclass(frozen=True, order=True)
class WorkloadKey:
    namespace: str
    name: str  # the owner's
    exact: bool = True  # False: `<raycluster>-<group>`, no head seen to split it
    kind: str = RAYCLUSTER.kind
    api_version: str = RAYCLUSTER.api_version

    @property
    def owner(self) -> OwnerRef:
        return OwnerRef(self.api_version, self.kind, self.name)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class Resolver:
    """Remembers the RayClusters its heads reveal; a pod keeps the identity it first got.

    `owners`: kube-state-metrics' owner series as fed so far (None: not read, names only).
    `unknown` holds, per pod not judged, why its owner is unknown."""

    def __init__(self, *, label: str | None = None, owners: OwnerHistory | None = None) -> None:
        self._label = label
        self._owners = owners
        self._heads: dict[str, set[str]] = {}
        self._known: dict[tuple[str, str], WorkloadKey | None] = {}
        self.unknown: dict[tuple[str, str], str] = {}
        self.named: set[tuple[str, str]] = set()  # pods named from KubeRay's names alone

    def learn(self, namespace: str, pod: str) -> None:
        """Note a head pod before resolving the pods seen with it."""
        head = _HEAD.match(pod)
        if head is not None:
            self._heads.setdefault(namespace, set()).add(head["name"])

    def resolve(self, namespace: str, pod: str, labels: dict[str, str]) -> WorkloadKey | None:
        """The pod's workload; None when it is not one we judge. An unknown owner is asked
        again at the next chunk (its series may come later), a found one is kept."""
        pod_key = (namespace, pod)
        if pod_key not in self._known:
            found, why = self._identify(namespace, pod, labels)
            if why is None:
                self._known[pod_key] = found
                self.unknown.pop(pod_key, None)
            else:
                self.unknown[pod_key] = why
            return found
        return self._known[pod_key]

    def _identify(
        self, namespace: str, pod: str, labels: dict[str, str]
    ) -> tuple[WorkloadKey | None, str | None]:
        if self._label and labels.get(self._label):
            return WorkloadKey(namespace, labels[self._label]), None
        if self._owners is None:
            return self._by_name(namespace, pod), None
        found = self._owners.owner_of(namespace, pod)
        if isinstance(found, Owner):
            row = found.kind
            return WorkloadKey(namespace, found.name, True, row.kind, row.api_version), None
        if isinstance(found, NotOurs):
            return None, None
        if found.why == NOT_SCRAPED:  # no kube-state-metrics: RayCluster pods by their names
            named = self._by_name(namespace, pod)
            if named is not None:
                self.named.add((namespace, pod))
                return named, None
        return None, f"owner unknown: {found.why}"

    def _by_name(self, namespace: str, pod: str) -> WorkloadKey | None:
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
