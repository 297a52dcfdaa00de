"""TLS and mutual TLS on the gRPC port, as KEDA's enableTLS / caCert / tlsClientCert use them."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from pydantic import ValidationError

from autoscaler.core.errors import ConfigError
from autoscaler.domain.models import Snapshot
from autoscaler.settings.keda import KedaTlsSettings
from tests.keda.certs import Authority, make_authority, write
from tests.keda.rig import DEADLINE, keda_ref, running_scaler, stub_for
from tests.keda.snapshots import a_snapshot
from tests.support.domain_builders import NOW, a_workload, usage

REF = keda_ref({"workload": "rc"}, keda_keys={"enableTLS": "true"})


@pytest.fixture
def server_ca() -> Authority:
    return make_authority("server-ca")


@pytest.fixture
def client_ca() -> Authority:
    return make_authority("client-ca")


def server_tls(
    tmp_path: Path, server_ca: Authority, client_ca: Authority | None
) -> KedaTlsSettings:
    cert, key = write(server_ca.issue("idle-gpu-autoscaler", server=True), tmp_path, "server")
    ca_file = None
    if client_ca is not None:
        ca_file = tmp_path / "client-ca.pem"
        ca_file.write_bytes(client_ca.cert)
    return KedaTlsSettings(cert_file=cert, key_file=key, client_ca_file=ca_file)


def client_credentials(server_ca: Authority, client: Authority | None) -> grpc.ChannelCredentials:
    if client is None:
        return grpc.ssl_channel_credentials(root_certificates=server_ca.cert)
    pair = client.issue("keda-operator", server=False)
    return grpc.ssl_channel_credentials(
        root_certificates=server_ca.cert, private_key=pair.key, certificate_chain=pair.cert
    )


def is_active(target: str, credentials: grpc.ChannelCredentials | None) -> bool:
    with stub_for(target, credentials) as stub:
        return stub.IsActive(REF, timeout=DEADLINE).result


def busy_snapshot() -> Snapshot:
    rc = a_workload("ml", "rc").gpu_pod("rc-0").build()
    return a_snapshot(rc, usage_of=usage().gpu("ml", "rc-0", peak=0.9, last_busy=NOW))


def test_with_a_server_certificate_a_client_trusting_its_ca_is_answered(
    tmp_path: Path, server_ca: Authority
) -> None:
    with running_scaler(tls=server_tls(tmp_path, server_ca, None)) as scaler:
        scaler.publish(busy_snapshot())
        assert is_active(scaler.target, client_credentials(server_ca, None)) is True


def test_with_tls_a_plaintext_client_is_refused(tmp_path: Path, server_ca: Authority) -> None:
    with running_scaler(tls=server_tls(tmp_path, server_ca, None)) as scaler:
        with pytest.raises(grpc.RpcError) as caught:
            is_active(scaler.target, None)
        assert caught.value.code() is grpc.StatusCode.UNAVAILABLE


def test_with_mutual_tls_a_client_certificate_from_the_client_ca_is_answered(
    tmp_path: Path, server_ca: Authority, client_ca: Authority
) -> None:
    with running_scaler(tls=server_tls(tmp_path, server_ca, client_ca)) as scaler:
        scaler.publish(busy_snapshot())
        assert is_active(scaler.target, client_credentials(server_ca, client_ca)) is True


@pytest.mark.parametrize("presents", ["nothing", "a-certificate-from-another-ca"])
def test_with_mutual_tls_other_clients_are_refused(
    tmp_path: Path, server_ca: Authority, client_ca: Authority, presents: str
) -> None:
    stranger = make_authority("stranger") if presents != "nothing" else None
    with running_scaler(tls=server_tls(tmp_path, server_ca, client_ca)) as scaler:
        with pytest.raises(grpc.RpcError) as caught:
            is_active(scaler.target, client_credentials(server_ca, stranger))
        assert caught.value.code() is grpc.StatusCode.UNAVAILABLE


def test_an_unreadable_certificate_fails_the_start_naming_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "absent.pem"
    with (
        pytest.raises(ConfigError, match=r"absent\.pem"),
        running_scaler(tls=KedaTlsSettings(cert_file=missing, key_file=missing)),
    ):
        pass


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"certFile": "/tls/tls.crt"}, id="certificate-without-key"),
        pytest.param({"clientCaFile": "/tls/ca.crt"}, id="client-ca-without-server-certificate"),
    ],
)
def test_incomplete_tls_settings_are_refused(fields: dict[str, str]) -> None:
    with pytest.raises(ValidationError):
        KedaTlsSettings.model_validate(fields)
