"""A trigger's `scalerMetadata` (or the metrics-api query string) read into a `Target`.

KEDA passes the trigger's whole metadata, its own keys included. Those are accepted and
ignored; the TLS ones among them are reported, because KEDA reads TLS material only from a
TriggerAuthentication and a user who put it in metadata believes it is in force. Any other
unknown key is an error naming it: a typo must not silently judge something else.

The metrics-api query is read exactly (`exact=True`): KEDA sends the URL as its trigger gives
it, so there is nothing to forgive. Only our keys, no value empty or with surrounding
whitespace, a selector in `SELECTOR_PATTERN`: exactly what `query_schema` documents.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import ErrorDetails

from autoscaler.core.errors import AutoscalerError
from autoscaler.domain.models import DEFAULT_PROFILE
from autoscaler.domain.text import LABEL_PATTERN, SUBDOMAIN_PATTERN, some
from autoscaler.keda.selectors import SELECTOR_PATTERN, parse_selector
from autoscaler.keda.targets import Target

KEDA_KEYS = frozenset({"scalerAddress", "enableTLS", "unsafeSsl"})
KEDA_TLS_KEYS = frozenset({"caCert", "tlsClientCert", "tlsClientKey", "tlsCertFile"})
NAMESPACE_MAX = 63  # a DNS label
WORKLOAD_MAX = 253  # a DNS subdomain
SELECTOR_MAX = 1024
PROFILE_MAX = 63


class MetadataError(AutoscalerError):
    """The trigger's metadata cannot select a target; the message says how to fix it."""


class ScalerMetadata(BaseModel):
    """Our keys of the trigger metadata. Values arrive as strings, as KEDA sends them."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    namespace: str = Field(
        min_length=1,
        max_length=NAMESPACE_MAX,
        pattern=LABEL_PATTERN,
        description="Namespace of the target; the ScaledObject's own when omitted (gRPC).",
    )
    workload: str | None = Field(
        None,
        min_length=1,
        max_length=WORKLOAD_MAX,
        pattern=SUBDOMAIN_PATTERN,
        description="A Kueue Workload's name.",
    )
    pod_selector: str | None = Field(
        None,
        alias="podSelector",
        min_length=1,
        max_length=SELECTOR_MAX,
        description="Label selector over the namespace's running GPU pods (a Deployment).",
    )
    profile: str = Field(
        DEFAULT_PROFILE,
        min_length=1,
        max_length=PROFILE_MAX,
        description="A rule's name: the target is judged with that rule's window and "
        "threshold; `default` is the policy's own.",
    )

    @model_validator(mode="after")
    def _one_selection(self) -> ScalerMetadata:
        if (self.workload is None) == (self.pod_selector is None):
            raise ValueError("give exactly one of workload (a Kueue Workload) or podSelector")
        return self


@dataclass(frozen=True)
class ParsedMetadata:
    target: Target
    ignored_tls_keys: tuple[str, ...]  # in metadata, where KEDA does not read them


def parse_metadata(
    raw: Mapping[str, str],
    *,
    default_namespace: str | None,
    profiles: Collection[str],
    exact: bool = False,
) -> ParsedMetadata:
    """Raises MetadataError naming the unknown keys (the first few) or invalid values.
    `exact`: the metrics-api query's reading (the module's docstring)."""
    ours = _exact_values(raw) if exact else _forgiven_values(raw)
    unknown = sorted(set(ours) - _OUR_KEYS)
    if unknown:
        what = "query parameters" if exact else "scalerMetadata keys"
        raise MetadataError(
            f"unknown {what}: {some(unknown)} (expected {', '.join(sorted(_OUR_KEYS))})"
        )
    if default_namespace and "namespace" not in ours:
        ours["namespace"] = default_namespace
    try:
        metadata = ScalerMetadata.model_validate(ours)
    except ValidationError as exc:
        raise MetadataError("; ".join(_describe(e) for e in exc.errors())) from exc
    if metadata.profile != DEFAULT_PROFILE and metadata.profile not in profiles:
        known = ", ".join(sorted({DEFAULT_PROFILE, *profiles}))
        raise MetadataError(f"unknown profile {metadata.profile!r} (configured: {known})")
    return ParsedMetadata(_target(metadata, exact=exact), tuple(sorted(KEDA_TLS_KEYS & set(raw))))


def query_schema(profiles: Collection[str]) -> dict[str, Any]:
    """The JSON schema of what `parse_metadata(..., exact=True)` takes: the metrics-api query
    as one form-exploded object (OpenAPI: each property is a query parameter of its own), so
    that "exactly one of workload and podSelector" can be stated, as `oneOf`."""
    return {
        "type": "object",
        "properties": {
            "namespace": _documented("namespace", maxLength=NAMESPACE_MAX, pattern=LABEL_PATTERN),
            "workload": _documented("workload", maxLength=WORKLOAD_MAX, pattern=SUBDOMAIN_PATTERN),
            "podSelector": _documented(
                "pod_selector", maxLength=SELECTOR_MAX, pattern=SELECTOR_PATTERN
            ),
            "profile": _documented("profile", enum=sorted({DEFAULT_PROFILE, *profiles})),
        },
        "required": ["namespace"],
        "oneOf": [{"required": ["workload"]}, {"required": ["podSelector"]}],
        "additionalProperties": False,
    }


def _documented(field: str, **bounds: object) -> dict[str, Any]:
    return {
        "type": "string",
        "description": ScalerMetadata.model_fields[field].description,
        **bounds,
    }


def _forgiven_values(raw: Mapping[str, str]) -> dict[str, str]:
    """Trigger metadata: KEDA's own keys left out, values stripped, an empty one not given."""
    ours = {k: v.strip() for k, v in raw.items() if k not in KEDA_KEYS | KEDA_TLS_KEYS}
    return {k: v for k, v in ours.items() if v}


def _exact_values(raw: Mapping[str, str]) -> dict[str, str]:
    """The metrics-api query: every key kept (KEDA's own are unknown there), each value as
    given; an empty one, or one with whitespace around it, refused by its parameter's name."""
    problems = [
        f"{key}: {'empty' if not value else 'whitespace around the value'} "
        "(give the value exactly, or leave the parameter out)"
        for key, value in raw.items()
        if key in _OUR_KEYS and (not value or value != value.strip())
    ]
    if problems:
        raise MetadataError("; ".join(problems))
    return dict(raw)


def _target(metadata: ScalerMetadata, *, exact: bool) -> Target:
    if metadata.pod_selector is None:
        return Target(metadata.namespace, workload=metadata.workload, profile=metadata.profile)
    try:
        selector = parse_selector(metadata.pod_selector)
    except ValueError as exc:
        raise MetadataError(f"podSelector: {exc}") from exc
    if exact and not re.fullmatch(SELECTOR_PATTERN, metadata.pod_selector):
        raise MetadataError(
            "podSelector: only spaces may separate its words, none around the whole "
            "(the documented pattern)"
        )
    return Target(metadata.namespace, selector=selector, profile=metadata.profile)


def _describe(error: ErrorDetails) -> str:
    location = ".".join(str(part) for part in error["loc"]) or "metadata"
    return f"{location}: {error['msg']}"


_OUR_KEYS = frozenset(field.alias or name for name, field in ScalerMetadata.model_fields.items())
