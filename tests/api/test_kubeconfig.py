"""Reading a context's token from kubeconfig files with the official `kubernetes` loader."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler.client.kubeconfig import KubeconfigError, kubeconfig_paths, kubeconfig_token


def kubeconfig(path: Path, *, current: str | None, users: dict[str, dict[str, Any]]) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://k8s.example:6443"}}],
        "contexts": [
            {"name": f"{user}-ctx", "context": {"cluster": "c", "user": user}} for user in users
        ],
        "users": [{"name": user, "user": entry} for user, entry in users.items()],
    }
    if current:
        config["current-context"] = current
    path.write_text(yaml.safe_dump(config))
    return path


def exec_plugin(tmp_path: Path, *, prints: dict[str, Any], exit_code: int = 0) -> dict[str, Any]:
    """A kubeconfig `exec` entry running a tiny script, as EKS, GKE and AKS helpers do."""
    script = tmp_path / "credential-helper.py"
    script.write_text(
        "import json, sys\n"
        f"print(json.dumps({prints!r}))\n"
        f"sys.stderr.write('helper says no' if {exit_code} else '')\n"
        f"sys.exit({exit_code})\n"
    )
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(script)],
            "interactiveMode": "Never",
        }
    }


def exec_credential(token: str) -> dict[str, Any]:
    return {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": token},
    }


def test_the_current_contexts_token_is_used(tmp_path: Path) -> None:
    path = kubeconfig(
        tmp_path / "config",
        current="alice-ctx",
        users={"alice": {"token": "a-token"}, "bob": {"token": "b-token"}},
    )
    assert kubeconfig_token([path]) == "a-token"
    assert kubeconfig_token([path], context="bob-ctx") == "b-token"


def test_a_token_file_is_read_without_its_newline(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("file-token\n")
    path = kubeconfig(
        tmp_path / "config",
        current="alice-ctx",
        users={"alice": {"tokenFile": str(tmp_path / "token")}},
    )
    assert kubeconfig_token([path]) == "file-token"


def test_an_exec_plugins_credential_is_used(tmp_path: Path) -> None:
    plugin = exec_plugin(tmp_path, prints=exec_credential("from-the-plugin"))
    path = kubeconfig(tmp_path / "config", current="alice-ctx", users={"alice": plugin})
    assert kubeconfig_token([path]) == "from-the-plugin"


def test_several_files_merge_into_one_view(tmp_path: Path) -> None:
    first = kubeconfig(tmp_path / "one", current=None, users={"alice": {"token": "first"}})
    second = kubeconfig(tmp_path / "two", current="alice-ctx", users={"alice": {"token": "second"}})
    environ = {"KUBECONFIG": os.pathsep.join([str(first), str(second)])}
    assert kubeconfig_paths(environ) == [first, second]
    assert kubeconfig_token(environ=environ) == "first"


@pytest.mark.parametrize(
    ("current", "user", "message"),
    [
        pytest.param(None, {"token": "x"}, "current-context", id="no-context"),
        pytest.param("carol-ctx", {"token": "x"}, "carol-ctx", id="unknown-context"),
        pytest.param(
            "alice-ctx",
            {"client-certificate-data": "eA=="},
            "gave no bearer token; pass --token-file or set IGA_TOKEN",
            id="client-certificate",
        ),
    ],
)
def test_no_usable_token_is_an_error_that_says_what_to_do(
    tmp_path: Path, current: str | None, user: dict[str, Any], message: str
) -> None:
    path = kubeconfig(tmp_path / "config", current=current, users={"alice": user})
    with pytest.raises(KubeconfigError, match=message):
        kubeconfig_token([path])


def test_a_failing_exec_plugin_is_one_error_carrying_the_plugins_words(tmp_path: Path) -> None:
    plugin = exec_plugin(tmp_path, prints={}, exit_code=1)
    path = kubeconfig(tmp_path / "config", current="alice-ctx", users={"alice": plugin})
    with pytest.raises(KubeconfigError) as refused:
        kubeconfig_token([path])
    assert "exec: process returned 1. helper says no" in str(refused.value)
    assert "gave no bearer token" in str(refused.value)


def test_no_kubeconfig_at_all_says_where_else_a_token_comes_from(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match="no kubeconfig found"):
        kubeconfig_token(environ={"KUBECONFIG": str(tmp_path / "missing")})
