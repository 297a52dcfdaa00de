"""`idle-gpu-autoscaler serve` as a real child process, pointed at the test API server.

    config = write_config(tmp / "config.yaml", {...})      # plus a kubeconfig for the server
    with ServeProcess(config, log=tmp / "serve.log") as serve:
        ...
        serve.kill()                                       # SIGKILL: no clean-up at all
        serve.start()                                      # the same command again

Its log goes to a file, never a pipe: a chatty process must not block on a full pipe
nobody reads.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from tests.support.kube_server import KubeServer


def write_kubeconfig(path: Path, server: KubeServer, *, token: str = "serve-test-token") -> Path:
    """A kubeconfig for the test server; the token names the client in its request log."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "test", "cluster": {"server": server.url}}],
        "users": [{"name": "test", "user": {"token": token}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
        "current-context": "test",
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def write_config(path: Path, settings: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(settings), encoding="utf-8")
    return path


class ServeProcess:
    def __init__(self, config: Path, *, log: Path, env: dict[str, str] | None = None) -> None:
        self.config = config
        self.log = log
        self.env = {**os.environ, **(env or {})}
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as sink:  # the child keeps its own descriptor
            self._process = subprocess.Popen(
                [sys.executable, "-m", "autoscaler", "serve", "--config", str(self.config)],
                stdout=subprocess.DEVNULL,
                stderr=sink,
                env=self.env,
            )

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def kill(self) -> None:
        """SIGKILL, as the OOM killer or a node loss would: no handler runs."""
        if self._process is not None:
            self._process.send_signal(signal.SIGKILL)
            self._process.wait(timeout=10)

    def stop(self, timeout: float = 30) -> int | None:
        """SIGTERM and wait; SIGKILL if it does not stop in time. The exit code."""
        if self._process is None:
            return None
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
            try:
                self._process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=10)
        return self._process.returncode

    def messages(self) -> list[str]:
        """The `message` of every JSON log line so far (logging.format must be json)."""
        found = []
        for line in self.log.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                found.append(str(json.loads(line)["message"]))
            except (ValueError, KeyError, TypeError):
                found.append(line)
        return found

    def __enter__(self) -> ServeProcess:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
