"""The chart's RBAC as a comparable summary, and the golden copies of it (tests/deploy/golden/).

The golden files hold the RBAC the chart rendered on main before ISSUE 17 (commit 20266c0):
with the suspend actuators off the chart must render exactly that, so turning the KAI or
KubeRay actuator off really takes every permission they need away. Labels (the chart's
version) are left out: only names, rules, role references and subjects are compared.

Regenerate ONLY when a change to the RBAC is meant, and say so in the commit:
    .venv/bin/python -m tests.deploy.rbac_golden
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.deploy.tooling import Manifest, render

GOLDEN = Path(__file__).resolve().parent / "golden"
RBAC_KINDS = ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
# Each golden file: the `helm template` arguments it was rendered with.
GOLDEN_RENDERS: dict[str, tuple[str, ...]] = {
    "rbac-defaults.yaml": (),
    "rbac-namespaces-include.yaml": ("--set", "config.policy.namespaces.include={team-a,team-b}"),
}


def rbac_summary(manifests: list[Manifest]) -> list[dict[str, Any]]:
    """The RBAC objects, in render order, without labels."""
    summary = []
    for manifest in manifests:
        if manifest["kind"] not in RBAC_KINDS:
            continue
        metadata = manifest["metadata"]
        entry: dict[str, Any] = {"kind": manifest["kind"], "name": metadata["name"]}
        if "namespace" in metadata:
            entry["namespace"] = metadata["namespace"]
        for field in ("rules", "roleRef", "subjects"):
            if field in manifest:
                entry[field] = manifest[field]
        summary.append(entry)
    return summary


def golden(name: str) -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = yaml.safe_load((GOLDEN / name).read_text(encoding="utf-8"))
    return loaded


def _write_golden() -> None:
    for name, args in GOLDEN_RENDERS.items():
        text = yaml.safe_dump(rbac_summary(render(*args)), sort_keys=False)
        (GOLDEN / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    _write_golden()
