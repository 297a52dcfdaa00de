"""Every manifest the chart renders is valid Kubernetes: built-in kinds with
kubernetes-validate --strict, custom resources against the upstream CRDs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.deploy.tooling import CI_VALUES, VALUE_SETS, render, require_tool, run, values_args
from tests.deploy.validation import describe, problems


@pytest.mark.real
@pytest.mark.parametrize("values_file", VALUE_SETS)
def test_every_rendered_manifest_validates(values_file: Path | None) -> None:
    invalid = {
        describe(manifest): found
        for manifest in render(*values_args(values_file))
        if (found := problems(manifest))
    }
    assert invalid == {}


@pytest.mark.real
def test_kubernetes_validate_cli_passes_every_render_strictly(tmp_path: Path) -> None:
    cli = require_tool("kubernetes-validate", "pip install kubernetes-validate")
    files = []
    for index, values_file in enumerate([None, *CI_VALUES]):
        path = tmp_path / f"render-{index}.yaml"
        path.write_text(yaml.safe_dump_all(render(*values_args(values_file))), encoding="utf-8")
        files.append(str(path))
    done = run(cli, "--strict", "--quiet", "--no-warn", "-k", "1.29.0", *files)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.real
@pytest.mark.parametrize(
    ("kind", "path"),
    [
        pytest.param("Deployment", ("spec", "replica"), id="built-in-kind"),
        pytest.param("ScaledObject", ("spec", "cooldownPeriods"), id="custom-resource"),
    ],
)
def test_validation_rejects_a_misspelt_field(kind: str, path: tuple[str, str]) -> None:
    all_on = CI_VALUES[[p.stem for p in CI_VALUES].index("all-optional-on-values")]
    (manifest,) = [m for m in render(*values_args(all_on)) if m["kind"] == kind]
    manifest[path[0]][path[1]] = 1
    assert problems(manifest) != []
