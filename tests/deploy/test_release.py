"""The release a cluster can pull: the workflow that pushes the image (both architectures) and
the chart on a version tag, linted by actionlint, and the chart's defaults pointing at it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.tooling import (
    REPO,
    actionlint,
    chart_values,
    chart_yaml,
    render,
    the_container,
)

WORKFLOWS = REPO / ".github" / "workflows"
RELEASE_WORKFLOW = WORKFLOWS / "release.yml"
PYPROJECT_VERSION = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
    "version"
]
# `uses: owner/repo[/path]@<commit sha> # v1.2.3`: pinned by commit, the release named beside it.
PINNED_ACTION = re.compile(
    r"^\s*(- )?uses: [\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40} # v\d+\.\d+\.\d+$"
)


def workflow(path: Path = RELEASE_WORKFLOW) -> dict[Any, Any]:
    loaded: dict[Any, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return loaded


def steps() -> list[dict[str, Any]]:
    (job,) = workflow()["jobs"].values()
    found: list[dict[str, Any]] = job["steps"]
    return found


def step_using(action: str) -> dict[str, Any]:
    (found,) = [s for s in steps() if s.get("uses", "").startswith(action + "@")]
    return found


@pytest.mark.real
def test_actionlint_finds_nothing_in_the_workflows(tmp_path: Path) -> None:
    workflows = sorted(WORKFLOWS.glob("*.yml"))
    assert [p.name for p in workflows] == ["ci.yml", "release.yml"]
    # The same run lints a copy with one mistake, so a linter that reads nothing cannot pass.
    broken = tmp_path / "broken.yml"
    text = RELEASE_WORKFLOW.read_text(encoding="utf-8")
    broken.write_text(text.replace("timeout-minutes: 90", "timeout-minute: 90"), encoding="utf-8")
    done = subprocess.run(
        [*actionlint(), *map(str, workflows), str(broken)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    findings = json.loads(done.stdout)
    of_the_copy = findings.pop(str(broken))
    assert findings == {str(p): [] for p in workflows}, findings
    (mistake,) = of_the_copy
    assert mistake["kind"] == "syntax-check"
    assert mistake["message"].startswith('unexpected key "timeout-minute" for "job" section')


def test_every_action_is_pinned_by_commit_with_its_release_named() -> None:
    for path in sorted(WORKFLOWS.glob("*.yml")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if re.match(r"^\s*(- )?uses:", line):
                assert PINNED_ACTION.match(line), f"{path.name}: {line.strip()}"


def test_a_version_tag_builds_both_architectures_and_pushes_image_and_chart() -> None:
    release = workflow()
    assert release[True] == {"push": {"tags": ["v*"]}}  # YAML 1.1 reads the key `on` as true
    assert release["permissions"] == {"contents": "read"}
    (job,) = release["jobs"].values()
    assert job["permissions"] == {"contents": "read", "packages": "write"}
    build = step_using("docker/build-push-action")["with"]
    assert build["platforms"] == "linux/amd64,linux/arm64"
    assert build["file"] == "docker/Dockerfile"
    assert build["push"] is True
    assert build["tags"] == "${{ env.IMAGE_REPOSITORY }}:${{ steps.version.outputs.version }}"
    assert step_using("docker/setup-qemu-action")["with"]["platforms"] == "arm64"
    assert step_using("docker/login-action")["with"]["registry"] == "ghcr.io"
    # The tag is checked before anything is logged in to or pushed.
    order = [s.get("id") for s in steps()]
    assert order.index("version") < steps().index(step_using("docker/login-action"))
    (chart_push,) = [s for s in steps() if "helm" in s.get("run", "") and "push" in s["run"]]
    assert '"${CHART_REPOSITORY}"' in chart_push["run"]
    assert release["env"]["CHART_REPOSITORY"].startswith("oci://ghcr.io/")


def test_the_charts_default_image_is_the_one_the_release_pushes() -> None:
    image = chart_values()["image"]
    assert image["repository"] == workflow()["env"]["IMAGE_REPOSITORY"]
    assert image["tag"] == "" and image["digest"] == ""
    release_namespace = image["repository"].split("/")[1]
    assert workflow()["env"]["CHART_REPOSITORY"] == f"oci://ghcr.io/{release_namespace}/charts"


@pytest.mark.real
def test_helm_install_without_image_values_pulls_the_released_tag() -> None:
    container = the_container(render())
    assert container["image"] == f"{chart_values()['image']['repository']}:{PYPROJECT_VERSION}"


def test_one_version_names_the_release() -> None:
    chart = chart_yaml()
    assert chart["version"] == chart["appVersion"] == PYPROJECT_VERSION


def run_version_check(
    tmp_path: Path, *, tag: str, owner: str, extra: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """The workflow's own tag check, run as the runner runs a step (bash -e, repo root)."""
    (check,) = [s for s in steps() if s.get("id") == "version"]
    output = tmp_path / "github_output"
    output.write_text("", encoding="utf-8")
    environ = {
        **os.environ,
        **workflow()["env"],
        "TAG": tag,
        "OWNER": owner,
        "GITHUB_OUTPUT": str(output),
        **(extra or {}),
    }
    done = subprocess.run(
        ["bash", "-e", "-c", check["run"]],
        cwd=REPO,
        env=environ,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return done.returncode, done.stderr, output.read_text(encoding="utf-8")


def test_the_release_refuses_a_tag_that_is_not_the_version(tmp_path: Path) -> None:
    code, _, output = run_version_check(
        tmp_path, tag=f"v{PYPROJECT_VERSION}", owner="Idle-GPU-Autoscaler"
    )
    assert (code, output) == (0, f"version={PYPROJECT_VERSION}\n")
    code, err, output = run_version_check(tmp_path, tag="v9.9.9", owner="idle-gpu-autoscaler")
    assert code != 0 and output == ""
    assert err.strip() == (
        f"error: tag v9.9.9 does not name version 9.9.9 everywhere: pyproject.toml version is "
        f"{PYPROJECT_VERSION}; Chart.yaml version is {PYPROJECT_VERSION}; Chart.yaml appVersion "
        f"is {PYPROJECT_VERSION}; set all three to 9.9.9 and tag again"
    )


def test_a_fork_is_told_to_point_the_release_at_its_own_namespace(tmp_path: Path) -> None:
    code, err, output = run_version_check(tmp_path, tag=f"v{PYPROJECT_VERSION}", owner="someone")
    assert code != 0 and output == ""
    assert err.strip().startswith(
        "error: this repository pushes to ghcr.io/someone, not ghcr.io/idle-gpu-autoscaler: "
    )


def test_a_fork_that_moved_only_the_image_is_stopped_before_anything_is_pushed(
    tmp_path: Path,
) -> None:
    """Else the image is pushed to the fork's namespace and `helm push` fails afterwards,
    leaving half a release."""
    environ = {"IMAGE_REPOSITORY": "ghcr.io/someone/idle-gpu-autoscaler"}
    code, err, output = run_version_check(
        tmp_path, tag=f"v{PYPROJECT_VERSION}", owner="someone", extra=environ
    )
    assert code != 0 and output == ""
    assert err.strip().startswith(
        "error: this repository pushes to ghcr.io/someone, not ghcr.io/idle-gpu-autoscaler: "
    )


ANONYMOUS_CHECK = "Check that both packages pull without a login"
FAKE_CURL = """#!/bin/sh
# The registry as the step meets it: a token for anyone, the manifest only where public.
echo "$*" >>"$CURL_LOG"
case "$*" in
  */token\\?scope=*) echo '{"token":"anonymous"}' ;;
  *"/manifests/"*) case "$*" in *"$PRIVATE_PACKAGE"*) exit 22 ;; esac ;;
esac
"""


def run_anonymous_check(tmp_path: Path, *, private: str) -> tuple[int, str, list[str]]:
    """The workflow's last step, run as the runner runs it, against a registry (a fake curl
    on PATH) where `private` (a package path) is still private."""
    step = steps()[-1]
    assert step["name"] == ANONYMOUS_CHECK
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "curl").write_text(FAKE_CURL, encoding="utf-8")
    (bin_dir / "curl").chmod(0o755)
    log = tmp_path / "curl.log"
    log.write_text("", encoding="utf-8")
    environ = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        **workflow()["env"],
        "VERSION": "1.2.3",
        "CURL_LOG": str(log),
        "PRIVATE_PACKAGE": private or "nothing-is-private",
    }
    done = subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr, log.read_text().splitlines()


def test_the_last_step_checks_both_packages_pull_without_a_login(tmp_path: Path) -> None:
    """GHCR creates a new package private: the first release pushes fine and no cluster can
    pull it until the package is made public once; the release fails saying so."""
    step = steps()[-1]
    assert "secrets." not in str(step) and "registry login" not in step["run"]
    code, said, calls = run_anonymous_check(tmp_path, private="")
    assert code == 0, said
    manifests = [c for c in calls if "/manifests/" in c]
    assert [m.split()[-1] for m in manifests] == [
        "https://ghcr.io/v2/idle-gpu-autoscaler/idle-gpu-autoscaler/manifests/1.2.3",
        "https://ghcr.io/v2/idle-gpu-autoscaler/charts/idle-gpu-autoscaler/manifests/1.2.3",
    ]
    assert all("Bearer anonymous" in m for m in manifests)


@pytest.mark.parametrize(
    "private", ["idle-gpu-autoscaler/idle-gpu-autoscaler", "charts/idle-gpu-autoscaler"]
)
def test_a_private_package_fails_the_release_naming_the_one_time_step(
    tmp_path: Path, private: str
) -> None:
    code, said, _ = run_anonymous_check(tmp_path, private=private)
    assert code != 0
    [line] = said.strip().splitlines()
    assert f"{private}:1.2.3 cannot be pulled without a login" in line
    assert "Package settings" in line and "Change visibility" in line and "public" in line
