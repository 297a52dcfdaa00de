"""docs/ROLLOUT.md cannot drift from the code: every command it shows parses with the CLI's own
parser, every helm command renders the chart (its values files are the page's own blocks), the
port-forward names the Service the chart renders, and every settings key, chart value, metric,
file and test it names exists."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest

from autoscaler.cli import _parser
from autoscaler.client.commands import join_option_values
from autoscaler.client.next_steps import PORT_FORWARD
from autoscaler.domain.program import PROGRAM
from autoscaler.engine.metrics.usage_source import UsageSourceMetrics
from autoscaler.settings.tree import Settings
from tests.api.rig import ApiRig
from tests.deploy.tooling import (
    CHART,
    REPO,
    Manifest,
    chart_values,
    chart_yaml,
    find,
    notes,
    render_release,
    settings_from,
)

DOC = REPO / "docs" / "ROLLOUT.md"
VALUES_FILE = re.compile(r"Values file\s+`([^`]+)`:\s*```yaml\n(.*?)```", re.DOTALL)
BLOCK = re.compile(r"```(\w*)\n(.*?)```", re.DOTALL)
# The settings file's top-level keys, as the file writes them.
SETTINGS_SECTIONS = tuple(field.alias or name for name, field in Settings.model_fields.items())


def _text() -> str:
    return DOC.read_text(encoding="utf-8")


def _shell_lines() -> Iterator[str]:
    for language, body in BLOCK.findall(_text()):
        if language == "sh":
            yield from (line.strip() for line in body.splitlines() if line.strip())


def _commands(program: str) -> list[list[str]]:
    """Every shell line of the page that runs `program`, its environment assignments dropped."""
    found = []
    for line in _shell_lines():
        words = shlex.split(line)
        while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
            words.pop(0)
        if words and words[0] == program:
            found.append(words)
    return found


def _values_files() -> dict[str, dict[str, Any]]:
    files = {name: yaml.safe_load(body) for name, body in VALUES_FILE.findall(_text())}
    assert files, "the page shows its values files"
    return files


def test_every_shell_line_runs_a_known_program() -> None:
    for line in _shell_lines():
        words = [w for w in shlex.split(line) if not re.fullmatch(r"[A-Z_]+=\S*", w)]
        assert words[0] in {PROGRAM, "helm", "kubectl"}, line


def test_every_environment_variable_is_one_the_code_reads() -> None:
    source = "\n".join(path.read_text() for path in (REPO / "autoscaler").rglob("*.py"))
    for line in _shell_lines():
        for name in re.findall(r"(?:^|\s)([A-Z_]+)=", line):
            assert f'"{name}"' in source, f"{name} (in: {line})"


@pytest.mark.parametrize("words", _commands(PROGRAM), ids=shlex.join)
def test_every_cli_command_parses(words: list[str]) -> None:
    try:
        _parser().parse_args(join_option_values(words[1:]))
    except SystemExit as exc:  # argparse's way of refusing
        pytest.fail(f"`{shlex.join(words)}` does not parse (exit {exc.code})")


@pytest.fixture(scope="module")
def values_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page's values files, written where helm can read them."""
    folder = tmp_path_factory.mktemp("rollout-values")
    for name, values in _values_files().items():
        (folder / name).write_text(yaml.safe_dump(values), encoding="utf-8")
    return folder


def _rendered(words: list[str], folder: Path) -> tuple[str, list[Manifest]]:
    """(namespace, manifests) of a `helm install` or `helm upgrade` as `helm template`."""
    assert words[1] in {"install", "upgrade"}, words
    release, chart, rest = words[2], words[3], iter(words[4:])
    assert REPO / chart == CHART, chart
    namespace, args = "default", []
    for word in rest:
        if word == "-n":
            namespace = next(rest)
        elif word == "-f":
            name = next(rest)
            assert name in _values_files(), f"{name}: not one of the page's values files"
            args += ["-f", str(folder / name)]
        elif word not in {"--reuse-values", "--create-namespace"}:  # not `helm template`'s
            args.append(word)
    return namespace, render_release(release, namespace, *args)


@pytest.mark.parametrize("words", _commands("helm"), ids=shlex.join)
def test_every_helm_command_renders_and_the_service_loads_its_settings(
    words: list[str], values_folder: Path, tmp_path: Path
) -> None:
    _, manifests = _rendered(words, values_folder)
    settings = settings_from(manifests, tmp_path)
    for name, values in _values_files().items():
        if name in words:
            _assert_settings_follow(values, settings)
    if "dryRun=true" in words:
        assert settings.policy.dry_run


def _assert_settings_follow(values: Mapping[str, Any], settings: Settings) -> None:
    """What the page says a values file does is what the service is told."""
    assert settings.policy.dry_run is values["dryRun"]
    written = values["config"]["rules"]
    assert [rule.name for rule in settings.rules] == [rule["name"] for rule in written]
    for rule, said in zip(settings.rules, written, strict=True):
        assert rule.action == said["action"]


def test_the_port_forward_names_the_service_the_chart_renders(values_folder: Path) -> None:
    [install, *_] = [w for w in _commands("helm") if w[1] == "install"]
    namespace, manifests = _rendered(install, values_folder)
    forwards = [w for w in _commands("kubectl") if "port-forward" in w and namespace in w]
    assert forwards
    for words in forwards:
        [target] = [w for w in words if w.startswith("svc/")]
        local, remote = words[-1].split(":")
        [service] = find(manifests, "Service", target.removeprefix("svc/"))
        assert int(remote) in {port["port"] for port in service["spec"]["ports"]}
        # The CLI's next steps name the same Service in the same namespace as the page.
        assert target in PORT_FORWARD.split(), (target, PORT_FORWARD)
        assert f"-n {namespace}" in PORT_FORWARD, (namespace, PORT_FORWARD)
        cli_doc = (REPO / "docs" / "CLI.md").read_text(encoding="utf-8")
        services = set(re.findall(r"port-forward [^`|]*?(svc/[\w-]+)", cli_doc))
        assert services - {"svc/prometheus-operated"} == {target}, services
        if [w for w in _commands(PROGRAM) if "--server" not in w]:
            assert local == "8080", "the CLI's default server is http://localhost:8080"


def _has_path(tree: Any, dotted: str) -> bool:
    for part in dotted.split("."):
        if not isinstance(tree, Mapping) or part not in tree:
            return False
        tree = tree[part]
    return True


def test_every_settings_key_and_chart_value_named_exists() -> None:
    effective = Settings().model_dump(by_alias=True, mode="json")
    chart = chart_values()
    named = set(re.findall(r"`([a-z][A-Za-z]*(?:\.[a-zA-Z]+)+)`", _text()))
    keys = {key for key in named if key.split(".")[0] in (*SETTINGS_SECTIONS, "config")}
    assert keys, "the page names settings keys"
    for key in sorted(keys):
        in_chart = _has_path(chart, key)
        assert _has_path(effective, key) or in_chart, key
    for line in _shell_lines():
        for dotted in re.findall(r"--set ([\w.]+)=", line):
            assert _has_path(chart, dotted), dotted


def _metric_names() -> set[str]:
    """The names a PromQL query finds (a counter's with its `_total`): what the service's
    /metrics serves after a cycle (the API tests' rig), and the read-source metrics the
    composition root registers only for a Prometheus source (compose/service.py)."""
    with ApiRig() as rig:
        rig.add_raycluster("team-a", "alice-rc")
        rig.cycle()
        served = rig.http.get("/metrics").text
    with_prometheus = CollectorRegistry()
    UsageSourceMetrics(with_prometheus)
    served += generate_latest(with_prometheus).decode()
    return {line.split()[2] for line in served.splitlines() if line.startswith("# TYPE")}


def test_every_metric_named_is_one_the_service_exports() -> None:
    named = set(re.findall(r"`(idle_gpu_autoscaler_[a-z_]+)`", _text()))
    assert len(named) >= 5
    assert named <= _metric_names(), named - _metric_names()


def test_every_file_and_test_named_exists() -> None:
    text = _text()
    for path in re.findall(r"`((?:tests|charts|adapters|autoscaler)/[\w./-]+)`", text):
        where = path.split("::")[0]
        found = (REPO / where).exists() or (REPO / "autoscaler" / where).exists()
        assert found, path
    defined = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "tests").rglob("test_*.py"))
    tests = re.findall(r"\b(test_[a-z0-9_]+)\b(?![\w.])", text)  # not a module's name
    assert tests
    for name in tests:
        assert f"def {name}(" in defined, name


def _repository_url() -> str:
    """The GitHub repository of the release workflow's GHCR owner (it pushes only below the
    repository owner's namespace, so the two are the same)."""
    workflow = (REPO / ".github" / "workflows" / "release.yml").read_text(encoding="utf-8")
    owner = re.search(r"IMAGE_REPOSITORY: ghcr\.io/([\w-]+)/", workflow)
    assert owner
    return f"https://github.com/{owner[1]}/idle-gpu-autoscaler"


def test_the_chart_names_its_repository() -> None:
    chart = chart_yaml()
    assert chart["home"] == _repository_url()
    assert chart["sources"] == [_repository_url()]


@pytest.mark.parametrize("dry_run", ["true", "false"])
def test_the_charts_notes_and_the_readme_point_to_the_page(dry_run: str) -> None:
    """Whoever installed the published chart has no repository: the notes give the page's
    address at the release's tag, and no document as a bare repository path."""
    chart = chart_yaml()
    docs = f"{_repository_url()}/blob/v{chart['appVersion']}/docs/"
    said = notes("--set", f"dryRun={dry_run}", "--set", "recordingRules.enabled=true")
    assert f"{docs}ROLLOUT.md" in said.split()
    assert f"{docs}RECORDING-RULES.md" in said
    assert re.findall(r"(?<!/)docs/[A-Z-]+\.md", said) == []
    readme = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len([line for line in readme if "docs/ROLLOUT.md" in line]) == 1
