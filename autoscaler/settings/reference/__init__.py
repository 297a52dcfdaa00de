"""The settings text, written once: the chart's schema (its `config` part), the example file and
the reference page are drawn from the settings model, whose fields carry every description.

    python -m autoscaler.settings.reference           # rewrite the files
    python -m autoscaler.settings.reference --check   # fail naming the stale ones

`render` is pure (the files as they are → the files as they should be); `__main__` reads and
writes them. tests/test_settings_reference.py fails while a committed file differs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from autoscaler.settings.reference.example import example_text
from autoscaler.settings.reference.page import page_text
from autoscaler.settings.reference.schema import chart_schema

COMMAND = "python -m autoscaler.settings.reference"
CHECKOUT = Path(__file__).resolve().parents[3]  # the repository holding this package

# Each generated file, from the repository's root → its text, from the file as it is now.
RENDERINGS: dict[str, Callable[[str], str]] = {
    "charts/idle-gpu-autoscaler/values.schema.json": chart_schema,  # the rest stays hand-written
    "config/example.yaml": lambda _current: example_text(),
    "docs/CONFIG.md": lambda _current: page_text(),
}


def render(current: Mapping[str, str]) -> dict[str, str]:
    """Each generated file's text, given each file's current text."""
    return {path: draw(current[path]) for path, draw in RENDERINGS.items()}


def stale(root: Path) -> list[str]:
    """The generated files under `root` that differ from what the model gives now."""
    current = {path: _read(root / path) for path in RENDERINGS}
    wanted = render(current)
    return [path for path in RENDERINGS if current[path] != wanted[path]]


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""
