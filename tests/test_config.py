"""The settings tree: defaults, YAML, environment overrides, and errors that name the key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from autoscaler.core.errors import ConfigError
from autoscaler.settings.tree import load_settings

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "config" / "example.yaml"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_example_configuration_passes_check_config() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "autoscaler", "check-config", "--config", str(EXAMPLE)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "idleWindow: 1h" in result.stdout
    assert "dryRun: true" in result.stdout


def test_broken_file_exits_2_naming_every_bad_key(tmp_path: Path) -> None:
    path = write(
        tmp_path, "policy:\n  idleWindw: 5m\n  thresholdPercent: 200\nloop: {interval: x}\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "autoscaler", "check-config", "--config", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "policy.idleWindw: unknown key" in result.stderr
    assert "policy.thresholdPercent" in result.stderr
    assert "loop.interval" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("text", "expected_problem"),
    [
        pytest.param("- a\n- b\n", "top level must be a mapping", id="list-at-top-level"),
        pytest.param("policy: [\n", "not valid YAML", id="unparseable-yaml"),
        pytest.param("policy:\n  minCoverage: 0\n", "policy.minCoverage", id="zero-coverage"),
        pytest.param("policy:\n  idleWindow: soon\n", "policy.idleWindow", id="bad-duration"),
        pytest.param("prometheus:\n  retries: 9\n", "prometheus.retries", id="too-many-retries"),
        pytest.param("nosuch: {}\n", "nosuch: unknown key", id="unknown-section"),
    ],
)
def test_invalid_settings_are_rejected_with_the_key_named(
    tmp_path: Path, text: str, expected_problem: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path, text))
    assert expected_problem in str(caught.value)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_settings(tmp_path / "absent.yaml")


def test_environment_overrides_urls_and_secret_paths(tmp_path: Path) -> None:
    path = write(tmp_path, "prometheus:\n  url: http://from-file:9090\n")
    settings = load_settings(
        path,
        environ={
            "IGA_PROMETHEUS_URL": "https://thanos-querier.openshift-monitoring.svc:9091",
            "IGA_PROMETHEUS_TOKEN_FILE": "/var/run/token",
            "POD_NAMESPACE": "gpu-ops",
        },
    )
    assert settings.prometheus.url == "https://thanos-querier.openshift-monitoring.svc:9091"
    assert settings.prometheus.bearer_token_file == Path("/var/run/token")
    assert settings.cluster.service_namespace == "gpu-ops"


def test_defaults_are_safe() -> None:
    settings = load_settings(None, environ={})
    assert settings.policy.dry_run is True
    assert settings.prometheus.insecure_skip_verify is False
    assert settings.cluster.owner_kinds["RayCluster"].enabled is True
    assert settings.cluster.owner_kinds["RayJob"].enabled is False


@pytest.mark.parametrize(
    ("key", "value"),
    [
        pytest.param("framebuffer", {"metric": "DCGM_FI_DEV_FB_USED{"}, id="framebuffer-metric"),
        pytest.param("ray", {"tasksMetric": "ray tasks"}, id="ray-tasks-metric"),
        pytest.param("ray", {"podLabel": "pod-name"}, id="ray-pod-label"),
    ],
)
def test_an_evidence_name_that_is_not_promql_is_refused_naming_the_key(
    key: str, value: dict[str, str], tmp_path: Path
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"prometheus": {"evidence": {key: value}}}), encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_settings(path)
    [field] = value
    assert f"prometheus.evidence.{key}.{field}" in str(raised.value)
