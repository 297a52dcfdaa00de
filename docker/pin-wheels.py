"""Rewrite the hashes of docker/requirements.txt and docker/build-requirements.txt for every
architecture the image is built for, from the `name==version` pins already in them.

Run from the repository root, with PyPI reachable: `python docker/pin-wheels.py`. For each
architecture it asks pip for the wheels pip in the image would pick (CPython 3.11, glibc 2.36 as
on Debian bookworm: every manylinux tag from 2_36 down, as pip ranks them), hashes them, and
writes each pin with one --hash per distinct wheel plus one comment line per hash naming its
wheel (tests/deploy/test_image.py reads those names to check that every architecture is covered).
The comment block at the top of each file is kept as it is.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tempfile
from pathlib import Path

DOCKER = Path(__file__).resolve().parent
FILES = (DOCKER / "requirements.txt", DOCKER / "build-requirements.txt")
# glibc 2.36 (bookworm) down to the oldest manylinux tag of each architecture.
OLDEST_GLIBC = {"x86_64": 5, "aarch64": 17}
LEGACY_TAGS = {
    "x86_64": ("manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"),
    "aarch64": ("manylinux2014_aarch64",),
}
PIN = re.compile(r"^([A-Za-z0-9._-]+)==(\S+)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def platform_flags(arch: str) -> list[str]:
    tags = [f"manylinux_2_{minor}_{arch}" for minor in range(36, OLDEST_GLIBC[arch] - 1, -1)]
    tags += LEGACY_TAGS[arch]
    return [flag for tag in tags for flag in ("--platform", tag)]


def download(pins: list[tuple[str, str]], arch: str, into: Path) -> list[Path]:
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
    command += ["--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp"]
    command += ["--abi", "cp311", "--abi", "abi3", "--abi", "none", *platform_flags(arch)]
    command += ["--dest", str(into), *(f"{name}=={version}" for name, version in pins)]
    subprocess.run(command, check=True)
    return sorted(into.glob("*.whl"))


def wheels_by_pin(pins: list[tuple[str, str]], folder: Path) -> dict[str, dict[str, str]]:
    """{canonical name: {sha256: wheel filename}} over every architecture."""
    found: dict[str, dict[str, str]] = {canonical(name): {} for name, _ in pins}
    for arch in OLDEST_GLIBC:
        for wheel in download(pins, arch, folder / arch):
            digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
            found[canonical(wheel.name.split("-")[0])][digest] = wheel.name
    return found


def rewrite(path: Path, folder: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    header = []
    for line in lines:
        if not line.startswith("#"):
            break
        header.append(line)
    pins = [(m[1], m[2]) for m in map(PIN.match, lines) if m]
    wheels = wheels_by_pin(pins, folder / path.stem)
    out = list(header)
    for name, version in pins:
        hashed = wheels[canonical(name)]
        out.append(f"{name}=={version} \\")
        out += [f"    --hash=sha256:{digest} \\" for digest in hashed]
        out[-1] = out[-1].removesuffix(" \\")
        out += [f"    # {digest[:12]} {wheel}" for digest, wheel in hashed.items()]
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        for path in FILES:
            rewrite(path, Path(scratch))


if __name__ == "__main__":
    main()
