"""A fresh clone stands alone: `git clone` of this repository into an empty directory with
nothing beside it collects the whole suite and passes the tests that validate against the
vendored CRDs and an end-to-end test, reading nothing outside the clone.

The clone runs with this venv's interpreter; pytest's `pythonpath = ["."]` puts the clone's
code first, and the report of tests/support/reads_guard.py shows it is what ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.prom import require_binaries

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
CRD_TESTS = ["tests/test_vendored_crds.py", "tests/sim/test_kueue_objects.py"]
CRD_TESTS += ["tests/test_kube_server.py", "tests/deploy/test_config_examples.py"]
END_TO_END = (
    "tests/e2e/test_seed_scenario.py"
    "::test_the_idle_cluster_is_deactivated_after_the_window_and_the_next_is_admitted"
)


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The committed repository, cloned alone into a fresh directory."""
    target = tmp_path_factory.mktemp("alone") / "idle-gpu-autoscaler"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(target)], check=True)
    assert sorted(p.name for p in target.parent.iterdir()) == ["idle-gpu-autoscaler"]
    return target


def surroundings(repo: Path) -> Path:
    """The original repository and whatever lies beside it, unless its parent is the disk root."""
    return repo if repo.parent == Path(repo.anchor) else repo.parent


def run_pytest_in(
    clone: Path, report: Path, *args: str, basetemp: Path
) -> subprocess.CompletedProcess[str]:
    """The clone's pytest with this venv's python, guarded against reads outside the clone."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    environment.pop("PYTHONPATH", None)
    environment |= {
        "READS_GUARD_FORBIDDEN": str(surroundings(REPO)),
        # The run's own temporary files (its basetemp, the report) may lie beside the
        # original: a clone checked out under /tmp has the system's temporary folder there.
        "READS_GUARD_ALLOWED": os.pathsep.join(
            [sys.prefix, str(REPO / ".tools"), str(basetemp), str(report.parent)]
        ),
        "READS_GUARD_REPORT": str(report),
    }
    command = [sys.executable, "-m", "pytest", "-p", "tests.support.reads_guard"]
    command += ["-p", "no:cacheprovider", f"--basetemp={basetemp}", *args]
    return subprocess.run(
        command, cwd=clone, env=environment, capture_output=True, text=True, check=False
    )


def guard_report(report: Path) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    return found


def ran_from_the_clone(report: Path, clone: Path) -> list[str]:
    """The files the run imported or collected, every one of them in the clone."""
    found = guard_report(report)
    assert found["outside"] == [], "a test read outside the clone"
    assert str(clone / "autoscaler" / "__init__.py") in found["files"]
    elsewhere = [f for f in found["files"] if not f.startswith(f"{clone}{os.sep}")]
    assert elsewhere == [], "the project's code was imported from outside the clone"
    files: list[str] = found["files"]
    return files


def test_the_clone_collects_every_test_reading_nothing_outside_it(
    clone: Path, tmp_path: Path
) -> None:
    report = tmp_path / "collect.json"

    result = run_pytest_in(clone, report, "--collect-only", "-q", basetemp=tmp_path / "t")

    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert " tests collected" in result.stdout, result.stdout[-500:]
    collected = ran_from_the_clone(report, clone.resolve())
    assert str(clone.resolve() / END_TO_END.partition("::")[0]) in collected


def test_the_clone_passes_its_crd_validations_and_an_end_to_end_test(
    clone: Path, tmp_path: Path
) -> None:
    require_binaries()  # the end-to-end test needs Prometheus: skip (or fail) as it would
    report = tmp_path / "run.json"

    result = run_pytest_in(
        clone,
        report,
        "-q",
        "-p",
        "no:randomly",
        *CRD_TESTS,
        END_TO_END,
        basetemp=tmp_path / "t",
    )

    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summary = result.stdout.strip().splitlines()[-1]
    assert "skipped" not in summary and "deselected" not in summary, summary
    ran = ran_from_the_clone(report, clone.resolve())
    files = [*CRD_TESTS, END_TO_END.partition("::")[0]]
    assert {str(clone.resolve() / path) for path in files} <= set(ran)


def test_a_test_reading_the_original_repository_fails_the_clone_run(
    clone: Path, tmp_path: Path
) -> None:
    planted = clone / "tests" / "test_planted_read.py"
    planted.write_text(
        "from pathlib import Path\n\n\n"
        "def test_reads_the_original() -> None:\n"
        f"    assert Path({str(REPO / 'README.md')!r}).read_text()\n",
        encoding="utf-8",
    )
    try:
        result = run_pytest_in(
            clone, tmp_path / "planted.json", "-q", str(planted), basetemp=tmp_path / "t"
        )
    finally:
        planted.unlink()

    assert "1 passed" in result.stdout, result.stdout[-3000:]
    assert result.returncode == pytest.ExitCode.TESTS_FAILED
    assert guard_report(tmp_path / "planted.json")["outside"] == [str(REPO / "README.md")]
