"""A trigger's `scalerMetadata` (or the metrics-api query string) read into a `Target`.

KEDA passes the trigger's whole metadata, its own keys included. Those are accepted and
ignored; the TLS ones among them are reported, because KEDA reads TLS material only from a
TriggerAuthentication and a user who put it in metadata believes it is in force. Any other
unknown key is an error naming it: a typo must not silently judge something else.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import ErrorDetails

from autoscaler.core.errors import AutoscalerError
from autoscaler.domain.models import DEFAULT_PROFILE
from autoscaler.domain.text import LABEL_PATTERN, SUBDOMAIN_PATTERN, some
from autoscaler.keda.selectors import parse_selector
from autoscaler.keda.targets import Target

KEDA_KEYS = frozenset({"scalerAddress", "enableTLS", "unsafeSsl"})
KEDA_TLS_KEYS = frozenset({"caCert", "tlsClientCert", "tlsClientKey", "tlsCertFile"})


class MetadataError(AutoscalerError):
    """The trigger's metadata cannot select a target; the message says how to fix it."""


class ScalerMetadata(BaseModel):
    """Our keys of the trigger metadata. Values arrive as strings, as KEDA sends them."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    namespace: str = Field(
        min_length=1,
        max_length=63,
        pattern=LABEL_PATTERN,
        description="Namespace of the target; the ScaledObject's own when omitted (gRPC).",
    )
    workload: str | None = Field(
        None,
        min_length=1,
        max_length=253,
        pattern=SUBDOMAIN_PATTERN,
        description="A Kueue Workload's name.",
    )
    pod_selector: str | None = Field(
        None,
        alias="podSelector",
        min_length=1,
        max_length=1024,
        description="Label selector over the namespace's running GPU pods (a Deployment).",
    )
    profile: str = Field(
        DEFAULT_PROFILE,
        min_length=1,
        max_length=63,
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
) -> ParsedMetadata:
    """Raises MetadataError naming the unknown keys (the first few) or invalid values."""
    ours = {k: v.strip() for k, v in raw.items() if k not in KEDA_KEYS | KEDA_TLS_KEYS}
    ours = {k: v for k, v in ours.items() if v}  # an empty value means "not given"
    unknown = sorted(set(ours) - _OUR_KEYS)
    if unknown:
        raise MetadataError(
            f"unknown scalerMetadata keys: {some(unknown)} "
            f"(expected {', '.join(sorted(_OUR_KEYS))})"
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
    return ParsedMetadata(_target(metadata), tuple(sorted(KEDA_TLS_KEYS & set(raw))))


def _target(metadata: ScalerMetadata) -> Target:
    if metadata.pod_selector is None:
        return Target(metadata.namespace, workload=metadata.workload, profile=metadata.profile)
    try:
        selector = parse_selector(metadata.pod_selector)
    except ValueError as exc:
        raise MetadataError(f"podSelector: {exc}") from exc
    return Target(metadata.namespace, selector=selector, profile=metadata.profile)


def _describe(error: ErrorDetails) -> str:
    location = ".".join(str(part) for part in error["loc"]) or "metadata"
    return f"{location}: {error['msg']}"


_OUR_KEYS = frozenset(field.alias or name for name, field in ScalerMetadata.model_fields.items())
