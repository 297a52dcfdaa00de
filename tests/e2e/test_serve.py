"""`serve` as an admin runs it: a real process, a kubeconfig, a Prometheus URL; SIGTERM stops it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from tests.conftest import LiveMetrics
from tests.support.kube_server import KubeServer


def write_kubeconfig(path: Path, server: KubeServer) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "test", "cluster": {"server": server.url}}],
        "users": [{"name": "test", "user": {"token": "serve-test-token"}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
        "current-context": "test",
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_serve_runs_cycles_until_sigterm_and_stops_cleanly(
    tmp_path: Path, kube_server: KubeServer, live_metrics: LiveMetrics
) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", kube_server)
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "prometheus": {"url": live_metrics.prometheus.url},
                "cluster": {"kubeconfig": str(kubeconfig)},
                "loop": {"interval": "1s"},
                "logging": {"format": "json"},
            }
        ),
        encoding="utf-8",
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "autoscaler", "serve", "--config", str(config)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        lines = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = process.stderr.readline()
            lines.append(line)
            if '"cycle"' in line or not line:
                break
        process.send_signal(signal.SIGTERM)
        _, remaining = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    log = [json.loads(line) for line in (*lines, *remaining.splitlines()) if line.strip()]
    messages = [entry["message"] for entry in log]
    assert process.returncode == 0, messages
    assert any("dry-run" in m for m in messages), messages
    assert any("SIGTERM" in m for m in messages), messages
    assert messages[-1] == "stopped cleanly"
