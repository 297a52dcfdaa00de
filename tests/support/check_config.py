"""`check-config` run as a person runs it: a child process on a config file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def check_config(path: Path | str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "autoscaler", "check-config", "--config", str(path)]
    return subprocess.run(command, capture_output=True, text=True, check=False)
