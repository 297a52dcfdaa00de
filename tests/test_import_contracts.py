"""The import-linter contracts in pyproject.toml hold on the real tree, and fail a planted breach.

`lint-imports` runs as a process with the project's own configuration, on the real package and
on a copy of it with one bad import planted, so the contracts are shown to be able to fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def contract_names() -> dict[str, str]:
    """Contract id → the name `lint-imports` prints for it."""
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    return {contract["id"]: contract["name"] for contract in contracts}


def lint_imports(*, package_parent: Path) -> tuple[int, str]:
    """Run `lint-imports` on the `autoscaler` package found under `package_parent`."""
    environment = {**os.environ, "PYTHONPATH": str(package_parent)}
    finished = subprocess.run(
        [str(LINT_IMPORTS), "--no-logo", "--no-cache", str(PYPROJECT)],
        cwd=package_parent,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # The report wraps long names at 80 columns; one line of single spaces is easier to match.
    return finished.returncode, " ".join((finished.stdout + finished.stderr).split())


def copy_of_the_package(destination: Path) -> Path:
    shutil.copytree(
        ROOT / "autoscaler",
        destination / "autoscaler",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    return destination


def plant(package_parent: Path, *, into: str, line: str) -> None:
    module = package_parent / into
    module.write_text(module.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")


def test_the_real_tree_keeps_every_contract() -> None:
    returncode, report = lint_imports(package_parent=ROOT)

    assert returncode == 0, report
    for name in contract_names().values():
        assert f"{name} KEPT" in report


@pytest.mark.parametrize(
    ("into", "line", "broken_contract", "reported_import"),
    [
        pytest.param(
            "autoscaler/domain/__init__.py",
            "import autoscaler.engine",
            "layers",
            "autoscaler.domain -> autoscaler.engine",
            id="the-domain-importing-the-engine-breaks-the-layers",
        ),
        pytest.param(
            "autoscaler/core/__init__.py",
            "import autoscaler.settings",
            "layers",
            "autoscaler.core -> autoscaler.settings",
            id="core-importing-the-settings-breaks-the-layers",
        ),
        pytest.param(
            "autoscaler/api/__init__.py",
            "import autoscaler.keda",
            "surfaces-are-independent",
            "autoscaler.api -> autoscaler.keda",
            id="the-rest-api-importing-keda-breaks-surface-independence",
        ),
        pytest.param(
            "autoscaler/api/__init__.py",
            "import autoscaler.adapters.kueue.resources",
            "engine-and-surfaces-use-ports",
            "autoscaler.api -> autoscaler.adapters.kueue.resources",
            id="the-rest-api-reaching-into-an-adapter-is-forbidden",
        ),
        pytest.param(
            "autoscaler/engine/__init__.py",
            "import autoscaler.sim",
            "engine-and-domain-never-import-sim",
            "autoscaler.engine -> autoscaler.sim",
            id="the-engine-importing-the-simulation-is-forbidden",
        ),
    ],
)
def test_a_planted_import_breaks_exactly_its_contract(
    tmp_path: Path, into: str, line: str, broken_contract: str, reported_import: str
) -> None:
    package_parent = copy_of_the_package(tmp_path)
    plant(package_parent, into=into, line=line)

    returncode, report = lint_imports(package_parent=package_parent)

    assert returncode != 0, report
    for contract_id, name in contract_names().items():
        verdict = "BROKEN" if contract_id == broken_contract else "KEPT"
        assert f"{name} {verdict}" in report, report
    assert reported_import in report, report


def test_a_new_module_loose_at_the_top_must_be_placed_in_a_layer(tmp_path: Path) -> None:
    package_parent = copy_of_the_package(tmp_path)
    (package_parent / "autoscaler" / "helpers.py").write_text('"""Loose."""\n', encoding="utf-8")

    returncode, report = lint_imports(package_parent=package_parent)

    assert returncode != 0, report
    assert f"{contract_names()['layers']} BROKEN" in report, report
    assert "The following modules are not listed as layers: - autoscaler.helpers" in report
