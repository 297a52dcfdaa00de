"""A smell detector for pieces too big to read in one sitting, not a reason to split a concept.

A module or function over the limit is worth a look: it may hold two concepts. One concept
that needs more room keeps it in one module; splitting it to pass this test scatters it.
Generated gRPC code (`*_pb2*`) is not ours to size.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "autoscaler"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
TOP_LEVEL_MODULES = {"__init__.py", "__main__.py", "cli.py"}


def our_modules() -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("*.py") if "_pb2" not in path.name)


def relative(path: Path) -> str:
    return str(path.relative_to(PACKAGE.parent))


def function_lengths(path: Path) -> dict[str, int]:
    """`module.py:line name` → lines from the `def` to the last line of the body."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        f"{relative(path)}:{node.lineno} {node.name}": node.end_lineno - node.lineno + 1
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno
    }


def test_the_package_has_modules_to_measure() -> None:
    assert len(our_modules()) > 100


def test_no_module_is_over_400_lines() -> None:
    sizes = {
        relative(path): len(path.read_text(encoding="utf-8").splitlines()) for path in our_modules()
    }

    too_long = {module: lines for module, lines in sizes.items() if lines > MAX_MODULE_LINES}

    assert too_long == {}, f"modules over {MAX_MODULE_LINES} lines: {too_long}"


def test_no_function_is_over_60_lines() -> None:
    lengths: dict[str, int] = {}
    for path in our_modules():
        lengths |= function_lengths(path)

    too_long = {
        function: lines for function, lines in lengths.items() if lines > MAX_FUNCTION_LINES
    }

    assert too_long == {}, f"functions over {MAX_FUNCTION_LINES} lines: {too_long}"


def test_only_the_entry_points_sit_directly_under_the_package() -> None:
    loose = {path.name for path in PACKAGE.glob("*.py")}

    assert loose <= TOP_LEVEL_MODULES, f"give these a package: {sorted(loose - TOP_LEVEL_MODULES)}"
