"""The upstream CRDs in tests/crds are the files their README names, unmodified, and
scripts/refresh-crds.sh replaces them all from upstream or none."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.crd_validation import DEFAULT_CRD_DIR

REPO = Path(__file__).resolve().parents[1]
REFRESH = REPO / "scripts" / "refresh-crds.sh"
# | file | project | version | path | blob |, the blob being 40 hex digits.
ROW = re.compile(r"^\| (\S+\.yaml) \| (\S+) \| .+ \| (\S+) \| ([0-9a-f]{40}) \|$", re.MULTILINE)


def git_blob(data: bytes) -> str:
    """What `git hash-object` prints for a file holding `data`."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def readme_table() -> dict[str, tuple[str, str, str]]:
    """file name -> (upstream project, path in the upstream repository, git blob)."""
    text = (DEFAULT_CRD_DIR / "README.md").read_text(encoding="utf-8")
    return {m[1]: (m[2], m[3], m[4]) for m in ROW.finditer(text)}


def test_the_tests_read_the_crds_vendored_in_the_repository() -> None:
    assert DEFAULT_CRD_DIR == REPO / "tests" / "crds"


def test_every_vendored_crd_is_the_upstream_blob_its_readme_names() -> None:
    table = readme_table()
    files = {path.name: git_blob(path.read_bytes()) for path in DEFAULT_CRD_DIR.glob("*.yaml")}
    assert sorted(files) == sorted(table), "tests/crds/README.md must list exactly its files"
    changed = [name for name, blob in files.items() if table[name][2] != blob]
    assert changed == [], "edited, or refreshed without updating the README's table"


def test_the_readme_names_an_upstream_project_and_path_for_each_file() -> None:
    for name, (project, path, _blob) in readme_table().items():
        assert project in {
            "kubernetes-sigs/kueue",
            "ray-project/kuberay",
            "kedacore/keda",
            "NVIDIA/KAI-Scheduler",
            "kubernetes-sigs/jobset",
            "kubeflow/training-operator",
            "kubeflow/mpi-operator",
            "kubeflow/trainer",
            "kubernetes-sigs/lws",
            "project-codeflare/appwrapper",
            "kubeflow/notebooks",
        }
        assert path.endswith(f"/{name}")


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    """The script and the vendored CRDs in a throwaway repository layout."""
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    shutil.copy2(REFRESH, root / "scripts" / REFRESH.name)
    shutil.copytree(DEFAULT_CRD_DIR, root / "tests" / "crds")
    return root


def refresh(repo: Path, source: Path) -> subprocess.CompletedProcess[str]:
    script = repo / "scripts" / REFRESH.name
    return subprocess.run([script, source], capture_output=True, text=True, check=False)


def newer_upstream(source: Path, *, layout: str) -> dict[str, bytes]:
    """Every upstream file, changed by a comment, written flat or in upstream checkouts."""
    contents = {}
    for name, (project, path, _blob) in readme_table().items():
        data = (DEFAULT_CRD_DIR / name).read_bytes() + b"# newer upstream\n"
        checkout = project.split("/")[1]
        target = source / name if layout == "flat" else source / checkout / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        contents[name] = data
    return contents


@pytest.mark.parametrize("layout", ["flat", "checkouts"])
def test_the_refresh_script_replaces_every_crd_with_its_upstream_copy(
    repo_copy: Path, tmp_path: Path, layout: str
) -> None:
    expected = newer_upstream(tmp_path / "upstream", layout=layout)

    result = refresh(repo_copy, tmp_path / "upstream")

    assert result.returncode == 0, result.stderr
    for name, data in expected.items():
        assert (repo_copy / "tests" / "crds" / name).read_bytes() == data
        assert f"{name} {git_blob(data)}" in result.stdout


def test_the_refresh_script_replaces_nothing_when_an_upstream_file_is_missing(
    repo_copy: Path, tmp_path: Path
) -> None:
    newer_upstream(tmp_path / "upstream", layout="flat")
    (tmp_path / "upstream" / "ray.io_rayjobs.yaml").unlink()

    result = refresh(repo_copy, tmp_path / "upstream")

    assert result.returncode == 1
    assert "ray.io_rayjobs.yaml is in neither" in result.stderr
    for path in DEFAULT_CRD_DIR.glob("*.yaml"):
        assert (repo_copy / "tests" / "crds" / path.name).read_bytes() == path.read_bytes()
