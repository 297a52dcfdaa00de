"""Shared pieces of the builders: metadata, containers, timestamps, the fluent base class."""

from __future__ import annotations

import copy
import uuid
from datetime import UTC, datetime
from typing import Any, Self

Object = dict[str, Any]
GPU = "nvidia.com/gpu"
RAY_IMAGE = "rayproject/ray:2.9.0"


def timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC with seconds, as the API server writes times."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def stable_uid(kind: str, namespace: str | None, name: str) -> str:
    """A uid derived from the object's identity, so built objects (and owner references
    to objects built elsewhere) agree without passing uids around."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{kind}/{namespace or ''}/{name}"))


def metadata(kind: str, namespace: str | None, name: str) -> Object:
    meta: Object = {"name": name, "uid": stable_uid(kind, namespace, name)}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def container(name: str, *, gpus: int = 0, cpu: int = 1, image: str = RAY_IMAGE) -> Object:
    """A container whose requests equal its limits (GPUs must), `cpu` in whole cores."""
    resources: Object = {"cpu": str(cpu)}
    if gpus:
        resources[GPU] = str(gpus)
    return {
        "name": name,
        "image": image,
        "resources": {"requests": dict(resources), "limits": dict(resources)},
    }


def pod_requests(template: Object) -> dict[str, int]:
    """Whole-unit requests summed over a pod template's containers."""
    total: dict[str, int] = {}
    for each in template["spec"]["containers"]:
        for resource, quantity in each.get("resources", {}).get("requests", {}).items():
            total[resource] = total.get(resource, 0) + int(quantity)
    return total


class Builder:
    """Holds one object; each step edits it and returns the builder; build() copies it out."""

    def __init__(self, obj: Object) -> None:
        self._obj = obj

    def label(self, key: str, value: str) -> Self:
        self._obj["metadata"].setdefault("labels", {})[key] = value
        return self

    def annotation(self, key: str, value: str) -> Self:
        self._obj["metadata"].setdefault("annotations", {})[key] = value
        return self

    def uid(self, uid: str) -> Self:
        self._obj["metadata"]["uid"] = uid
        return self

    def build(self) -> Object:
        return copy.deepcopy(self._obj)
