"""The settings tree: defaults, YAML, environment overrides, and errors that name the key."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from autoscaler.core.documents import MAX_BYTES, FileRefused
from autoscaler.core.errors import ConfigError
from autoscaler.settings.tree import load_settings
from tests.support.check_config import check_config
from tests.support.hostile_files import COUNTER_READ, HOSTILE, bytes_read_by_this_thread

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
        pytest.param(
            "rules:\n" + "".join(f"- {{name: r{n}}}\n" for n in range(1001)),
            "rules: must have at most 1000 entries (found 1001)",
            id="more-rules-than-check-config-compares-in-a-second",
        ),
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


@pytest.mark.parametrize(("make", "problem"), [pytest.param(*v, id=k) for k, v in HOSTILE.items()])
def test_check_config_refuses_a_hostile_file_in_one_line(
    tmp_path: Path, make: Callable[[], bytes], problem: str
) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes(make())
    result = check_config(path)
    assert result.returncode == 2
    assert result.stdout == ""
    [line] = result.stderr.splitlines()  # one line: no traceback, no list
    assert line.startswith(f"error: {path}: ")
    assert problem in line
    assert " — " in line  # then what to do


@pytest.mark.parametrize(("make", "problem"), [pytest.param(*v, id=k) for k, v in HOSTILE.items()])
def test_a_hostile_file_is_refused_reading_no_byte_past_the_size_limit(
    tmp_path: Path, make: Callable[[], bytes], problem: str
) -> None:
    """The work is bounded, counted rather than timed (the time is benchmarks/README.md's,
    "Refusing a hostile settings file"): a file over the limit is refused from its size with
    none of it read, any other is read once, and its refusal is the bounded reader's, which
    stops at the bound before a value is built (tests/test_documents.py counts that)."""
    path = tmp_path / "config.yaml"
    path.write_bytes(make())
    size = path.stat().st_size
    before = bytes_read_by_this_thread()
    with pytest.raises(FileRefused) as refused:
        load_settings(path, environ={})
    read = bytes_read_by_this_thread() - before
    assert problem in str(refused.value)
    assert read <= (0 if size > MAX_BYTES else size) + COUNTER_READ, f"{read} bytes of {size}"


def test_a_file_that_cannot_be_read_is_one_line_too(tmp_path: Path) -> None:
    result = check_config(tmp_path / "absent.yaml")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"error: {tmp_path / 'absent.yaml'}: cannot read: No such file or directory — "
        "check the path and its permissions"
    ]


def test_a_byte_order_mark_an_alias_and_a_merge_key_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    text = (
        "\ufeffpolicy: {idleWindow: 2h}\n"
        "rules:\n"
        "  - name: team-rays\n"
        "    match: &teams {namespaces: [team-a, team-b], ownerKinds: [RayCluster]}\n"
        "    idleWindow: 30m\n"
        "  - name: team-a100s\n"
        "    match: {<<: *teams, gpuModels: [NVIDIA-A100-SXM4-80GB]}\n"
        "    idleWindow: 45m\n"
    )
    path.write_text(text, encoding="utf-8")
    result = check_config(path)
    assert result.returncode == 0, result.stderr
    assert "idleWindow: 2h" in result.stdout
    assert result.stdout.count("- team-a") == 2  # the merged key's namespaces, in both rules


def test_a_file_with_thousands_of_bad_entries_is_told_in_a_screenful(tmp_path: Path) -> None:
    path = write(tmp_path, "notifications:\n  defaultTargets:\n" + "  - nobody\n" * 5000)
    with pytest.raises(ConfigError) as refused:
        load_settings(path)
    assert len(refused.value.problems) == 5000
    lines = str(refused.value).splitlines()
    assert len(lines) == 1 + 50 + 1
    assert lines[1] == (
        "  - notifications.defaultTargets: nobody is not in notifications.targets: define it "
        "there or remove it"
    )
    assert lines[-1] == "  … and 4950 more"
