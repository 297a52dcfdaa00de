"""The intermediate objects a pod's chain of controller owners goes through (Jobs, JobSets,
ReplicaSets, StatefulSets...), as the cycle reads them: each one's uid and controller owner
only (its link), listed once per kind, or from watch caches (an owner kind's cache serves its
kind as an intermediate too). `ownership.py` walks the pods' chains through them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta

from autoscaler.adapters.kubernetes import objects
from autoscaler.adapters.kubernetes.cache import Key, WatchCache, key_of, not_following
from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kubernetes.resources import ApiResource, Obj
from autoscaler.core.errors import Forbidden, NotFound
from autoscaler.domain.models import OwnerRef
from autoscaler.domain.policy.owners import INTERMEDIATES, Intermediate

Link = tuple[str, OwnerRef | None]  # an intermediate object's uid and controller owner


def intermediate_resource(row: Intermediate) -> ApiResource:
    return ApiResource(row.group, row.version, row.plural)


def link_of(obj: Obj) -> Link | None:
    """What a cache keeps of an intermediate object: its uid and controller owner."""
    try:
        return str(obj["metadata"].get("uid", "")), objects.controller_owner(obj)
    except objects.MALFORMED:
        return None


def links_by_key(found: Mapping[Key, Obj]) -> dict[Key, Link]:
    """The links of objects by (namespace, name): an owner cache's, derived once per change
    of that cache (`WatchCache.view`), not once per cycle."""
    return {key: link for key, obj in found.items() if (link := link_of(obj)) is not None}


@dataclass(frozen=True)
class Links:
    """The intermediate objects read this cycle, and the kinds that could not be read;
    `listed`: each kind's list as read (listed, not from a cache), kept for the owner kinds
    of the same resource, so that the cycle lists it once (`owner_lists.py`)."""

    objects: Mapping[str, Mapping[Key, Link]] = field(default_factory=dict)  # by kind
    read: frozenset[str] = frozenset()
    unreadable: Mapping[str, str] = field(default_factory=dict)  # kind → why
    listed: Mapping[str, tuple[Obj, ...]] = field(default_factory=dict)


def list_links(client: KubeClient, kinds: Iterable[str], *, namespace: str | None = None) -> Links:
    """The intermediate objects of `kinds`, one list call each; a kind not served has none
    (no pod leads through it), a kind refused is unreadable."""
    found: dict[str, Mapping[Key, Link]] = {}
    unreadable: dict[str, str] = {}
    listed: dict[str, tuple[Obj, ...]] = {}
    kinds = sorted(set(kinds))
    for kind in kinds:
        resource = intermediate_resource(INTERMEDIATES[kind])
        try:
            items = client.list_objects(resource, namespace=namespace).items
        except NotFound:
            items = ()
        except Forbidden as exc:
            unreadable[kind] = str(exc)
            continue
        listed[kind] = items
        found[kind] = links_by_key({key: obj for obj in items if all(key := key_of(obj))})
    return Links(found, frozenset(kinds), unreadable, listed)


def cached_links(
    caches: Mapping[str, WatchCache[Link]],
    wait: timedelta,
    *,
    owners: Mapping[str, WatchCache[Obj]] | None = None,
) -> Links:
    """From the intermediates' watch caches, and for a kind that is an owner kind too, from
    its owner cache (`owners`: the same resource, watched once): no request; a failing one
    is unreadable. Each cache's links are copied or derived only after it changed."""
    found: dict[str, Mapping[Key, Link]] = {}
    unreadable: dict[str, str] = {}
    shared = owners or {}
    for kind, cache in caches.items():
        if (why := not_following(cache, wait)) is None:
            found[kind] = cache.view(dict)
        else:
            unreadable[kind] = why
    for kind, owner_cache in shared.items():
        if (why := not_following(owner_cache, wait)) is None:
            found[kind] = owner_cache.view(links_by_key)
        else:
            unreadable[kind] = why
    return Links(found, frozenset((*caches, *shared)), unreadable)
