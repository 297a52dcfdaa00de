"""The Helm chart, rendered by the real helm: lint, schema, settings, security, optional parts."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from autoscaler.settings.tree import Settings
from tests.deploy.tooling import (
    CHART,
    NAMESPACE,
    RELEASE,
    VALUE_SETS,
    deployment_pod,
    find,
    helm,
    notes,
    one,
    render,
    run,
    settings_from,
    template_result,
    the_container,
    values_args,
)

# Off by default. The NetworkPolicy is on by default (test_chart_network_policy.py). The
# PodDisruptionBudget is not among them: it comes with the default two
# replicas (test_chart_leader_election.py), and ci/single-replica-values.yaml turns it off.
OPTIONAL_KINDS = {
    "ServiceMonitor",
    "ScaledObject",
    "TriggerAuthentication",
    "Ingress",  # the snooze links' (notifications.links.ingress)
    "Secret",  # the links' generated signing key
    "PrometheusRule",  # the recording rules (test_chart_recording_rules.py)
}


@pytest.mark.real
@pytest.mark.parametrize("values_file", VALUE_SETS)
def test_helm_lint_strict_is_clean(values_file: Path | None) -> None:
    done = run(helm(), "lint", "--strict", str(CHART), *values_args(values_file))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[WARNING]" not in done.stdout and "[ERROR]" not in done.stdout, done.stdout


@pytest.mark.real
@pytest.mark.parametrize("values_file", VALUE_SETS)
def test_rendered_settings_load_in_the_service(values_file: Path | None, tmp_path: Path) -> None:
    settings = settings_from(render(*values_args(values_file)), tmp_path)
    assert settings.cluster.service_namespace == NAMESPACE
    assert settings.cluster.runtime_state_config_map == f"{RELEASE}-state"


@pytest.mark.real
def test_chart_defaults_match_the_service_defaults(tmp_path: Path) -> None:
    rendered = settings_from(render(), tmp_path).model_dump(by_alias=True)
    defaults = Settings().model_dump(by_alias=True)
    # What the install decides, and the defaults the chart changes on purpose: json logs for
    # collectors, leader election for its two replicas (a lone process elects no one), and
    # closed reads (the chart closes them whatever the service's own default).
    for section, key in [
        ("cluster", "serviceNamespace"),
        ("cluster", "runtimeStateConfigMap"),
        ("keda", "selfAddresses"),
        ("logging", "format"),
        ("leaderElection", "enabled"),
        ("api", "readsOpen"),
    ]:
        rendered[section].pop(key)
        defaults[section].pop(key)
    assert rendered == defaults


@pytest.mark.real
@pytest.mark.parametrize(
    ("args", "dry_run"),
    [
        pytest.param((), True, id="install-without-values-is-dry-run"),
        pytest.param(("--set", "dryRun=false"), False, id="explicit-false-acts"),
        pytest.param(("--set", "dryRun=true"), True, id="explicit-true-is-dry-run"),
        pytest.param(("--set", "dryRun=null"), True, id="null-falls-back-to-dry-run"),
        pytest.param(
            ("--set", "config.policy.maxDeactivationsPerCycle=2"),
            True,
            id="upgrade-changing-other-values-is-dry-run-again",
        ),
    ],
)
def test_dry_run_is_on_unless_explicitly_false(
    args: tuple[str, ...], dry_run: bool, tmp_path: Path
) -> None:
    settings = settings_from(render(*args), tmp_path)
    assert settings.policy.dry_run is dry_run


@pytest.mark.real
@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        pytest.param(
            ("--set", "config.policy.thresholdPercnt=3"),
            "additional properties 'thresholdPercnt' not allowed",
            id="misspelt-policy-key",
        ),
        pytest.param(
            ("--set", "config.policy.dryRun=false"),
            "additional properties 'dryRun' not allowed",
            id="dry-run-only-at-top-level",
        ),
        pytest.param(("--set-string", "dryRun=false"), "/dryRun", id="dry-run-as-string"),
        pytest.param(
            ("--set", "config.policy.thresholdPercent=100"),
            "/config/policy/thresholdPercent",
            id="threshold-of-100-percent",
        ),
        pytest.param(
            ("--set", "config.policy.idleWindow=soon"),
            "/config/policy/idleWindow",
            id="bad-duration",
        ),
        pytest.param(
            ("--set", "prometheus.bearerToken.source=vault"),
            "/prometheus/bearerToken/source",
            id="unknown-token-source",
        ),
        pytest.param(
            ("--set", "prometheus.bearerToken.source=secret"),
            "/prometheus/bearerToken/secretName",
            id="secret-token-without-secret-name",
        ),
        pytest.param(
            ("--set", "prometheus.ca.source=configMap"), "/prometheus/ca/name", id="ca-without-name"
        ),
        pytest.param(
            ("--set", "prometheus.url=thanos:9091"), "/prometheus/url", id="url-without-scheme"
        ),
        pytest.param(
            ("--set", "prometheus.rangeSemantics=prometheus-3"),
            "/prometheus/rangeSemantics",
            id="unknown-range-semantics",
        ),
        pytest.param(("--set", "replicaCount=0"), "/replicaCount", id="zero-replicas"),
        pytest.param(
            ("--set", "kedaExample.enabled=true"),
            "/kedaExample/scaleTargetRef/name",
            id="keda-example-without-target",
        ),
        pytest.param(
            ("--set", "servce.type=ClusterIP"), "'servce' not allowed", id="typo-top-level"
        ),
    ],
)
def test_schema_rejects_a_bad_value_naming_it(args: tuple[str, ...], complaint: str) -> None:
    code, _, err = template_result(*args)
    assert code != 0
    assert complaint in err, err


@pytest.mark.real
def test_pod_runs_locked_down_by_default() -> None:
    pod = deployment_pod(render())
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 10001,
        "runAsGroup": 10001,
        "fsGroup": 10001,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    (container,) = pod["containers"]
    security = container["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security["runAsNonRoot"] is True
    assert "resources" not in container


@pytest.mark.real
def test_openshift_leaves_user_and_groups_to_the_scc() -> None:
    pod = deployment_pod(render("--set", "openshift=true"))
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    (container,) = pod["containers"]
    assert "runAsUser" not in container["securityContext"]


@pytest.mark.real
def test_probes_and_service_use_the_named_ports() -> None:
    manifests = render()
    container = the_container(manifests)
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert ports == {"http": 8080, "grpc": 9090}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    service = one(manifests, "Service", RELEASE)
    assert {(p["name"], p["port"], p["targetPort"]) for p in service["spec"]["ports"]} == {
        ("http", 8080, "http"),
        ("grpc", 9090, "grpc"),
    }
    assert container["args"] == ["serve", "--config", "/etc/idle-gpu-autoscaler/config.yaml"]


@pytest.mark.real
def test_a_settings_change_changes_the_pod_checksum() -> None:
    def checksum(*args: str) -> str:
        template = one(render(*args), "Deployment")["spec"]["template"]
        value: str = template["metadata"]["annotations"]["checksum/config"]
        return value

    assert checksum() == checksum()
    assert checksum() != checksum("--set", "config.policy.idleWindow=2h")


@pytest.mark.real
@pytest.mark.parametrize("values_file", VALUE_SETS)
def test_chart_never_renders_the_runtime_state_config_map(values_file: Path | None) -> None:
    manifests = render(*values_args(values_file))
    assert find(manifests, "ConfigMap", f"{RELEASE}-state") == []


@pytest.mark.real
def test_optional_resources_are_off_by_default() -> None:
    kinds = {m["kind"] for m in render()}
    assert not kinds & OPTIONAL_KINDS
    assert not [
        m for m in find(render(), "ConfigMap") if "grafana_dashboard" in m["metadata"]["labels"]
    ]


@pytest.mark.real
def test_all_optional_values_turn_every_optional_resource_on() -> None:
    manifests = render(*values_args(CHART / "ci" / "all-optional-on-values.yaml"))
    assert {m["kind"] for m in manifests} >= OPTIONAL_KINDS | {"PodDisruptionBudget"}
    dashboard = one(manifests, "ConfigMap", f"{RELEASE}-dashboard")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert dashboard["metadata"]["namespace"] == "monitoring"
    binding = one(manifests, "ClusterRoleBinding", f"{RELEASE}-cluster-monitoring-view")
    assert binding["roleRef"]["name"] == "cluster-monitoring-view"


@pytest.mark.real
@pytest.mark.parametrize(
    ("values_name", "token_file", "ca_file"),
    [
        pytest.param("in-cluster-prometheus-values", None, None, id="in-cluster-no-auth"),
        pytest.param(
            "openshift-thanos-values",
            "/var/run/secrets/kubernetes.io/serviceaccount/token",
            "/etc/idle-gpu-autoscaler/prometheus-ca/service-ca.crt",
            id="openshift-thanos-service-account-and-service-ca",
        ),
        pytest.param(
            "token-from-secret-values",
            "/etc/idle-gpu-autoscaler/prometheus-token/token",
            "/etc/idle-gpu-autoscaler/prometheus-ca/ca.crt",
            id="token-from-existing-secret",
        ),
    ],
)
def test_each_prometheus_case_mounts_what_its_settings_point_at(
    values_name: str, token_file: str | None, ca_file: str | None, tmp_path: Path
) -> None:
    manifests = render(*values_args(CHART / "ci" / f"{values_name}.yaml"))
    prometheus = settings_from(manifests, tmp_path).prometheus
    assert str(prometheus.bearer_token_file) == str(token_file)
    assert str(prometheus.ca_file) == str(ca_file)
    container = the_container(manifests)
    mounts = {mount["mountPath"] for mount in container["volumeMounts"]}
    for path in (token_file, ca_file):
        if path and not path.startswith("/var/run/secrets/kubernetes.io/"):
            assert str(Path(path).parent) in mounts


@pytest.mark.real
def test_openshift_service_ca_config_map_asks_for_injection() -> None:
    manifests = render(*values_args(CHART / "ci" / "openshift-thanos-values.yaml"))
    config_map = one(manifests, "ConfigMap", f"{RELEASE}-service-ca")
    assert config_map["metadata"]["annotations"] == {
        "service.beta.openshift.io/inject-cabundle": "true"
    }
    assert "data" not in config_map  # the operator's key must survive upgrades


@pytest.mark.real
@pytest.mark.parametrize(
    ("args", "dry_run_warning", "url_warning"),
    [
        pytest.param((), True, True, id="defaults-warn-of-dry-run-and-missing-url"),
        pytest.param(
            ("--set", "dryRun=false", "--set", "prometheus.url=http://prometheus:9090"),
            False,
            False,
            id="acting-with-a-url-warns-of-neither",
        ),
    ],
)
def test_notes_warn_of_dry_run_and_an_unset_prometheus_url(
    args: tuple[str, ...], dry_run_warning: bool, url_warning: bool
) -> None:
    text = notes(*args)
    assert ("WARNING: dry-run is ON" in text) is dry_run_warning
    assert ("WARNING: prometheus.url is not set" in text) is url_warning
    assert "/readyz" in text and "/api/v1" in text


def test_every_value_in_values_yaml_has_a_comment() -> None:
    lines = (CHART / "values.yaml").read_text(encoding="utf-8").splitlines()
    undocumented = [
        f"line {number}: {line.strip()}"
        for number, line in enumerate(lines, start=1)
        if _is_leaf_key(lines, number - 1) and not _documented(lines, number - 1)
    ]
    assert undocumented == []


def test_values_yaml_is_what_the_schema_accepts() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    values = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    jsonschema.Draft7Validator(schema).validate(values)
    assert values["dryRun"] is True
    assert "dryRun" not in values["config"]["policy"]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _is_key(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith(("#", "- ")) and ":" in stripped


def _next_content(lines: list[str], index: int) -> str | None:
    for line in lines[index + 1 :]:
        if line.strip() and not line.strip().startswith("#"):
            return line
    return None


def _is_leaf_key(lines: list[str], index: int) -> bool:
    """A key whose value is a scalar, a flow collection or a block list (not a nested map)."""
    line = lines[index]
    if not _is_key(line):
        return False
    following = _next_content(lines, index)
    nested_map = (
        line.rstrip().endswith(":")
        and following is not None
        and _indent(following) > _indent(line)
        and _is_key(following)
    )
    return not nested_map


def _documented(lines: list[str], index: int) -> bool:
    """A comment right above, inline, or the first child of a documented parent."""
    line = lines[index]
    if " # " in line:
        return True
    previous = lines[index - 1] if index else ""
    if previous.strip().startswith("#"):
        return True
    is_first_child = _is_key(previous) and _indent(previous) < _indent(line)
    return is_first_child and _documented(lines, index - 1)


@pytest.mark.real
def test_rules_render_into_the_mounted_settings(tmp_path: Path) -> None:
    values = CHART / "ci" / "rules-values.yaml"
    settings = settings_from(render(*values_args(values)), tmp_path)
    assert [rule.name for rule in settings.rules] == ["production", "dev", "default"]
    assert settings.rules[0].reclaim == "when-contended"


@pytest.mark.real
def test_evidence_values_reach_the_service_settings(tmp_path: Path) -> None:
    settings = settings_from(
        render(
            "--set",
            "prometheus.evidence.pcie.enabled=false",
            "--set-json",
            'prometheus.evidence.power.baselines={"NVIDIA A100-SXM4-80GB": 61}',
            "--set",
            "config.policy.maxLoading=45m",
        ),
        tmp_path,
    )
    evidence = settings.prometheus.evidence
    assert evidence.pcie.enabled is False
    assert evidence.power.baselines == {"NVIDIA A100-SXM4-80GB": 61}
    assert evidence.framebuffer.enabled is True  # untouched sections keep their defaults
    assert settings.policy.max_loading.total_seconds() == 45 * 60


@pytest.mark.real
@pytest.mark.parametrize("semantics", ["left-open", "left-closed", "auto"])
def test_range_semantics_reaches_the_service_settings(semantics: str, tmp_path: Path) -> None:
    rendered = render("--set", f"prometheus.rangeSemantics={semantics}")
    assert settings_from(rendered, tmp_path).prometheus.range_semantics == semantics


@pytest.mark.real
def test_a_misspelt_evidence_key_is_refused_by_the_chart() -> None:
    code, _, err = template_result("--set", "prometheus.evidence.framebufer.enabled=false")
    assert code != 0
    assert "framebufer" in err
