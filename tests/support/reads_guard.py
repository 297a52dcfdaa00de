"""A pytest plugin for a run in a fresh clone: it records every file the test process opens
or lists outside the clone, under the directories named in READS_GUARD_FORBIDDEN (the
original repository's surroundings), and fails the run when there is any. At the end it
writes READS_GUARD_REPORT (JSON): those reads, and the files the project's modules and
the collected tests came from.

    READS_GUARD_FORBIDDEN=/work READS_GUARD_ALLOWED=/work/repo/.venv \\
    READS_GUARD_REPORT=/tmp/report.json python -m pytest -p tests.support.reads_guard ...

The clone's parent (which must hold nothing but the clone) is always forbidden; the clone and
the directories in READS_GUARD_ALLOWED (the interpreter's venv, the tools' directory) never
are. Python's audit hooks see `open`, `os.listdir` and `os.scandir` in this process only.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

WATCHED = frozenset({"open", "os.listdir", "os.scandir"})


def _paths(variable: str) -> list[str]:
    return [os.path.realpath(p) for p in os.environ.get(variable, "").split(os.pathsep) if p]


def _under(path: str, roots: list[str]) -> bool:
    return any(path == root or path.startswith(root + os.sep) for root in roots)


class ReadsGuard:
    def __init__(self, clone: Path) -> None:
        self.clone = os.path.realpath(clone)
        self.forbidden = [os.path.dirname(self.clone), *_paths("READS_GUARD_FORBIDDEN")]
        self.allowed = [self.clone, *_paths("READS_GUARD_ALLOWED")]
        self.outside: set[str] = set()

    def audit(self, event: str, args: tuple[Any, ...]) -> None:
        if event not in WATCHED or not args or isinstance(args[0], int) or args[0] is None:
            return
        path = os.path.realpath(os.fsdecode(args[0]))
        if _under(path, self.forbidden) and not _under(path, self.allowed):
            self.outside.add(path)

    def module_files(self, session: pytest.Session) -> list[str]:
        """Where the project's modules, its test helpers and the collected tests came from."""
        files = {
            os.path.realpath(module.__file__)
            for name, module in list(sys.modules.items())
            if name.partition(".")[0] in ("autoscaler", "tests") and module.__file__
        }
        return sorted(files | {os.path.realpath(item.path) for item in session.items})


_active: list[ReadsGuard] = []  # an audit hook cannot be removed: it checks this list


def _audit(event: str, args: tuple[Any, ...]) -> None:
    for guard in _active:
        guard.audit(event, args)


def pytest_configure(config: pytest.Config) -> None:
    _active.append(ReadsGuard(config.rootpath))
    sys.addaudithook(_audit)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if not _active:
        return
    guard = _active.pop()
    report = {"outside": sorted(guard.outside), "files": guard.module_files(session)}
    if target := os.environ.get("READS_GUARD_REPORT"):
        Path(target).write_text(json.dumps(report, indent=1), encoding="utf-8")
    if guard.outside:
        print("\nreads outside the clone:", *sorted(guard.outside), sep="\n  ", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
