"""Secure defaults the chart renders and says: reads need a token unless opened on purpose, and
NOTES warns that the gRPC scaler is plaintext and unauthenticated until TLS (and a client CA for
mutual TLS) is set, and that without the NetworkPolicy every pod reaches the service."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deploy.tooling import notes, render, settings_from

KEDA_ON = ("--set", "keda.enabled=true")
SERVER_TLS = ("--set", "keda.tls.secretName=iga-tls")
CLIENT_CA = ("--set", "keda.tls.clientCa.secretName=keda-client-ca")
PLAINTEXT = "PLAINTEXT and UNAUTHENTICATED"
NO_CLIENT_CERT = "asks no client certificate"


@pytest.mark.real
@pytest.mark.parametrize(
    ("args", "reads_open"),
    [
        pytest.param((), False, id="closed-by-default"),
        pytest.param(("--set", "api.readsOpen=true"), True, id="opened-on-purpose"),
    ],
)
def test_reads_need_a_token_unless_opened(
    args: tuple[str, ...], reads_open: bool, tmp_path: Path
) -> None:
    assert settings_from(render(*args), tmp_path).api.reads_open is reads_open
    text = notes(*args)
    assert ('-H "Authorization: Bearer $TOKEN" localhost:8080/api/v1/workloads' in text) is (
        not reads_open
    )


@pytest.mark.real
@pytest.mark.parametrize(
    ("args", "plaintext", "no_client_cert"),
    [
        pytest.param(KEDA_ON, True, False, id="plaintext-by-default"),
        pytest.param((*KEDA_ON, *SERVER_TLS), False, True, id="tls-without-client-ca"),
        pytest.param((*KEDA_ON, *SERVER_TLS, *CLIENT_CA), False, False, id="mutual-tls"),
    ],
)
def test_notes_warn_until_the_scaler_speaks_mutual_tls(
    args: tuple[str, ...], plaintext: bool, no_client_cert: bool
) -> None:
    text = notes(*args)
    assert (PLAINTEXT in text) is plaintext
    assert (NO_CLIENT_CERT in text) is no_client_cert


@pytest.mark.real
def test_the_plaintext_warning_says_how_to_turn_on_mutual_tls() -> None:
    text = notes(*KEDA_ON)
    assert "--set keda.tls.secretName=" in text
    assert "--set keda.tls.clientCa.secretName=" in text
    assert "(the NetworkPolicy admits keda)" in text


@pytest.mark.real
def test_with_the_scaler_off_notes_still_say_it_would_be_plaintext() -> None:
    text = notes()
    assert PLAINTEXT not in text
    assert "plaintext and unauthenticated unless keda.tls is set" in text


@pytest.mark.real
@pytest.mark.parametrize(
    ("args", "warned"),
    [
        pytest.param((), False, id="policy-on-by-default"),
        pytest.param(("--set", "networkPolicy.enabled=false"), True, id="policy-off"),
    ],
)
def test_notes_warn_when_the_network_policy_is_off(args: tuple[str, ...], warned: bool) -> None:
    assert ("networkPolicy.enabled is false" in notes(*args)) is warned
