"""Reading the current context's token from kubeconfig files, as kubectl merges them."""

from __future__ import annotations

import os
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


def test_the_current_contexts_token_is_used(tmp_path: Path) -> None:
    path = kubeconfig(
        tmp_path / "config",
        current="alice-ctx",
        users={"alice": {"token": "a-token"}, "bob": {"token": "b-token"}},
    )
    assert kubeconfig_token([path]) == "a-token"
    assert kubeconfig_token([path], context="bob-ctx") == "b-token"


def test_a_token_file_is_read(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("file-token\n")
    path = kubeconfig(
        tmp_path / "config",
        current="alice-ctx",
        users={"alice": {"tokenFile": str(tmp_path / "token")}},
    )
    assert kubeconfig_token([path]) == "file-token"


def test_several_files_merge_with_the_first_definition_winning(tmp_path: Path) -> None:
    first = kubeconfig(tmp_path / "one", current=None, users={"alice": {"token": "first"}})
    second = kubeconfig(tmp_path / "two", current="alice-ctx", users={"alice": {"token": "second"}})
    environ = {"KUBECONFIG": os.pathsep.join([str(first), str(second)])}
    assert kubeconfig_paths(environ) == [first, second]
    assert kubeconfig_token(environ=environ) == "first"


@pytest.mark.parametrize(
    ("current", "user", "message"),
    [
        pytest.param(None, {"token": "x"}, "no current kubeconfig context", id="no-context"),
        pytest.param("carol-ctx", {"token": "x"}, "no context 'carol-ctx'", id="unknown-context"),
        pytest.param(
            "alice-ctx", {"exec": {"command": "aws"}}, "uses an exec plugin", id="exec-plugin"
        ),
        pytest.param(
            "alice-ctx",
            {"client-certificate-data": "x"},
            "no bearer token",
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
