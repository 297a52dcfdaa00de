"""A real part a test runs (a tool, a browser, Prometheus) missing on this machine: the test
is skipped saying what to install, or failed when REQUIRE_REAL=1 (CI), where every real part
must be there."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def missing(message: str) -> NoReturn:
    """Skip the test for a missing real part, or fail it when REQUIRE_REAL=1."""
    if os.environ.get("REQUIRE_REAL") == "1":
        pytest.fail(f"REQUIRE_REAL=1 but {message}")
    pytest.skip(message)
