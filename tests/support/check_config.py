"""`check-config` run as a person runs it: a child process on a config file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def check_config(path: Path | str, *more: str) -> subprocess.CompletedProcess[str]:
    """`more`: further arguments, such as `--kubeconfig PATH`."""
    command = [sys.executable, "-m", "autoscaler", "check-config", "--config", str(path), *more]
    return subprocess.run(command, capture_output=True, text=True, check=False)
