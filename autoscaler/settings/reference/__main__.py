"""`python -m autoscaler.settings.reference [--check] [--root DIR]`: rewrite the generated
settings text, or (`--check`) exit 1 naming each stale file and the command that mends it."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from autoscaler.settings.reference import CHECKOUT, COMMAND, RENDERINGS, render, stale


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__)
    parser.add_argument("--check", action="store_true", help="change nothing; fail when stale")
    parser.add_argument("--root", type=Path, default=CHECKOUT, help="the repository's root")
    args = parser.parse_args(argv)
    root: Path = args.root
    if args.check:
        found = stale(root)
        for path in found:
            print(f"{path} differs from the settings model: run {COMMAND}", file=sys.stderr)
        return 1 if found else 0
    current = {path: (root / path).read_text(encoding="utf-8") for path in RENDERINGS}
    for path, text in render(current).items():
        if text != current[path]:
            (root / path).write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
