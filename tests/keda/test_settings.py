from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from autoscaler.domain.usage.idleness import UsageRules
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
            "profiles": {"fast": {"idleWindow": "15m", "thresholdPercent": 10}},
        }
    )
    assert settings.heartbeat_interval == timedelta(seconds=10)
    assert settings.profiles["fast"].idle_window == timedelta(minutes=15)
    assert settings.tls.client_ca_file is not None


def test_profiles_become_usage_rules_sharing_the_policys_slot_coverage_and_staleness() -> None:
    base = UsageRules(
        threshold=0.05,
        window=timedelta(hours=1),
        slot=timedelta(minutes=1),
        min_coverage=0.8,
        stale_after=timedelta(minutes=3),
    )
    settings = KedaSettings.model_validate(
        {"profiles": {"fast": {"idleWindow": "15m", "thresholdPercent": 10}}}
    )
    fast = settings.profile_rules(base)["fast"]
    assert (fast.window, fast.threshold) == (timedelta(minutes=15), pytest.approx(0.10))
    assert (fast.slot, fast.min_coverage, fast.stale_after) == (
        base.slot,
        base.min_coverage,
        base.stale_after,
    )


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param({"prot": 9090}, id="unknown-key"),
        pytest.param({"port": 0}, id="port-zero"),
        pytest.param(
            {"profiles": {"default": {"idleWindow": "1h", "thresholdPercent": 5}}},
            id="reserved-profile-name",
        ),
        pytest.param(
            {"profiles": {"Fast_1": {"idleWindow": "1h", "thresholdPercent": 5}}},
            id="profile-name-not-a-label",
        ),
        pytest.param(
            {"profiles": {"fast": {"idleWindow": "1h", "thresholdPercent": 100}}},
            id="threshold-of-100",
        ),
        pytest.param(
            {"profiles": {"fast": {"idleWindow": "soon", "thresholdPercent": 5}}},
            id="window-not-a-duration",
        ),
        pytest.param({"heartbeatInterval": "0s"}, id="no-heartbeat"),
        pytest.param({"tls": {"keyFile": "/tls/tls.key"}}, id="key-without-certificate"),
    ],
)
def test_invalid_keda_settings_are_refused(raw: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        KedaSettings.model_validate(raw)


def test_settings_dump_to_the_same_yaml_shape_they_read() -> None:
    raw = {"profiles": {"fast": {"idleWindow": "15m", "thresholdPercent": 10.0}}}
    dumped = KedaSettings.model_validate(raw).model_dump(mode="json", by_alias=True)
    assert dumped["profiles"] == raw["profiles"]
    assert dumped["heartbeatInterval"] == "30s"
