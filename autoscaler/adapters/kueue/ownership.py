"""A Workload's pods, found the way its owner kind's row says (domain/policy/owners.py,
`PodsFound`): by a label selector, by ownership (pods whose controller owners lead to the
owner, through intermediate objects read only for their ownerReferences), or by Kueue's pod
integration (the pods its group name or ownerReferences name). Everything here works on what
the cycle already read, once for all Workloads: no request per Workload.

A chain that cannot be followed (an intermediate object missing, or its kind unreadable)
leaves the Workloads that may own such a pod unsure, with the reason: never idle.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from autoscaler.adapters.kubernetes.pod_selectors import PodSelector
from autoscaler.adapters.kueue.context import FoundPods, PodChain, pod_chain
from autoscaler.adapters.kueue.links import Links
from autoscaler.core.errors import ConfigError
from autoscaler.domain.models import OwnerRef, PodInfo, WorkloadInfo
from autoscaler.domain.policy.owners import (
    INTERMEDIATES,
    KNOWN_OWNERS,
    QUEUED_ABOVE_PODS,
    PodsFound,
    known_owner,
)
from autoscaler.settings.tree import ClusterSettings

_MAX_DEPTH = 6  # TrainJob → JobSet → Job → Pod is the longest chain upstream builds
# The label Kueue's pod webhook puts on every pod its pod integration queues, the pod that
# owns its own Workload among them (kueue pkg/constants/constants.go ManagedByKueueLabelKey;
# pkg/controller/jobs/pod/pod_webhook.go Default).
KUEUE_MANAGED_KEY = "kueue.x-k8s.io/managed"


@dataclass(frozen=True)
class _Broken:
    kind: str  # the intermediate kind where the chain stopped
    why: str


def same_uid(one: str, other: str) -> bool:
    """The one rule for "the same object" by UID, wherever an owner or a link is matched: a
    UID mismatch is another object (a namesake re-created after the first was deleted); an
    empty UID on either side cannot tell, so the names decide."""
    return not one or not other or one == other


def _same(ref: OwnerRef, owner: OwnerRef) -> bool:
    group = ref.api_version.rpartition("/")[0]
    return (ref.kind, ref.name, group) == (
        owner.kind,
        owner.name,
        owner.api_version.rpartition("/")[0],
    ) and same_uid(ref.uid, owner.uid)


def _walk(
    pod: PodInfo, namespace: str, links: Links
) -> tuple[tuple[OwnerRef, ...], _Broken | None]:
    """The pod's controller owners, nearest first, up through the intermediates read."""
    chain: list[OwnerRef] = []
    ref = pod.controller
    while ref is not None and len(chain) < _MAX_DEPTH:
        chain.append(ref)
        row = INTERMEDIATES.get(ref.kind)
        if row is None or row.api_version != ref.api_version or ref.kind not in links.read:
            break
        if (why := links.unreadable.get(ref.kind)) is not None:
            return tuple(chain), _Broken(ref.kind, f"{row.plural}.{row.group} unreadable: {why}")
        found = links.objects.get(ref.kind, {}).get((namespace, ref.name))
        if found is None or not same_uid(ref.uid, found[0]):
            missing = f"pod {namespace}/{pod.name}'s {ref.kind} {ref.name} was not found"
            return tuple(chain), _Broken(ref.kind, missing)
        ref = found[1]
    return tuple(chain), None


@dataclass(frozen=True)
class _Walked:
    pod: PodInfo
    chain: tuple[OwnerRef, ...]
    broken: _Broken | None


@dataclass
class _Namespace:
    """One namespace's pods, walked and indexed once: each Workload's question is a lookup,
    not another pass over every pod of its namespace."""

    by_owner: dict[tuple[str, str], list[_Walked]] = field(default_factory=dict)  # (kind, name)
    by_name: dict[str, _Walked] = field(default_factory=dict)
    broken: list[_Broken] = field(default_factory=list)  # in the pods' order

    def add(self, walked: _Walked) -> None:
        self.by_name.setdefault(walked.pod.name, walked)
        for key in dict.fromkeys((ref.kind, ref.name) for ref in walked.chain):
            self.by_owner.setdefault(key, []).append(walked)
        if walked.broken is not None:
            self.broken.append(walked.broken)


class PodTree:
    """Every pod read this cycle with its chain of controller owners, walked once."""

    def __init__(self, found: FoundPods, links: Links) -> None:
        self.found = found
        self._links = links
        self._walked: dict[str, _Namespace] = {}
        self._positions: dict[tuple[str, str], dict[str, list[int]]] = {}
        # (namespace, Workload) → the queued pod that owns it, once its owner is found above
        self.queued: dict[tuple[str, str], str] = {}

    def _in(self, namespace: str) -> _Namespace:
        if namespace not in self._walked:
            indexed = self._walked[namespace] = _Namespace()
            for pod in self.found.by_namespace.get(namespace, []):
                indexed.add(_Walked(pod, *_walk(pod, namespace, self._links)))
        return self._walked[namespace]

    def owned(
        self, namespace: str, owner: OwnerRef, through: Iterable[str]
    ) -> tuple[list[PodInfo], str | None]:
        """The pods whose chain leads to `owner`; unsure when a chain through one of its
        intermediate kinds could not be followed (that pod may be its)."""
        kinds = set(through)
        unreadable = [
            f"{k}s unreadable: {self._links.unreadable[k]}"
            for k in sorted(kinds)
            if k in self._links.unreadable
        ]
        indexed = self._in(namespace)
        candidates = indexed.by_owner.get((owner.kind, owner.name), [])
        mine = [w.pod for w in candidates if any(_same(ref, owner) for ref in w.chain)]
        broken = [b.why for b in indexed.broken if b.kind in kinds]
        reasons = unreadable + broken
        return mine, (reasons[0] if reasons else None)

    def group(self, namespace: str, workload: str, owner: OwnerRef) -> list[PodInfo]:
        """The pods Kueue's pod integration names for the Workload: its pod group (named
        after the Workload), or the one pod that owns it."""
        pods = self.found.by_namespace.get(namespace, [])
        lone = self.queued.get((namespace, workload))
        if (owner.api_version, owner.kind) == ("v1", "Pod"):
            lone = owner.name
        found = set(self._where(namespace, "pod_group").get(workload, []))
        if lone is not None:
            found.update(self._where(namespace, "name").get(lone, []))
        return [pods[at] for at in sorted(found)]

    def selected(self, namespace: str, selector: PodSelector, owner: str) -> list[PodInfo]:
        """The pods `selector` picks for `owner`: looked up by the label naming the owner,
        when one does, then matched whole."""
        pods = self.found.by_namespace.get(namespace, [])
        if (label := selector.owner_label(owner)) is not None:
            key, value = label
            pods = [pods[at] for at in self._where(namespace, f"labels/{key}").get(value, [])]
        return [pod for pod in pods if selector.matches(pod.labels, owner=owner)]

    def _where(self, namespace: str, value_of: str) -> dict[str, list[int]]:
        """The positions of the namespace's pods by `value_of` ("pod_group", "name", or
        "labels/<key>"), indexed at the cycle's first question."""
        if (namespace, value_of) not in self._positions:
            index = self._positions[(namespace, value_of)] = {}
            attribute, _, label = value_of.partition("/")
            for at, pod in enumerate(self.found.by_namespace.get(namespace, [])):
                value = pod.labels.get(label) if label else getattr(pod, attribute)
                if value is not None:
                    index.setdefault(value, []).append(at)
        return self._positions[(namespace, value_of)]

    def queued_above(self, namespace: str, pod_name: str) -> tuple[OwnerRef | None, str | None]:
        """The object a queued pod's chain leads to that people know (a Deployment, a
        Notebook), or why the chain could not be followed."""
        walked = self._in(namespace).by_name.get(pod_name)
        if walked is None:
            return None, None
        tops = [ref for ref in walked.chain if _queued_kind(ref)]
        if tops:
            return tops[-1], None
        return None, walked.broken.why if walked.broken is not None else None


def _queued_kind(ref: OwnerRef) -> bool:
    row = known_owner(ref)
    return row is not None and row.pods_found is PodsFound.QUEUED_PODS


@dataclass(frozen=True)
class Finding:
    """How one owner kind's pods are found: a selector (a row's, or the settings' override),
    or the row's way."""

    kind: str
    pods_found: PodsFound
    selector: PodSelector | None = None
    through: tuple[str, ...] = ()


class PodFinder:
    """The owner kinds' ways of finding pods, from the settings and the table."""

    def __init__(self, settings: ClusterSettings) -> None:
        self.findings: dict[str, Finding] = {}
        problems = []
        for kind, entry in settings.owner_kinds.items():
            try:
                self.findings[kind] = _finding(kind, entry.pod_selector)
            except ValueError as exc:
                problems.append(f"cluster.ownerKinds.{kind}.podSelector: {exc}")
        if problems:
            raise ConfigError(problems)
        enabled = {k for k, entry in settings.owner_kinds.items() if entry.enabled}
        # Queued pods lead up to a Deployment or a Notebook only when that kind is acted on.
        self.queued_kinds = tuple(row for row in QUEUED_ABOVE_PODS if row.kind in enabled)
        ownership = [f for f in self.findings.values() if f.pods_found is PodsFound.OWNERSHIP]
        # A pod's controller of these kinds may lead to an owner: the ownership kinds
        # themselves and the intermediates any Workload's pods are found through.
        self._controllers = frozenset(f.kind for f in ownership) | set(
            self.intermediates(self.findings, queued_pods=True)
        )
        self._across = [PodSelector.parse(s.across_owners()) for s in self.selectors.values()]

    def needs(self, pod: PodInfo) -> bool:
        """Whether some Workload's pods may count it, or a chain lead through it: the one
        rule both readers keep pods by (listed or watched), so caches on and off find the
        same pods. A GPU pod; a pod a selector kind's label marks; a pod in a Kueue pod group
        or queued by Kueue's pod integration (it may own its Workload); a pod whose controller
        is an ownership kind or an intermediate (a PyTorchJob's CPU master, a JobSet's CPU
        Job). A pod without GPUs that none of these names is never any Workload's."""
        controller = pod.controller
        return (
            pod.gpus > 0
            or bool(pod.pod_group)
            or pod.labels.get(KUEUE_MANAGED_KEY) == "true"
            or (controller is not None and controller.kind in self._controllers)
            or any(selector.matches(pod.labels, owner="") for selector in self._across)
        )

    @property
    def selectors(self) -> dict[str, PodSelector]:
        return {k: f.selector for k, f in self.findings.items() if f.selector is not None}

    def queued_pod(self, info: WorkloadInfo) -> bool:
        """Owned by a pod that may lead up to a Deployment or a Notebook we act on."""
        owner = info.owner
        return owner is not None and owner.kind == "Pod" and bool(self.queued_kinds)

    def selector_for(self, info: WorkloadInfo) -> str | None:
        """The label selector of one owner's pods, when its kind finds them by one."""
        finding = self.findings.get(info.owner.kind) if info.owner else None
        if info.owner is None or finding is None or finding.selector is None:
            return None
        return finding.selector.for_owner(info.owner.name)

    def finds(self, info: WorkloadInfo) -> bool:
        return info.owner is not None and info.owner.kind in self.findings

    def selected_only(self, kinds: Iterable[str]) -> str | None:
        """The one selector to list pods by, when a single selector kind needs pods."""
        kinds = set(kinds)
        if len(kinds) != 1:
            return None
        finding = self.findings[kinds.pop()]
        return finding.selector.across_owners() if finding.selector is not None else None

    def intermediates(self, kinds: Iterable[str], *, queued_pods: bool) -> list[str]:
        """The intermediate kinds to read for Workloads of `kinds`."""
        needed = {k for kind in kinds if kind in self.findings for k in self.findings[kind].through}
        if queued_pods:
            needed |= {k for row in self.queued_kinds for k in row.through}
        return sorted(needed)

    def resolve(self, info: WorkloadInfo, tree: PodTree) -> tuple[WorkloadInfo, str | None]:
        """A Workload owned by a queued pod, owned instead by the object its pod leads to."""
        owner = info.owner
        if (
            owner is None
            or (owner.api_version, owner.kind) != ("v1", "Pod")
            or not self.queued_kinds
        ):
            return info, None
        above, why = tree.queued_above(info.ref.namespace, owner.name)
        if above is None or above.kind not in {row.kind for row in self.queued_kinds}:
            return info, why
        tree.queued[(info.ref.namespace, info.ref.name)] = owner.name
        return replace(info, owner=above), None

    def pods_of(
        self, info: WorkloadInfo, tree: PodTree, *, owner_found: bool
    ) -> tuple[list[PodInfo], PodChain | None]:
        owner, namespace = info.owner, info.ref.namespace
        if owner is None or owner.kind not in self.findings:
            return [], None
        finding = self.findings[owner.kind]
        skipped = tree.found.skipped_in(namespace)
        if finding.selector is not None:
            mine = tree.selected(namespace, finding.selector, owner.name)
            chain = pod_chain(
                owner,
                selector=finding.selector.for_owner(owner.name),
                owner_found=owner_found,
                skipped=skipped,
                namespace=namespace,
            )
            return mine, chain
        unsure = None
        if finding.pods_found is PodsFound.OWNERSHIP:
            mine, unsure = tree.owned(namespace, owner, finding.through)
            found_by = f"ownership ({' → '.join((owner.kind, *finding.through, 'Pod'))})"
        else:
            mine = tree.group(namespace, info.ref.name, owner)
            found_by = f"Kueue's pod group {info.ref.name}"
        chain = pod_chain(
            owner, selector="", owner_found=owner_found, skipped=skipped, namespace=namespace
        )
        return mine, PodChain(found_by, unsure or chain.unsure)


def _finding(kind: str, configured: str | None) -> Finding:
    row = KNOWN_OWNERS.get(kind)
    template = configured or (row.pod_selector if row is not None else "")
    if template:
        return Finding(kind, PodsFound.SELECTOR, PodSelector.parse(template))
    if row is None:
        raise ValueError(f"{kind} is not a kind this service knows: name a podSelector")
    found = PodsFound.POD_GROUP if row.pods_found is PodsFound.QUEUED_PODS else row.pods_found
    return Finding(kind, found, through=row.through if found is PodsFound.OWNERSHIP else ())
