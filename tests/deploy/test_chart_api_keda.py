"""The chart's `api:` and `keda:` sections: ports owned by the chart, the Service's names as
selfAddresses, the Secrets the settings point at mounted, and bad values refused."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from autoscaler.engine.cycle.keda_managed import keda_managed_targets
from autoscaler.settings.api import ApiSettings
from tests.deploy.tooling import (
    CHART,
    NAMESPACE,
    RELEASE,
    VALUE_SETS,
    Manifest,
    deployment_pod,
    mounted_source,
    notes,
    one,
    render,
    render_release,
    settings_from,
    template_result,
    the_container,
    values_args,
)

ALL_ON = CHART / "ci" / "all-optional-on-values.yaml"
KEDA_ON = ("--set", "keda.enabled=true")


def named_ports(manifests: list[Manifest]) -> dict[str, tuple[int, int]]:
    """Port name -> (Service port, container port) through the Service's targetPort."""
    container = {p["name"]: p["containerPort"] for p in the_container(manifests)["ports"]}
    service = one(manifests, "Service")["spec"]["ports"]
    return {p["name"]: (p["port"], container[p["targetPort"]]) for p in service}


@pytest.mark.real
@pytest.mark.parametrize("values_file", VALUE_SETS)
def test_settings_listen_on_the_container_ports_the_service_targets(
    values_file: Path | None, tmp_path: Path
) -> None:
    manifests = render(*values_args(values_file))
    settings = settings_from(manifests, tmp_path)
    ports = named_ports(manifests)
    assert settings.api.host == "0.0.0.0"
    assert settings.api.port == ports["http"][1]
    assert settings.keda.port == ports["grpc"][1]


@pytest.mark.real
def test_moving_the_service_ports_keeps_the_container_ports(tmp_path: Path) -> None:
    manifests = render("--set", "service.httpPort=80", "--set", "service.grpcPort=443")
    settings = settings_from(manifests, tmp_path)
    assert named_ports(manifests) == {"http": (80, 8080), "grpc": (443, 9090)}
    assert (settings.api.port, settings.keda.port) == (8080, 9090)
    assert f"{RELEASE}.{NAMESPACE}.svc.cluster.local:443" in settings.keda.self_addresses


@pytest.mark.real
@pytest.mark.parametrize(
    ("release", "namespace", "fullname"),
    [
        pytest.param(RELEASE, NAMESPACE, RELEASE, id="documented-release"),
        pytest.param(
            "gpu-reclaimer", "ml-platform", "gpu-reclaimer-idle-gpu-autoscaler", id="other"
        ),
    ],
)
def test_self_addresses_are_the_release_service_names(
    release: str, namespace: str, fullname: str, tmp_path: Path
) -> None:
    manifests = render_release(release, namespace, *KEDA_ON)
    assert one(manifests, "Service")["metadata"]["name"] == fullname
    host = f"{fullname}.{namespace}.svc"
    assert settings_from(manifests, tmp_path).keda.self_addresses == [
        f"{host}:9090",
        f"{host}.cluster.local:9090",
        f"{host}:8080",
        f"{host}.cluster.local:8080",
    ]


@pytest.mark.real
def test_self_addresses_set_by_the_user_are_kept(tmp_path: Path) -> None:
    manifests = render(*KEDA_ON, "--set", "keda.selfAddresses={gpu-idle.example.com:443}")
    assert settings_from(manifests, tmp_path).keda.self_addresses == ["gpu-idle.example.com:443"]


@pytest.mark.real
def test_the_metrics_api_readers_reach_the_settings(tmp_path: Path) -> None:
    keda = "system:serviceaccount:keda:keda-operator"
    assert settings_from(render(*KEDA_ON), tmp_path).keda.metrics_api_readers == []
    manifests = render(*KEDA_ON, "--set", f"keda.metricsApiReaders={{{keda}}}")
    assert settings_from(manifests, tmp_path).keda.metrics_api_readers == [keda]


@pytest.mark.real
def test_the_loop_sees_the_chart_keda_example_as_pointing_at_itself(tmp_path: Path) -> None:
    manifests = render(*values_args(ALL_ON))
    settings = settings_from(manifests, tmp_path)
    scaled_object = one(manifests, "ScaledObject")
    addresses = settings.keda.addresses(settings.cluster.service_namespace)
    (target,) = keda_managed_targets([scaled_object], self_addresses=addresses)
    assert (target.namespace, target.name) == ("inference", "llm-server")


@pytest.mark.real
@pytest.mark.parametrize(
    "url",
    [
        pytest.param(f"http://{RELEASE}.{NAMESPACE}.svc:8080/api/v1/keda/metrics", id="short"),
        pytest.param(
            f"http://{RELEASE}.{NAMESPACE}.svc.cluster.local:8080/api/v1/keda/metrics",
            id="fully-qualified",
        ),
    ],
)
def test_a_metrics_api_trigger_on_the_http_port_is_recognised(url: str, tmp_path: Path) -> None:
    settings = settings_from(render(*KEDA_ON), tmp_path)
    scaled_object = {
        "metadata": {"namespace": "inference", "name": "llm"},
        "spec": {
            "scaleTargetRef": {"name": "llm-server"},
            "triggers": [{"type": "metrics-api", "metadata": {"url": url}}],
        },
    }
    addresses = settings.keda.addresses(settings.cluster.service_namespace)
    assert keda_managed_targets([scaled_object], self_addresses=addresses) != ()


@pytest.mark.real
def test_defaults_mount_no_token_or_tls_secret(tmp_path: Path) -> None:
    manifests = render()
    settings = settings_from(manifests, tmp_path)
    assert settings.api.auth.mode == "tokenReview"
    assert settings.api.auth.static_tokens_file is None
    assert not settings.keda.enabled and not settings.keda.tls.enabled
    volumes = {volume["name"] for volume in deployment_pod(manifests)["volumes"]}
    assert volumes == {"config", "tmp"}


@pytest.mark.real
def test_the_connection_bounds_are_the_model_s_defaults_and_can_be_set(tmp_path: Path) -> None:
    defaults = ApiSettings()
    bounds = ("header_timeout", "idle_timeout", "max_connections")
    api = settings_from(render(), tmp_path).api
    assert [getattr(api, key) for key in bounds] == [getattr(defaults, key) for key in bounds]
    manifests = render(
        "--set", "api.headerTimeout=3s", "--set", "api.idleTimeout=75s",
        "--set", "api.maxConnections=512",
    )  # fmt: skip
    api = settings_from(manifests, tmp_path).api
    assert [getattr(api, key) for key in bounds] == [
        timedelta(seconds=3),
        timedelta(seconds=75),
        512,
    ]


@pytest.mark.real
def test_static_tokens_file_is_the_mounted_secret(tmp_path: Path) -> None:
    manifests = render(*values_args(ALL_ON))
    auth = settings_from(manifests, tmp_path).api.auth
    assert auth.mode == "static"
    source = mounted_source(manifests, auth.static_tokens_file)
    assert source == ("idle-gpu-autoscaler-api-tokens", "tokens.yaml")


@pytest.mark.real
def test_keda_tls_files_are_the_mounted_secrets(tmp_path: Path) -> None:
    manifests = render(*values_args(ALL_ON), "--set", "keda.tls.certKey=server.pem")
    tls = settings_from(manifests, tmp_path).keda.tls
    assert mounted_source(manifests, tls.cert_file) == (
        "idle-gpu-autoscaler-keda-tls",
        "server.pem",
    )
    assert mounted_source(manifests, tls.key_file) == ("idle-gpu-autoscaler-keda-tls", "tls.key")
    assert mounted_source(manifests, tls.client_ca_file) == ("keda-client-ca", "ca.crt")


@pytest.mark.real
def test_server_tls_without_a_client_ca_asks_for_no_client_certificate(tmp_path: Path) -> None:
    manifests = render(*values_args(CHART / "ci" / "openshift-thanos-values.yaml"))
    tls = settings_from(manifests, tmp_path).keda.tls
    assert tls.enabled and tls.client_ca_file is None
    assert mounted_source(manifests, tls.cert_file) == ("idle-gpu-autoscaler-keda-tls", "tls.crt")


@pytest.mark.real
def test_the_keda_example_authenticates_as_the_server_asks() -> None:
    manifests = render(*values_args(ALL_ON))
    auth = one(manifests, "TriggerAuthentication")["spec"]["secretTargetRef"]
    assert {ref["parameter"] for ref in auth} == {"caCert", "tlsClientCert", "tlsClientKey"}


@pytest.mark.real
@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        pytest.param(
            ("--set", "api.port=9000"), "additional properties 'port' not allowed", id="api-port"
        ),
        pytest.param(
            ("--set", "api.host=127.0.0.1"),
            "additional properties 'host' not allowed",
            id="api-host-is-the-chart-s",
        ),
        pytest.param(
            ("--set", "keda.port=9091"), "additional properties 'port' not allowed", id="keda-port"
        ),
        pytest.param(("--set", "api.auth.mode=oauth"), "/api/auth/mode", id="unknown-auth-mode"),
        pytest.param(
            ("--set", "api.auth.mode=static"),
            "/api/auth/staticTokens/secretName",
            id="static-mode-without-a-secret",
        ),
        pytest.param(
            ("--set", "api.auditRecordLimit=5000"), "/api/auditRecordLimit", id="audit-limit"
        ),
        pytest.param(
            ("--set", "api.maxExemption=0s"),
            "api.maxExemption was removed at 1.0: set exemptions.maxDuration in a rule named "
            "default, last in config.rules",
            id="zero-exemption",
        ),
        pytest.param(
            ("--set-string", "api.readsOpen=yes"), "/api/readsOpen", id="reads-open-as-string"
        ),
        pytest.param(("--set", "api.headerTimeout=0s"), "/api/headerTimeout", id="header-0s"),
        pytest.param(("--set", "api.idleTimeout=soon"), "/api/idleTimeout", id="idle-soon"),
        pytest.param(("--set", "api.maxConnections=1"), "/api/maxConnections", id="one-conn"),
        pytest.param(
            ("--set", "keda.profiles.default.idleWindow=5m"),
            "keda.profiles was removed at 1.0: write a rule per profile in config.rules",
            id="reserved-profile-name",
        ),
        pytest.param(
            ("--set", "keda.profiles.fast.idleWindow=15m"),
            "keda.profiles was removed at 1.0: write a rule per profile in config.rules",
            id="profile-without-threshold",
        ),
        pytest.param(
            ("--set", "keda.heartbeatInterval=often"),
            "/keda/heartbeatInterval",
            id="bad-heartbeat",
        ),
        pytest.param(
            ("--set", "keda.tls.certFile=/tls/tls.crt"),
            "additional properties 'certFile' not allowed",
            id="tls-files-are-the-chart-s",
        ),
    ],
)
def test_schema_rejects_a_bad_api_or_keda_value(args: tuple[str, ...], complaint: str) -> None:
    code, _, err = template_result(*args)
    assert code != 0
    assert complaint in err, err


@pytest.mark.real
@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        pytest.param(
            ("--set", "kedaExample.enabled=true", "--set", "kedaExample.scaleTargetRef.name=llm"),
            "kedaExample.enabled needs keda.enabled=true",
            id="example-without-the-scaler",
        ),
        pytest.param(
            (*KEDA_ON, "--set", "keda.tls.clientCa.secretName=ca"),
            "needs keda.tls.secretName",
            id="client-ca-without-server-certificate",
        ),
        pytest.param(
            (*values_args(ALL_ON), "--set", "kedaExample.tls.enabled=false"),
            "set kedaExample.tls.enabled=true",
            id="example-plaintext-to-a-tls-scaler",
        ),
        pytest.param(
            (*values_args(ALL_ON), "--set", "kedaExample.tls.clientSecretName="),
            "kedaExample.tls.clientSecretName is required",
            id="example-without-a-client-certificate-for-mutual-tls",
        ),
    ],
)
def test_inconsistent_keda_values_fail_with_a_message(
    args: tuple[str, ...], complaint: str
) -> None:
    code, _, err = template_result(*args)
    assert code != 0
    assert complaint in err, err


@pytest.mark.real
@pytest.mark.parametrize(
    ("args", "scaler_shown"),
    [
        pytest.param((), False, id="scaler-off-by-default"),
        pytest.param(KEDA_ON, True, id="scaler-on"),
    ],
)
def test_notes_show_the_scaler_addresses_only_when_it_is_served(
    args: tuple[str, ...], scaler_shown: bool
) -> None:
    text = notes(*args)
    host = f"{RELEASE}.{NAMESPACE}.svc.cluster.local"
    assert (f"scalerAddress: {host}:9090" in text) is scaler_shown
    assert (f"url: http://{host}:8080/api/v1/keda/metrics" in text) is scaler_shown
    assert ("keda.enabled=true" in text) is not scaler_shown
