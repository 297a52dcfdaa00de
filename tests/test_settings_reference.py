"""The settings text is written once, in the model's fields: the chart's schema (`config`), the
example file and docs/CONFIG.md are what `python -m autoscaler.settings.reference` draws."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from autoscaler.settings.reference import COMMAND, RENDERINGS, stale
from autoscaler.settings.reference.keys import Key, keys_of
from autoscaler.settings.reference.schema import NOT_IN_CHART_CONFIG
from autoscaler.settings.tree import Settings, load_settings

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "config" / "example.yaml"
SCHEMA = REPO / "charts" / "idle-gpu-autoscaler" / "values.schema.json"


def every_key(keys: list[Key]) -> list[Key]:
    found = []
    for key in keys:
        found.append(key)
        if key.shape.kind == "section" or key.shape.of_sections:
            found += every_key(key.children())
    return found


def reference(*args: str, root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "autoscaler.settings.reference", *args, "--root", str(root)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_every_generated_file_is_what_the_settings_model_gives() -> None:
    assert stale(REPO) == [], f"edit the fields in autoscaler/settings/, then run: {COMMAND}"


def test_the_check_names_a_stale_file_and_the_command_that_mends_it(tmp_path: Path) -> None:
    for path in RENDERINGS:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / path, tmp_path / path)
    example = tmp_path / "config" / "example.yaml"
    example.write_text(example.read_text(encoding="utf-8") + "# edited by hand\n")

    checked = reference("--check", root=tmp_path)
    written = reference(root=tmp_path)

    assert checked.returncode == 1
    assert checked.stderr == (
        "config/example.yaml differs from the settings model: run "
        "python -m autoscaler.settings.reference\n"
    )
    assert (written.returncode, written.stdout) == (0, "wrote config/example.yaml\n")
    assert reference("--check", root=tmp_path).returncode == 0


def test_every_key_says_what_it_is_for() -> None:
    undocumented = [key.path for key in every_key(keys_of(Settings)) if not key.description]
    assert undocumented == []


def test_the_example_is_every_default_and_check_config_takes_it_without_a_warning() -> None:
    assert load_settings(EXAMPLE, environ={}) == Settings()
    done = subprocess.run(
        [sys.executable, "-m", "autoscaler", "check-config", "--config", str(EXAMPLE)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")


def chart_config(settings: dict[str, object]) -> dict[str, object]:
    """The settings as the chart takes them under `config:`, without what it fills in itself."""
    for path in NOT_IN_CHART_CONFIG:
        *parents, leaf = path.split(".")
        node = settings
        for parent in parents:
            node = node[parent]  # type: ignore[assignment]
        del node[leaf]
    return settings


def config_validator() -> jsonschema.Draft7Validator:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    config = schema["properties"]["config"] | {"definitions": schema["definitions"]}
    return jsonschema.Draft7Validator(config)


def test_the_chart_schema_takes_the_service_defaults_under_config() -> None:
    defaults = chart_config(Settings().model_dump(mode="json", by_alias=True))
    assert list(config_validator().iter_errors(defaults)) == []


@pytest.mark.parametrize(
    ("config", "where"),
    [
        pytest.param({"policy": {"idleWindw": "1h"}}, "policy", id="unknown-key"),
        pytest.param({"policy": {"thresholdPercent": 100}}, "thresholdPercent", id="bound"),
        pytest.param({"guards": {"contested": {"within": "0s"}}}, "within", id="zero-span"),
        pytest.param({"cluster": {"gpuResources": []}}, "gpuResources", id="no-gpu-resource"),
        pytest.param({"rules": [{"name": "a", "action": "delete"}]}, "rules", id="no-deleteAfter"),
        pytest.param(
            {"policy": {"namespaces": {"include": ["Team_A"]}}}, "include", id="not-a-namespace"
        ),
    ],
)
def test_the_chart_schema_refuses_what_the_service_or_the_chart_refuses(
    config: dict[str, object], where: str
) -> None:
    errors = list(config_validator().iter_errors(config))
    assert errors, f"{config} was accepted"
    assert any(where in "/".join(map(str, e.absolute_path)) + e.message for e in errors)
