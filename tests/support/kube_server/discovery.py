"""Discovery documents (/api, /apis, /apis/<group>[/<version>], /version) from the catalog."""

from __future__ import annotations

from typing import Any

from .catalog import Catalog, ResourceType

VERSION_INFO = {
    "major": "1",
    "minor": "31",
    "gitVersion": "v1.31.0-test",
    "platform": "linux/amd64",
    "goVersion": "go1.22",
    "compiler": "gc",
    "gitCommit": "",
    "gitTreeState": "clean",
    "buildDate": "2024-08-13T00:00:00Z",
}


def _resource_entries(resource: ResourceType) -> list[dict[str, Any]]:
    entry = {
        "name": resource.plural,
        "singularName": resource.singular,
        "namespaced": resource.namespaced,
        "kind": resource.kind,
        "verbs": list(resource.verbs),
    }
    if not resource.status_subresource:
        return [entry]
    status = {
        "name": f"{resource.plural}/status",
        "singularName": "",
        "namespaced": resource.namespaced,
        "kind": resource.kind,
        "verbs": ["get", "patch", "update"],
    }
    return [entry, status]


def _group_entry(catalog: Catalog, group: str) -> dict[str, Any]:
    versions = [
        {"groupVersion": f"{group}/{v}", "version": v} for v in catalog.served_versions(group)
    ]
    return {"name": group, "versions": versions, "preferredVersion": versions[0]}


def discovery_document(catalog: Catalog, parts: list[str]) -> dict[str, Any] | None:
    """The document at the path split into `parts`, or None when the path is not discovery."""
    if parts == ["version"]:
        return VERSION_INFO
    if parts == ["api"]:
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}
            ],
        }
    if parts == ["apis"]:
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [_group_entry(catalog, g) for g in catalog.served_groups()],
        }
    if len(parts) == 2 and parts[0] == "apis" and parts[1] in catalog.served_groups():
        return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(catalog, parts[1])}
    return _resource_list(catalog, parts)


def _resource_list(catalog: Catalog, parts: list[str]) -> dict[str, Any] | None:
    """The APIResourceList at /api/v1 or /apis/<group>/<version>, if that version is served."""
    group_version = _group_version(parts)
    resources = catalog.served_in(*group_version) if group_version else []
    if not group_version or not resources:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": resources[0].group_version(group_version[1]),
        "resources": [e for r in resources for e in _resource_entries(r)],
    }


def _group_version(parts: list[str]) -> tuple[str, str] | None:
    if parts == ["api", "v1"]:
        return "", "v1"
    if len(parts) == 3 and parts[0] == "apis":
        return parts[1], parts[2]
    return None
