"""The static token file: each entry is one identity with its own rights, and a file the
service would misread (a username or a token listed twice) is refused when it is read, by
the service and by check-config alike, without ever printing a token."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from autoscaler.api.access import namespace_target
from autoscaler.api.static_tokens import StaticToken, StaticTokens, read_token_file
from autoscaler.core.errors import ConfigError
from autoscaler.domain.access import Identity, Target, read_target
from tests.support.check_config import check_config
from tests.support.kube_server import KubeServer
from tests.support.serve_process import write_kubeconfig

ADMIN = Target("update", "", "configmaps", "idle-gpu-autoscaler", "idle-gpu-autoscaler-state")
ALICE = "alice-first-token-0123456789"
ALICE_TOO = "alice-second-token-0123456789"
TWO_ALICES = f"""\
tokens:
  - token: {ALICE}
    username: alice
    namespaces: ["*"]
    admin: true
  - token: {ALICE_TOO}
    username: alice
"""


def written(tmp_path: Path, text: str, name: str = "tokens.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_second_token_of_a_username_has_its_own_rights_not_the_first_entrys() -> None:
    """Should such a table be built anyway (the file refuses it, below), the token decides."""
    tokens = StaticTokens(
        (
            StaticToken(token=ALICE, username="alice", namespaces=["*"], admin=True),
            StaticToken(token=ALICE_TOO, username="alice"),
        ),
        admin_target=ADMIN,
    )
    first, second = tokens.authenticate(ALICE), tokens.authenticate(ALICE_TOO)
    assert first is not None and second is not None
    assert first.username == second.username == "alice"
    for target in (ADMIN, namespace_target("team-a"), read_target(None)):
        assert tokens.authorize(first, target).allowed, target
        assert not tokens.authorize(second, target).allowed, target


def test_an_identity_the_table_did_not_authenticate_holds_nothing() -> None:
    tokens = StaticTokens(
        (StaticToken(token=ALICE, username="alice", namespaces=["*"], admin=True),),
        admin_target=ADMIN,
    )
    for forged in (Identity("alice"), Identity("alice", uid="static-token-2"), Identity("bob")):
        assert not tokens.authorize(forged, ADMIN).allowed, forged


def test_read_namespaces_let_a_token_read_there_but_change_nothing() -> None:
    tokens = StaticTokens(
        (StaticToken(token=ALICE, username="keda", readNamespaces=["team-a"]),),
        admin_target=ADMIN,
    )
    keda = tokens.authenticate(ALICE)
    assert keda is not None
    assert tokens.authorize(keda, read_target("team-a")).allowed
    refused = tokens.authorize(keda, namespace_target("team-a"))
    assert (refused.allowed, refused.reason) == (
        False,
        "static token may not change workloads in team-a",
    )
    assert not tokens.authorize(keda, read_target("team-b")).allowed
    assert not tokens.authorize(keda, read_target(None)).allowed


def test_a_username_listed_twice_is_refused_naming_it_and_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        read_token_file(written(tmp_path, TWO_ALICES))
    [problem] = refused.value.problems
    assert problem.startswith("api.auth.staticTokensFile: ")
    assert "username alice is listed more than once" in problem
    assert "Give each token its own username" in problem
    assert ALICE not in str(refused.value) and ALICE_TOO not in str(refused.value)


def test_a_token_listed_twice_is_refused_without_showing_it(tmp_path: Path) -> None:
    text = f"tokens:\n  - {{token: {ALICE}, username: a}}\n  - {{token: {ALICE}, username: b}}\n"
    with pytest.raises(ConfigError) as refused:
        read_token_file(written(tmp_path, text))
    assert "entries 1, 2 share one token" in str(refused.value)
    assert ALICE not in str(refused.value)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        pytest.param(
            "tokens:\n  - {token: short-secret, username: a}\n",
            "tokens[0].token: String should have at least 16 characters",
            id="short-token",
        ),
        pytest.param(
            f"tokens:\n  - {{token: {ALICE}, username: a, role: admin}}\n",
            "tokens[0].role: Extra inputs are not permitted",
            id="unknown-key",
        ),
        pytest.param(f"tokens: [{{token: {ALICE}", "not valid YAML at line 2", id="broken-yaml"),
    ],
)
def test_an_invalid_file_is_refused_by_what_is_wrong_never_by_its_values(
    tmp_path: Path, text: str, says: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        read_token_file(written(tmp_path, text))
    assert says in str(refused.value)
    for secret in ("short-secret", ALICE):
        assert secret not in str(refused.value)


def config_for(tmp_path: Path, tokens: Path) -> Path:
    text = f"api:\n  auth:\n    mode: static\n    staticTokensFile: {tokens}\n"
    return written(tmp_path, text, "config.yaml")


def test_check_config_refuses_a_token_file_the_service_would_refuse(tmp_path: Path) -> None:
    result = check_config(config_for(tmp_path, written(tmp_path, TWO_ALICES)))
    assert result.returncode == 2
    assert result.stderr.startswith("error: ")
    assert "username alice is listed more than once" in result.stderr
    assert ALICE not in result.stderr + result.stdout


def test_check_config_says_when_the_token_file_is_not_there_to_check(tmp_path: Path) -> None:
    result = check_config(config_for(tmp_path, tmp_path / "mounted-in-the-pod.yaml"))
    assert result.returncode == 0
    assert "mounted-in-the-pod.yaml is not here, so not checked" in result.stderr


def test_the_service_does_not_start_with_a_username_listed_twice(
    tmp_path: Path, kube_server: KubeServer
) -> None:
    config = {
        "cluster": {"kubeconfig": str(write_kubeconfig(tmp_path / "kubeconfig", kube_server))},
        "prometheus": {"url": "http://127.0.0.1:9"},  # never reached: it stops before a cycle
        "api": {"auth": {"mode": "static", "staticTokensFile": str(written(tmp_path, TWO_ALICES))}},
    }
    command = [sys.executable, "-m", "autoscaler", "serve", "--config"]
    path = written(tmp_path, yaml.safe_dump(config), "config.yaml")
    result = subprocess.run(
        [*command, str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: ")
    assert "username alice is listed more than once" in result.stderr
    assert "Traceback" not in result.stderr and ALICE not in result.stderr
