"""The static tokens file is read within the settings loader's bounds: a hostile file stops
`serve` with one line and exit 2, and no refusal shows a token."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from autoscaler.api.static_tokens import StaticTokens
from autoscaler.core.documents import MAX_DEPTH, FileRefused
from autoscaler.core.errors import ConfigError
from autoscaler.domain.access import Target
from tests.support.kube_server import KubeServer
from tests.support.serve_process import write_config, write_kubeconfig

ADMIN = Target(group="", resource="configmaps", verb="update", namespace="gpu-ops", name="state")
KEY = "api.auth.staticTokensFile"


@pytest.mark.parametrize(
    ("data", "refusal"),
    [
        pytest.param("tokens: []\n".encode("utf-16"), "UTF-16 text, not UTF-8", id="utf-16"),
        pytest.param(bytes(range(256)), "not UTF-8 text", id="binary"),
        pytest.param(b"tokens: " + b"[" * 5000 + b"]" * 5000, "nested deeper", id="deep"),
        pytest.param(b"tokens: &t [*t]\n", "holds it (endless)", id="endless-alias"),
    ],
)
def test_a_hostile_tokens_file_is_refused_in_one_line_naming_the_key(
    tmp_path: Path, data: bytes, refusal: str
) -> None:
    path = tmp_path / "tokens.yaml"
    path.write_bytes(data)
    with pytest.raises(FileRefused) as refused:
        StaticTokens.load(path, admin_target=ADMIN)
    assert str(refused.value).startswith(f"{path} ({KEY}): ")
    assert refusal in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_refused_entry_is_described_without_its_token(tmp_path: Path) -> None:
    path = tmp_path / "tokens.yaml"
    path.write_text("tokens:\n  - {token: short-secret-1, username: alice}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        StaticTokens.load(path, admin_target=ADMIN)
    assert f"{KEY}: {path}: tokens[0].token: String should have at least 16 characters" in str(
        refused.value
    )
    assert "short-secret-1" not in str(refused.value)


def test_serve_stops_at_a_hostile_tokens_file_with_one_line_and_exit_2(
    tmp_path: Path, kube_server: KubeServer
) -> None:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_bytes(b"tokens: " + b"[" * MAX_DEPTH + b"]" * MAX_DEPTH)
    settings = {
        "cluster": {"kubeconfig": str(write_kubeconfig(tmp_path / "kubeconfig", kube_server))},
        "leaderElection": {"enabled": False},
        "api": {"host": "127.0.0.1", "auth": {"mode": "static", "staticTokensFile": str(tokens)}},
    }
    config = write_config(tmp_path / "config.yaml", settings)
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "autoscaler", "serve", "--config", str(config)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"error: {tokens} ({KEY}): nested deeper than {MAX_DEPTH} levels — no setting nests "
        "that deep; check the indentation"
    ]
    assert time.monotonic() - started < 30
