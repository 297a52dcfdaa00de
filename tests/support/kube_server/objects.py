"""Per-object rules of the API server: metadata stamped on writes, the status subresource
split, generation bumps, and the Change record each committed write produces."""

from __future__ import annotations

import copy
import random
import string
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .catalog import ResourceType
from .errors import ApiError, invalid

Object = dict[str, Any]
# Called with (new, old or None) before a write commits; returns the object to store (possibly
# defaulted) or raises ApiError to reject the write.
Admit = Callable[[Object, Object | None], Object]
SERVER_OWNED = ("uid", "creationTimestamp", "namespace", "name", "resourceVersion", "generation")


@dataclass(frozen=True)
class Change:
    """One committed write, as watchers and `on_change` listeners see it."""

    type: str  # ADDED, MODIFIED or DELETED
    resource: ResourceType
    object: Object
    old: Object | None
    resource_version: int

    @property
    def kind(self) -> str:
        return self.resource.kind

    @property
    def namespace(self) -> str | None:
        namespace: str | None = self.object["metadata"].get("namespace")
        return namespace

    @property
    def name(self) -> str:
        name: str = self.object["metadata"]["name"]
        return name


def format_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def updated_object(kind: ResourceType, old: Object, new: Object, subresource: str | None) -> Object:
    """`new` as the server would store it over `old`: the other half (status or the rest) kept,
    server-owned metadata kept, generation bumped when anything but metadata and status changed."""
    new = keep_other_half(kind, old, new, subresource)
    new["metadata"].update({k: old["metadata"][k] for k in SERVER_OWNED if k in old["metadata"]})
    if _without_meta_and_status(new) != _without_meta_and_status(old):
        new["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1
    return new


def keep_other_half(
    kind: ResourceType, old: Object, new: Object, subresource: str | None
) -> Object:
    """Writes to /status change only status; writes to the main resource never change it."""
    if subresource == "status":
        merged = copy.deepcopy(old)
        merged.pop("status", None)
        if "status" in new:
            merged["status"] = new["status"]
        return merged
    if kind.status_subresource:
        new.pop("status", None)
        if "status" in old:
            new["status"] = copy.deepcopy(old["status"])
    return new


def _without_meta_and_status(obj: Object) -> Object:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def name_from_generate_name(kind: ResourceType, meta: dict[str, Any]) -> None:
    if meta.get("name"):
        return
    if not meta.get("generateName"):
        raise invalid(
            kind, "", [("metadata.name", "Required value: name or generateName is required")]
        )
    suffix = "".join(random.choices(string.ascii_lowercase + string.digits, k=5))
    meta["name"] = meta["generateName"] + suffix


def version_required(kind: ResourceType, meta: dict[str, Any]) -> ApiError:
    return invalid(
        kind,
        meta.get("name", ""),
        [("metadata.resourceVersion", "Invalid value: 0x0: must be specified for an update")],
    )
