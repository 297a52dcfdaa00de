"""One place that says whether a manifest is valid: kubernetes-validate's strict schemas for
built-in kinds (bundled, offline), the upstream CRDs vendored in tests/crds for custom resources.

kubernetes_validate.validate() rebuilds its schema registry on every call (over a second per
manifest); we read the same bundled files once per (version, kind) and keep the validator, so
its reference cache survives. test_manifests.py also runs the real CLI once over every render.
"""

from __future__ import annotations

import functools
import re

import jsonschema
import kubernetes_validate  # type: ignore[import-untyped]
from kubernetes_validate.utils import schema_contents  # type: ignore[import-untyped]
from referencing import Registry, Resource

from tests.deploy.tooling import Manifest
from tests.support.crd_validation import load_crd_schemas

# The chart's kubeVersion floor and the newest schemas kubernetes-validate ships.
KUBERNETES_VERSIONS = ("1.29.0", kubernetes_validate.latest_version())
# No upstream CRD for them in tests/crds; their fields are few and fixed by the templates (the
# PrometheusRule's rules are checked by promtool in test_chart_recording_rules.py).
UNVALIDATED_KINDS = frozenset(
    {
        ("monitoring.coreos.com/v1", "ServiceMonitor"),
        ("monitoring.coreos.com/v1", "PrometheusRule"),
    }
)


def problems(manifest: Manifest) -> list[str]:
    """Why `manifest` is invalid; empty when it is valid."""
    api_version, kind = manifest["apiVersion"], manifest["kind"]
    if (api_version, kind) in UNVALIDATED_KINDS:
        return []
    # Built-in kinds first: asking the CRD loader about a kind it lacks re-reads every CRD file.
    if _is_builtin(api_version, kind):
        return _builtin_problems(manifest)
    schemas = load_crd_schemas()
    if schemas.has(api_version, kind):
        return [f"{field}: {message}" for field, message in schemas.errors(manifest)]
    return [f"no schema for {kind} {api_version}: neither built in nor in tests/crds"]


def _is_builtin(api_version: str, kind: str) -> bool:
    try:
        _builtin_validator(KUBERNETES_VERSIONS[-1], api_version, kind)
    except FileNotFoundError:
        return False
    return True


def _builtin_problems(manifest: Manifest) -> list[str]:
    found = []
    for version in KUBERNETES_VERSIONS:
        try:
            validator = _builtin_validator(version, manifest["apiVersion"], manifest["kind"])
        except FileNotFoundError:
            found.append(f"Kubernetes {version} does not serve {manifest['apiVersion']}")
            continue
        for error in validator.iter_errors(manifest):
            path = ".".join(str(part) for part in error.absolute_path)
            found.append(f"Kubernetes {version}: {path}: {error.message}")
    return found


@functools.lru_cache(maxsize=128)
def _builtin_validator(version: str, api_version: str, kind: str) -> jsonschema.Validator:
    """kubernetes-validate's strict schema for one kind, as its own validate() picks it."""
    folder = f"kubernetes-json-schema/v{version}-local-strict"
    # rbac.authorization.k8s.io/v1 -> rbac-v1, v1 -> v1 (the library's file naming).
    api = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    schema = schema_contents(f"{folder}/{kind.lower()}-{api}.json", version)
    definitions = schema_contents(f"{folder}/_definitions.json", version)
    registry: Registry = Resource.from_contents(definitions) @ (
        Resource.from_contents(schema) @ Registry()
    )
    validator: jsonschema.Validator = jsonschema.Draft202012Validator(schema, registry=registry)
    return validator


def describe(manifest: Manifest) -> str:
    metadata = manifest.get("metadata", {})
    return f"{manifest['kind']} {metadata.get('namespace', '')}/{metadata.get('name', '')}"
