"""The bearer token of a kubeconfig context, read from the YAML like kubectl merges it.

`KUBECONFIG` may list several files (`:`-separated); the first file that names a current
context wins, and the first definition of each context and user wins. Static tokens and
token files are supported; exec plugins and auth providers are not (pass `--token`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml


class KubeconfigError(Exception):
    """No usable token could be read; the message says what to do instead."""


def kubeconfig_paths(environ: Mapping[str, str] | None = None) -> list[Path]:
    env = os.environ if environ is None else environ
    listed = [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        return [Path(p).expanduser() for p in listed]
    return [Path(env.get("HOME", str(Path.home()))) / ".kube" / "config"]


def kubeconfig_token(
    paths: list[Path] | None = None,
    *,
    context: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> str:
    """The token of `context` (the current one by default)."""
    merged = _merge([_load(p) for p in (paths or kubeconfig_paths(environ)) if p.exists()])
    name = context or merged["current-context"]
    if not name:
        raise KubeconfigError("no current kubeconfig context; pass --context or --token")
    entry = merged["contexts"].get(name)
    if entry is None:
        raise KubeconfigError(f"kubeconfig has no context {name!r}")
    user_name = str((entry.get("context") or {}).get("user") or "")
    user = (merged["users"].get(user_name) or {}).get("user") or {}
    return _token_of(user, context=name)


def _load(path: Path) -> Mapping[str, Any]:
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise KubeconfigError(f"cannot read kubeconfig {path}: {exc}") from exc
    return loaded if isinstance(loaded, Mapping) else {}


def _merge(configs: list[Mapping[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {"current-context": "", "contexts": {}, "users": {}}
    for config in configs:
        merged["current-context"] = merged["current-context"] or config.get("current-context")
        for section in ("contexts", "users"):
            for item in config.get(section) or []:
                if isinstance(item, Mapping) and item.get("name"):
                    merged[section].setdefault(str(item["name"]), item)
    return merged


def _token_of(user: Mapping[str, Any], *, context: str) -> str:
    if user.get("token"):
        return str(user["token"])
    if user.get("tokenFile"):
        try:
            return Path(str(user["tokenFile"])).expanduser().read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise KubeconfigError(f"cannot read the token file of {context!r}: {exc}") from exc
    how = "an exec plugin" if user.get("exec") else "no bearer token"
    raise KubeconfigError(
        f"kubeconfig context {context!r} uses {how}; pass --token "
        "(for example `--token $(kubectl create token <service-account>)`)"
    )
