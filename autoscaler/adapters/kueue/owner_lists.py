"""The owners of the cycle's Workloads, by kind: without caches one list per kind, unless the
cycle already listed that resource whole (pods, to find them; Jobs, JobSets, StatefulSets,
to follow chains through them: the same list serves again); with caches, from each kind's
watch cache. A kind that cannot be read (refused, or its cache failing) leaves its
Workloads unknown, with the reason: that kind only, never the whole cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta

from autoscaler.adapters.kubernetes.cache import WatchCache, key_of, not_following
from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kubernetes.resources import PODS, ApiResource, Obj
from autoscaler.adapters.kueue.links import Links, intermediate_resource
from autoscaler.adapters.kueue.ownership import same_uid
from autoscaler.adapters.kueue.resources import OWNER_RESOURCES, owner_resource
from autoscaler.core.errors import Forbidden, NotFound
from autoscaler.domain.models import OwnerRef, State, WorkloadInfo
from autoscaler.domain.policy.management import HandsOff
from autoscaler.domain.policy.owners import INTERMEDIATES

OwnerKey = tuple[str, str]  # (namespace, name)
# ownerReferences: an owner kind that is also an intermediate (a RayJob's RayCluster, a
# JobSet's Job) serves the chains through it from the same cache (`split_link_kinds`).
_OWNER_META = (
    "name",
    "namespace",
    "uid",
    "labels",
    "annotations",
    "resourceVersion",
    "ownerReferences",
)


@dataclass(frozen=True)
class Owners:
    """The owner objects read this cycle by kind, and the kinds that could not be read."""

    found: Mapping[str, Mapping[OwnerKey, Obj]] = field(default_factory=dict)
    unreadable: Mapping[str, str] = field(default_factory=dict)  # kind → why

    def of(self, info: WorkloadInfo) -> Obj | None:
        owner = info.owner
        if owner is None:
            return None
        found = self.found.get(owner.kind, {}).get((info.ref.namespace, owner.name))
        return same_owner(found, owner)

    def unknown(self, info: WorkloadInfo) -> HandsOff | None:
        """Unknown when its owner's kind could not be read: its annotations (an exemption, a
        snooze) and labels (what rules match) are not known, so it is never acted on."""
        owner = info.owner
        why = self.unreadable.get(owner.kind) if owner is not None else None
        if owner is None or why is None:
            return None
        return HandsOff(State.UNKNOWN, f"its {owner.kind} {owner.name} cannot be read: {why}")


def _same_resource(one: ApiResource, other: ApiResource) -> bool:
    return (one.group, one.version, one.plural) == (other.group, other.version, other.plural)


def _as_intermediate(kind: str) -> bool:
    """Its owner resource is the one the intermediates' list of that kind reads."""
    row = INTERMEDIATES.get(kind)
    return row is not None and _same_resource(OWNER_RESOURCES[kind], intermediate_resource(row))


def split_link_kinds(
    owner_kinds: Iterable[str], link_kinds: Iterable[str]
) -> tuple[list[str], list[str]]:
    """The intermediate kinds watched on their own, and those whose links come from their
    owner kind's watch cache (the same resource, watched once: a RayJob's RayClusters)."""
    owners = set(owner_kinds)
    own: list[str] = []
    shared: list[str] = []
    for kind in link_kinds:
        (shared if kind in owners and _as_intermediate(kind) else own).append(kind)
    return own, shared


def _keyed(found: Iterable[Obj]) -> dict[OwnerKey, Obj]:
    return {key: obj for obj in found if all(key := key_of(obj))}  # namespaced and named


def list_owners(
    client: KubeClient, kinds: Iterable[str], *, links: Links, pods: tuple[Obj, ...] | None
) -> Owners:
    """One list per owner kind, but none for a resource the cycle listed whole already (`pods`:
    every pod, when they were listed unselected; `links`: the intermediates, listed whole).
    Refused (as by the intermediates' list), that kind is unreadable; not served, it has none."""
    found: dict[str, dict[OwnerKey, Obj]] = {}
    unreadable: dict[str, str] = {}
    for kind in sorted(set(kinds)):
        items: tuple[Obj, ...] | None = None
        if _as_intermediate(kind):
            if (why := links.unreadable.get(kind)) is not None:
                unreadable[kind] = why
                continue
            items = links.listed.get(kind)
        elif pods is not None and _same_resource(OWNER_RESOURCES[kind], PODS):
            items = pods
        if items is None:
            try:
                items = client.list_objects(OWNER_RESOURCES[kind]).items
            except NotFound:
                items = ()
            except Forbidden as exc:
                unreadable[kind] = str(exc)
                continue
        found[kind] = _keyed(items)
    return Owners(found, unreadable)


def cached_owners(caches: Mapping[str, WatchCache[Obj]], wait: timedelta) -> Owners:
    """From the owners' watch caches: no request, and no copy unless a cache changed; a
    failing one is unreadable."""
    found: dict[str, dict[OwnerKey, Obj]] = {}
    unreadable: dict[str, str] = {}
    for kind, cache in caches.items():
        if (why := not_following(cache, wait)) is not None:
            unreadable[kind] = why
            continue
        found[kind] = cache.view(dict)
    return Owners(found, unreadable)


def same_owner(found: Obj | None, owner: OwnerRef) -> Obj | None:
    """The owner object, unless it is a namesake that replaced the real (deleted) owner."""
    if found is None:
        return None
    uid = str((found.get("metadata") or {}).get("uid", ""))
    return found if same_uid(uid, owner.uid) else None


def get_owner(client: KubeClient, info: WorkloadInfo) -> Obj | None:
    """One Workload's owner, read now (the fresh read before acting); None when gone."""
    resource = owner_resource(info.owner)
    if info.owner is None or resource is None:
        return None
    try:
        found = client.get(resource, info.owner.name, namespace=info.ref.namespace)
    except NotFound:
        return None
    return same_owner(found, info.owner)


def owner_metadata(obj: Obj) -> Obj:
    """What the join reads of an owner (its watch cache keeps only this): its identity,
    labels and annotations."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    kept = {key: meta[key] for key in _OWNER_META if key in meta}
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": kept}
