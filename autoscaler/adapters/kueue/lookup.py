"""Small lookups the Kueue reader joins with: each owner kind's pod selector, an owner object
checked against the reference to it, and an object's (namespace, name)."""

from __future__ import annotations

from collections.abc import Mapping

from autoscaler.adapters.kubernetes import objects
from autoscaler.adapters.kubernetes.resources import Obj
from autoscaler.core.errors import ConfigError
from autoscaler.domain.models import OwnerRef
from autoscaler.settings.tree import ClusterSettings


def pod_selectors(settings: ClusterSettings) -> dict[str, objects.PodSelector]:
    selectors, problems = {}, []
    for kind, owner_kind in settings.owner_kinds.items():
        try:
            selectors[kind] = objects.PodSelector.parse(owner_kind.pod_selector)
        except ValueError as exc:
            problems.append(f"cluster.ownerKinds.{kind}.podSelector: {exc}")
    if problems:
        raise ConfigError(problems)
    return selectors


def same_owner(found: Obj | None, owner: OwnerRef) -> Obj | None:
    """The owner object, unless it is a namesake that replaced the real (deleted) owner."""
    if found is None:
        return None
    uid = str((found.get("metadata") or {}).get("uid", ""))
    return found if not owner.uid or not uid or uid == owner.uid else None


def key_of(obj: Obj) -> tuple[str, str] | None:
    meta = obj.get("metadata") or {}
    namespace, name = meta.get("namespace"), meta.get("name")
    return (str(namespace), str(name)) if namespace and name else None


def name_of(obj: Obj) -> str:
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    if not isinstance(meta, Mapping):
        return "<no metadata>"
    return f"{meta.get('namespace', '')}/{meta.get('name', '?')}"
