"""`serve` as an admin runs it: a real process, a kubeconfig, a Prometheus URL; SIGTERM stops it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import yaml

from tests.conftest import LiveMetrics
from tests.support.kube_server import KubeServer
from tests.support.prom import free_port
from tests.support.serve_process import write_kubeconfig


def test_serve_runs_cycles_until_sigterm_and_stops_cleanly(
    tmp_path: Path, kube_server: KubeServer, live_metrics: LiveMetrics
) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", kube_server)
    # Reads are authorized by default: the kubeconfig's user may list Workloads everywhere.
    kube_server.reviews.add_token("serve-test-token", username="operator")
    kube_server.reviews.allow(
        user="operator", verb="list", group="kueue.x-k8s.io", resource="workloads"
    )
    api_port = free_port()
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "prometheus": {"url": live_metrics.prometheus.url},
                "cluster": {"kubeconfig": str(kubeconfig)},
                "loop": {"interval": "1s"},
                "logging": {"format": "json"},
                "api": {"host": "127.0.0.1", "port": api_port},
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
        ready = httpx.get(f"http://127.0.0.1:{api_port}/readyz", timeout=5)
        status = subprocess.run(
            [
                sys.executable,
                "-m",
                "autoscaler",
                "status",
                "--server",
                f"http://127.0.0.1:{api_port}",
                "-o",
                "json",
            ],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        )
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
    assert ready.status_code == 200, ready.text
    assert ready.json()["ready"] is True
    assert ready.json()["clusterOk"] is True
    assert status.returncode == 0, status.stderr
    assert isinstance(json.loads(status.stdout), (list, dict))
