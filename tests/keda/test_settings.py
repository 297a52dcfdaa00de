from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from autoscaler.settings.keda import KedaSettings


def test_the_defaults_serve_nothing_until_enabled_on_port_9090_in_plaintext() -> None:
    settings = KedaSettings()
    assert (settings.enabled, settings.port, settings.tls.enabled) == (False, 9090, False)
    assert settings.heartbeat_interval == timedelta(seconds=30)


def test_self_addresses_default_to_the_chart_services_dns_names() -> None:
    assert KedaSettings().addresses("gpu-ops") == (
        "idle-gpu-autoscaler.gpu-ops.svc:9090",
        "idle-gpu-autoscaler.gpu-ops.svc.cluster.local:9090",
    )


def test_configured_self_addresses_replace_the_defaults() -> None:
    settings = KedaSettings.model_validate({"selfAddresses": ["scaler.example.com:443"]})
    assert settings.addresses("gpu-ops") == ("scaler.example.com:443",)


def test_yaml_keys_are_camel_case_with_durations_as_text() -> None:
    settings = KedaSettings.model_validate(
        {
            "enabled": True,
            "port": 9443,
            "heartbeatInterval": "10s",
            "tls": {"certFile": "/tls/tls.crt", "keyFile": "/tls/tls.key", "clientCaFile": "/ca"},
            "selfAddresses": ["scaler.example.com:443"],
        }
    )
    assert settings.heartbeat_interval == timedelta(seconds=10)
    assert settings.self_addresses == ["scaler.example.com:443"]
    assert settings.tls.client_ca_file is not None


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param({"prot": 9090}, id="unknown-key"),
        pytest.param({"port": 0}, id="port-zero"),
        pytest.param(
            {"profiles": {"fast": {"idleWindow": "1h", "thresholdPercent": 5}}},
            id="removed-profiles",
        ),
        pytest.param({"heartbeatInterval": "0s"}, id="no-heartbeat"),
        pytest.param({"tls": {"keyFile": "/tls/tls.key"}}, id="key-without-certificate"),
    ],
)
def test_invalid_keda_settings_are_refused(raw: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        KedaSettings.model_validate(raw)


def test_settings_dump_to_the_same_yaml_shape_they_read() -> None:
    raw = {"tls": {"certFile": "/tls/tls.crt", "keyFile": "/tls/tls.key", "clientCaFile": None}}
    dumped = KedaSettings.model_validate(raw).model_dump(mode="json", by_alias=True)
    assert dumped["tls"] == raw["tls"]
    assert dumped["heartbeatInterval"] == "30s"
