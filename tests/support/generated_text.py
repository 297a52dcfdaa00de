"""Generated text kept in the repository: a table between two marker lines of a page, or a
whole file, rendered from the table it comes from. One shape for every generator:
`committed()` is the text as it stands, `main(args, render)` rewrites it, or with `--check`
only says whether it is stale (exit 1)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GeneratedText:
    path: Path
    module: str  # the generator, run as `python -m <module>`
    markers: tuple[str, str] | None = None  # begin and end lines, both kept; None: whole file

    def committed(self) -> str:
        text = self.path.read_text(encoding="utf-8")
        if self.markers is None:
            return text
        begin, end = self.markers
        return text[text.index(begin) : text.index(end) + len(end)]

    def rewrite(self, rendered: str) -> None:
        if self.markers is not None:  # the rest of the page stays as it is
            rendered = self.path.read_text(encoding="utf-8").replace(self.committed(), rendered)
        self.path.write_text(rendered, encoding="utf-8")

    def main(self, args: Sequence[str], render: Callable[[], str]) -> int:
        if list(args) == ["--check"]:
            if self.committed() == render():
                return 0
            print(f"{self.path.name} is stale: run `python -m {self.module}`")
            return 1
        self.rewrite(render())
        return 0
