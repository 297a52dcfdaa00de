"""Validate objects against the upstream CRD YAML files vendored in tests/crds (unmodified).

The served version's `openAPIV3Schema` is turned into a JSON Schema for the `jsonschema` package:
`nullable` becomes a "null" type, `x-kubernetes-int-or-string` an anyOf, and every other
`x-kubernetes-*` key is ignored (CEL rules included). Unknown fields are errors unless the schema
preserves them: the API server would silently prune them, which hides a typo in the adapter.
Defaults from the schema can be applied as the API server does on write.
"""

from __future__ import annotations

import copy
import functools
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import yaml

Object = dict[str, Any]

DEFAULT_CRD_DIR = Path(__file__).resolve().parents[1] / "crds"  # tests/crds, see its README


class CrdValidationError(AssertionError):
    """The object does not match its CRD; `errors` holds (field path, message) pairs."""

    def __init__(self, kind: str, name: str, errors: list[tuple[str, str]]) -> None:
        lines = "\n".join(f"  {field}: {message}" for field, message in errors)
        super().__init__(f"{kind} {name!r} does not match its upstream CRD:\n{lines}")
        self.errors = errors


def _convert(node: Any, *, strict: bool) -> Any:
    """OpenAPI v3 structural schema -> JSON Schema (draft 4) for one node and its children."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key.startswith("x-kubernetes-") or key in ("description", "nullable", "default"):
            continue
        if key == "properties":
            out[key] = {name: _convert(sub, strict=strict) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not"):
            out[key] = _convert(value, strict=strict)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [_convert(sub, strict=strict) for sub in value]
        else:
            out[key] = value
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if node.get("x-kubernetes-int-or-string") and "anyOf" not in out:
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    preserves = node.get("x-kubernetes-preserve-unknown-fields") or node.get(
        "x-kubernetes-embedded-resource"
    )
    if strict and "properties" in out and "additionalProperties" not in out and not preserves:
        out["additionalProperties"] = False
    return out


def _apply_defaults(value: Any, schema: dict[str, Any]) -> None:
    """Fill absent properties that have a `default`, inside objects that are present."""
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        for key, sub in properties.items():
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                _apply_defaults(value[key], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and not properties:
            for item in value.values():
                _apply_defaults(item, extra)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _apply_defaults(item, schema["items"])


def _field_path(parts: Iterable[Any]) -> str:
    path = ""
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "<root>"


def _describe(error: jsonschema.ValidationError) -> tuple[str, str]:
    """(field, message) in the API server's words for the common cases."""
    path = list(error.absolute_path)
    instance: Any = error.instance
    if error.validator == "required":
        missing = str(error.message).split("'")[1]
        return _field_path([*path, missing]), "Required value"
    if error.validator == "additionalProperties" and isinstance(error.schema, Mapping):
        unknown = sorted(set(instance) - set(error.schema.get("properties", {})))
        return _field_path([*path, unknown[0]]), "field not declared in schema"
    if error.validator == "enum":
        allowed: Any = error.validator_value
        supported = ", ".join(repr(v) for v in allowed)
        return _field_path(path), f"Unsupported value: {instance!r}: supported values: {supported}"
    return _field_path(path), f"Invalid value: {instance!r}: {error.message}"


class CrdSchemas:
    """The CRDs in one directory, loaded lazily (the big ones take a while to parse)."""

    def __init__(self, crd_dir: Path = DEFAULT_CRD_DIR, *, strict: bool = True) -> None:
        if not crd_dir.is_dir():
            raise FileNotFoundError(f"upstream CRD directory not found: {crd_dir}")
        self.crd_dir = crd_dir
        self.strict = strict
        self._crds: dict[tuple[str, str], Object | None] = {}
        self._validators: dict[tuple[str, str], jsonschema.protocols.Validator] = {}
        self._lock = threading.RLock()  # the test server validates from its request threads

    def has(self, api_version: str, kind: str) -> bool:
        return self._version_schema(api_version, kind) is not None

    def apply_defaults(self, obj: Object) -> Object:
        """A copy of `obj` with the schema's defaults filled in."""
        schema = self._require_schema(obj)
        defaulted = copy.deepcopy(obj)
        _apply_defaults(defaulted, schema)
        return defaulted

    def errors(self, obj: Object) -> list[tuple[str, str]]:
        """(field path, message) for each way `obj` breaks its CRD; empty when it is valid."""
        validator = self._validator(obj["apiVersion"], obj["kind"])
        found = sorted(validator.iter_errors(obj), key=lambda e: [str(p) for p in e.path])
        return [_describe(error) for error in found]

    def validate(self, obj: Object) -> None:
        if errors := self.errors(obj):
            name = obj.get("metadata", {}).get("name", "")
            raise CrdValidationError(f"{obj['kind']} {obj['apiVersion']}", name, errors)

    def _require_schema(self, obj: Object) -> dict[str, Any]:
        schema = self._version_schema(obj["apiVersion"], obj["kind"])
        if schema is None:
            raise KeyError(f"no served CRD version for {obj['kind']} {obj['apiVersion']}")
        return schema

    def _validator(self, api_version: str, kind: str) -> jsonschema.protocols.Validator:
        key = (api_version, kind)
        with self._lock:
            if key not in self._validators:
                schema = self._require_schema({"apiVersion": api_version, "kind": kind})
                self._validators[key] = jsonschema.Draft4Validator(
                    _convert(schema, strict=self.strict)
                )
            return self._validators[key]

    def _version_schema(self, api_version: str, kind: str) -> dict[str, Any] | None:
        group, _, version = api_version.rpartition("/")
        crd = self._crd(group, kind)
        for served in (crd or {}).get("spec", {}).get("versions", []):
            if served["name"] == version and served.get("served", True):
                schema: dict[str, Any] = served["schema"]["openAPIV3Schema"]
                return schema
        return None

    def _crd(self, group: str, kind: str) -> Object | None:
        with self._lock:
            if (group, kind) not in self._crds:
                plural = kind.lower() + ("es" if kind.endswith("s") else "s")
                guess = self.crd_dir / f"{group}_{plural}.yaml"  # upstream's file naming
                candidates = [guess] if guess.exists() else sorted(self.crd_dir.glob("*.yaml"))
                for path in candidates:
                    crd = yaml.load(path.read_text(), Loader=_loader())
                    names = crd.get("spec", {}).get("names", {})
                    self._crds[(crd["spec"]["group"], names.get("kind", ""))] = crd
                self._crds.setdefault((group, kind), None)  # not a CRD: do not look again
            return self._crds[(group, kind)]


def _loader() -> type[yaml.SafeLoader]:
    """libyaml's loader when present: the Workload and RayCluster CRDs are over 1 MB each."""
    loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return loader


@functools.lru_cache(maxsize=4)
def load_crd_schemas(crd_dir: Path = DEFAULT_CRD_DIR, *, strict: bool = True) -> CrdSchemas:
    """One shared CrdSchemas per directory, so the suite parses each CRD file once."""
    return CrdSchemas(crd_dir, strict=strict)


def assert_valid(obj: Object, *, schemas: CrdSchemas | None = None) -> None:
    """Raise CrdValidationError (an AssertionError) naming each invalid field of `obj`."""
    (schemas or load_crd_schemas()).validate(obj)
