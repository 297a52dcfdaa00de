"""The REST API's settings: where it listens, who may read and change, what the audit keeps.

Mounted as `api:` in the service's settings tree (camelCase keys in YAML, like the rest).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from autoscaler.settings.base import POSITIVE, Duration
from autoscaler.settings.base import Section as _Section


class AuthSettings(_Section):
    mode: Literal["tokenReview", "static"] = Field(
        "tokenReview",
        description="tokenReview: bearer tokens are checked with the Kubernetes TokenReview API "
        "and changes with SubjectAccessReview, so Kubernetes RBAC decides. static: tokens and "
        "their rights come from `staticTokensFile`, for clusters that do not let the service "
        "create reviews. Off by default: a file of long-lived tokens is a weaker secret.",
    )
    static_tokens_file: Path | None = Field(
        None,
        description="YAML file (mount it from a Secret) listing `tokens: [{token, username, "
        "groups, namespaces, readNamespaces, admin}]`: each entry is one identity with its own "
        "rights (read and change in `namespaces`, `['*']` meaning every namespace; only read in "
        "`readNamespaces`). A username or token listed twice is refused. Required when mode is "
        "static.",
    )
    audiences: list[str] = Field(
        default_factory=list,
        description="TokenReview audiences a token must be issued for; empty accepts the API "
        "server's own audience, which is what `kubectl` tokens carry.",
    )


class AdminVerbSettings(_Section):
    """The SubjectAccessReview that makes a caller an admin (global pause, deactivate now)."""

    verb: str = Field("update", description="Verb the caller must hold.")
    group: str = Field("", description="API group of the resource; empty is the core group.")
    resource: str = Field("configmaps", description="Resource (plural) the verb applies to.")
    name: str | None = Field(
        None,
        description="Object name; unset means the runtime-state ConfigMap, so whoever may "
        "rewrite the kill switch by hand is an admin here too.",
    )
    namespace: str | None = Field(
        None, description="Namespace of that object; unset means the service's namespace."
    )


class ApiSettings(_Section):
    host: str = Field(
        "0.0.0.0",
        description="Address to listen on. All interfaces in a pod (the Service and the "
        "kubelet's probes come from outside the loopback); 127.0.0.1 on a workstation.",
    )
    port: int = Field(
        8080,
        ge=0,
        le=65535,
        description="TCP port for the REST API, /healthz, /readyz and /metrics; the chart's "
        "named port `http`. 0 picks a free port (tests).",
    )
    reads_open: bool = Field(
        False,
        description="Answer GET requests under /api without a token or access review. Off by "
        "default: workloads, reasons and the audit trail's actors belong to their tenants, so "
        "a read needs `list` on Kueue Workloads in the namespace read (every namespace for an "
        "unnarrowed listing; the admin permission for the whole audit trail). Turn on only "
        "where every pod may see every tenant's workloads. Changes always need a token.",
    )
    max_request_bytes: int = Field(
        64 * 1024,
        ge=1024,
        le=16 * 1024 * 1024,
        description="Largest request body, in bytes, checked before the body is read: a "
        "larger one is answered 413 at once (declared Content-Length) or as soon as the "
        "streamed body passes it. Every body the API takes is a few hundred bytes; 64 KiB "
        "leaves room and keeps one caller from filling the pod's memory.",
    )
    max_header_bytes: int = Field(
        32 * 1024,
        ge=4096,
        le=1024 * 1024,
        description="Largest request line plus headers, in bytes: a head still arriving is "
        "refused (400) once past it, a whole one larger than it is answered 431, and the "
        "connection closed either way. 32 KiB holds the longest token we accept (16 KiB) and "
        "the usual headers.",
    )
    header_timeout: Duration = Field(
        timedelta(seconds=10),
        description="Longest wait for a request's line and headers, from the connection's "
        "opening (on a kept-alive connection, from the next request's first byte); then the "
        "connection is closed. Real clients send their head at once; this bounds one that "
        "trickles it (slowloris).",
        json_schema_extra=POSITIVE,
    )
    idle_timeout: Duration = Field(
        timedelta(seconds=5),
        description="How long a kept-alive connection may wait for its next request before it "
        "is closed (uvicorn's keep-alive timeout, and its default). Behind a proxy that keeps "
        "idle upstream connections, set it above the proxy's own idle timeout.",
        json_schema_extra=POSITIVE,
    )
    max_connections: int = Field(
        256,
        ge=8,
        le=65536,
        description="Most open connections. One more closes, oldest first, a connection that "
        "waits on its client (for a request, a body, or to read an answer), never one whose "
        "request is being served; only when all are being served is the newcomer closed. So "
        "a client holding connections cannot keep the kubelet's probes out, and the pod's "
        "memory and file descriptors stay bounded (each connection buffers at most "
        "maxHeaderBytes plus maxRequestBytes and a read).",
    )
    serve_docs: bool = Field(
        False,
        description="Serve Swagger UI at /docs. Off by default: the page loads its script "
        "and styles from a public CDN (jsdelivr), which an offline cluster cannot reach and "
        "which a careful one does not want its users' browsers to fetch. The schema itself "
        "is always at /openapi.json, from the package.",
    )
    auth: AuthSettings = Field(
        default_factory=AuthSettings, description="How callers of changes are checked."
    )
    admin: AdminVerbSettings = Field(
        default_factory=AdminVerbSettings,
        description="The permission that makes a caller an admin of this service.",
    )
    allow_indefinite_exemption: bool = Field(
        True,
        description='Honour `idle-gpu-autoscaler.io/exempt: "true"` without an end. When '
        "false, such an annotation is turned into an exemption as long as its rule's "
        "`exemptions.maxDuration`.",
    )
    audit_record_limit: int = Field(
        200,
        ge=1,
        le=1000,
        description="Audit records kept in the runtime-state ConfigMap, newest first. 200 "
        "records stay far below the 1 MiB ConfigMap limit.",
    )
    write_attempts: int = Field(
        5,
        ge=1,
        le=20,
        description="Read-modify-write attempts on the runtime-state ConfigMap when another "
        "replica wrote it first (409); five absorb any realistic race.",
    )

    @model_validator(mode="after")
    def _static_mode_has_tokens(self) -> ApiSettings:
        if self.auth.mode == "static" and self.auth.static_tokens_file is None:
            raise ValueError(
                "auth.staticTokensFile: required when auth.mode is static: the token file's path"
            )
        return self

    @model_validator(mode="after")
    def _timeouts_positive(self) -> ApiSettings:
        if self.header_timeout <= timedelta(0) or self.idle_timeout <= timedelta(0):
            raise ValueError("headerTimeout: headerTimeout and idleTimeout must be longer than 0s")
        return self
