"""The `keda:` section of the settings tree: the external scaler's port, TLS and addresses.

`autoscaler.settings.tree.Settings` mounts `KedaSettings` as `keda:`; the section conventions
(frozen, camelCase, unknown keys rejected, durations) come from `autoscaler.settings.base`.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Self

from pydantic import Field, model_validator

from autoscaler.settings.base import Duration, Section

SERVICE_NAME = "idle-gpu-autoscaler"  # the chart's Service, whose DNS names are ours


class KedaTlsSettings(Section):
    cert_file: Path | None = Field(
        None,
        description="PEM server certificate. With `keyFile`, the gRPC port speaks TLS only; "
        "KEDA then needs `enableTLS` or a TriggerAuthentication with `caCert`.",
    )
    key_file: Path | None = Field(None, description="PEM private key of `certFile`.")
    client_ca_file: Path | None = Field(
        None,
        description="PEM CA bundle: when set, every client must present a certificate it "
        "signed (mutual TLS; KEDA's `tlsClientCert`/`tlsClientKey`). Needs `certFile`.",
    )

    @model_validator(mode="after")
    def _complete(self) -> Self:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("certFile: certFile and keyFile go together: set both or neither")
        if self.client_ca_file is not None and self.cert_file is None:
            raise ValueError("clientCaFile: mutual TLS needs certFile and keyFile too: set them")
        return self

    @property
    def enabled(self) -> bool:
        return self.cert_file is not None


class KedaSettings(Section):
    enabled: bool = Field(
        False,
        description="Serve KEDA's external-scaler protocol (gRPC) and the metrics-api "
        "endpoint, so a ScaledObject can use the idle signal. Off by default: no port is opened "
        "unless someone asks for it.",
    )
    port: int = Field(9090, ge=1, le=65535, description="gRPC port of the external scaler.")
    tls: KedaTlsSettings = Field(
        default_factory=KedaTlsSettings,
        description="Server certificate and key, and a client CA for mutual TLS (KEDA's "
        "TriggerAuthentication carries the matching caCert / tlsClientCert / tlsClientKey). "
        "Unset: plaintext.",
    )
    self_addresses: list[str] = Field(
        default_factory=list,
        description="host[:port] names that reach this service. A ScaledObject whose "
        "scalerAddress or metrics-api url host is one of them is KEDA-managed (never patched "
        "by the loop). Empty: the chart Service's DNS names in cluster.serviceNamespace.",
    )
    metrics_api_readers: list[str] = Field(
        default_factory=list,
        description="Usernames that alone may read the metrics-api endpoint "
        "(`/api/v1/keda/metrics`), in every namespace: KEDA's own, e.g. "
        "`system:serviceaccount:keda:keda-operator`, or the username of a static token. "
        "Empty: a caller needs what the listing needs, `list` on Kueue Workloads in the "
        "namespace asked about (nothing more with `api.readsOpen`). Either way the answer "
        "tells whether a workload exists, its utilization and why.",
    )
    heartbeat_interval: Duration = Field(
        timedelta(seconds=30),
        description="StreamIsActive (external-push) repeats the current answer this often "
        "when nothing changed, so a silently broken stream is noticed.",
    )

    @model_validator(mode="after")
    def _positive_heartbeat(self) -> Self:
        if self.heartbeat_interval <= timedelta(0):
            raise ValueError("heartbeatInterval: must be longer than 0s")
        return self

    def addresses(self, namespace: str) -> tuple[str, ...]:
        """`selfAddresses`, or by default the chart Service's names in `namespace`."""
        if self.self_addresses:
            return tuple(self.self_addresses)
        return default_self_addresses(namespace, port=self.port)


def default_self_addresses(namespace: str, *, port: int) -> tuple[str, ...]:
    host = f"{SERVICE_NAME}.{namespace}.svc"
    return (f"{host}:{port}", f"{host}.cluster.local:{port}")
