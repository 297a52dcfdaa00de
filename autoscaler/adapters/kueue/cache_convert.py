"""What the Kueue reader's watch caches keep of each object: parsed namespaces and pods,
objects less their managedFields, owners as their metadata only."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from autoscaler.adapters.kubernetes.resources import Obj
from autoscaler.adapters.kueue.cluster import PodsByNamespace
from autoscaler.adapters.kueue.context import NamespaceMeta, namespace_meta
from autoscaler.domain.models import PodInfo

_MALFORMED = (KeyError, TypeError, ValueError, AttributeError)
_OWNER_META = ("name", "namespace", "uid", "labels", "annotations", "resourceVersion")

NamespacedPod = tuple[str, PodInfo]


def kept_namespace(obj: Obj) -> NamespaceMeta | None:
    try:
        return namespace_meta(obj)
    except _MALFORMED:
        return None


def by_namespace(pods: tuple[NamespacedPod, ...]) -> PodsByNamespace:
    grouped: PodsByNamespace = defaultdict(list)
    for namespace, pod in pods:
        grouped[namespace].append(pod)
    return grouped


def without_managed_fields(obj: Obj) -> Obj:
    """The object minus metadata.managedFields, often its largest and never read here."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


def owner_metadata(obj: Obj) -> Obj:
    """What the join reads of an owner: its identity, labels and annotations."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    kept = {key: meta[key] for key in _OWNER_META if key in meta}
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": kept}


def key_text(obj: Obj) -> str:
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return "<no metadata>"
    return f"{meta.get('namespace', '')}/{meta.get('name', '?')}"
