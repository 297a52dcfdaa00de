"""Resource URL parsing: /api/v1/... and /apis/<group>/<version>/... into a ResourceRoute."""

from __future__ import annotations

from dataclasses import dataclass

from .catalog import Catalog, ResourceType
from .errors import ApiError


@dataclass(frozen=True)
class ResourceRoute:
    resource: ResourceType
    version: str
    namespace: str | None  # None: cluster-scoped, or a list across all namespaces
    name: str | None  # None: the collection
    subresource: str | None = None

    @property
    def api_version(self) -> str:
        return self.resource.group_version(self.version)


def _split_prefix(parts: list[str]) -> tuple[str, str, list[str]] | None:
    if parts[:2] == ["api", "v1"]:
        return "", "v1", parts[2:]
    if len(parts) >= 3 and parts[0] == "apis":
        return parts[1], parts[2], parts[3:]
    return None


def _not_found(parts: list[str]) -> ApiError:
    return ApiError(404, f"the server could not find the requested resource ({'/'.join(parts)})")


def _valid_tail(resource: ResourceType, tail: list[str]) -> bool:
    """Nothing, a name, or a name and "status" where the resource has that subresource."""
    return len(tail) <= 1 or (
        len(tail) == 2 and tail[1] == "status" and resource.status_subresource
    )


def parse_route(catalog: Catalog, parts: list[str]) -> ResourceRoute:
    """Raise a 404 Status for anything that is not a served resource path."""
    split = _split_prefix(parts)
    if split is None or not split[2]:
        raise _not_found(parts)
    group, version, rest = split
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        candidate = catalog.by_plural(group, version, rest[2])
        if candidate is not None and candidate.namespaced:
            namespace, rest = rest[1], rest[2:]
    resource = catalog.by_plural(group, version, rest[0])
    if resource is None or not _valid_tail(resource, rest[1:]):
        raise _not_found(parts)
    name, subresource = [*rest[1:], None, None][:2]
    return ResourceRoute(resource, version, namespace, name, subresource)
