"""Only production code in the package: nothing in autoscaler/ is there for the tests alone.

A function, class or method defined in autoscaler/ whose name nothing else in the package uses
(its own body and the other definitions of that name aside), nor any benchmark, while a test
does, is test code living in the package: it belongs under tests/. So is a module that only
tests, or other such modules, import; its definitions then count as used only by what imports
it. Found by name, the check errs towards "used": a name that production code also uses for
something else passes. Used, whatever the tests do:
- a decorated function other than a property, class or static method: its decorator
  registers it (a route, a validator);
- a name that a string in the package spells out whole (`__all__`, getattr, entry points)
  or that the generated gRPC code calls (the KEDA servicer's methods);
- dunder methods, and the public API the README and docs/API.md document (`PUBLIC`).

Run as a script, it lists what it finds: `python -m tests.test_production_only`.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PLAIN_DECORATORS = {"property", "classmethod", "staticmethod", "cached_property"}
PUBLIC = {
    # the importable client's constructors, for notebooks (README, docs/API.md)
    "autoscaler/client/api.py AutoscalerClient.from_kubeconfig",
    "autoscaler/client/api.py AutoscalerClient.from_environment",
}


@dataclass(frozen=True)
class Definition:
    path: Path
    where: str  # the path from the repository root
    qualified: str  # `Class.method` or `function`
    first: int  # first line, decorators included
    last: int
    registered: bool  # decorated by something that registers it

    @property
    def name(self) -> str:
        return self.qualified.rsplit(".", 1)[-1]

    def __str__(self) -> str:
        return f"{self.where} {self.qualified}"

    def holds(self, path: Path, line: int) -> bool:
        return path == self.path and self.first <= line <= self.last


@dataclass(frozen=True)
class Source:
    """One file: the names it uses, with their lines, and the modules it imports."""

    path: Path
    names: tuple[tuple[str, int], ...]
    imports: frozenset[str]


def python_files(root: Path, folder: str, *, generated: bool = False) -> list[Path]:
    found = sorted((root / folder).rglob("*.py"))
    return [path for path in found if generated or "_pb2" not in path.name]


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def definitions(root: Path, path: Path) -> list[Definition]:
    found: list[Definition] = []

    def visit(body: Iterable[ast.stmt], owner: str) -> None:
        for node in body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            decorators = [ast.unparse(d).split("(")[0] for d in node.decorator_list]
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            registered = any(d.split(".")[-1] not in PLAIN_DECORATORS for d in decorators)
            if not (node.name.startswith("__") and node.name.endswith("__")):
                last = node.end_lineno or first
                where = str(path.relative_to(root))
                found.append(
                    Definition(path, where, f"{owner}{node.name}", first, last, registered)
                )
            if isinstance(node, ast.ClassDef):
                visit(node.body, f"{owner}{node.name}.")

    visit(ast.parse(path.read_text(encoding="utf-8")).body, "")
    return found


def source(root: Path, path: Path) -> Source:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[tuple[str, int]] = []
    imports: set[str] = set()
    package = module_name(root, path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.append((node.id, node.lineno))
        elif isinstance(node, ast.Attribute):
            names.append((node.attr, node.lineno))
        elif isinstance(node, ast.alias):
            names.append((node.name.rsplit(".", 1)[-1], node.lineno))
        elif isinstance(node, ast.Constant) and _spells_a_name(node.value):
            names.append((re.split(r"[.:]", node.value)[-1], node.lineno))
        if isinstance(node, ast.Import):
            imports.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = (package[: len(package) - node.level + 1] if node.level else []) + (
                node.module.split(".") if node.module else []
            )
            imports.add(".".join(base))
            imports.update(".".join([*base, alias.name]) for alias in node.names)
    return Source(path, tuple(names), frozenset(imports))


def _spells_a_name(value: object) -> bool:
    """A name, a dotted path or an entry point (`module:function`), as a string."""
    return isinstance(value, str) and re.fullmatch(r"[\w.:]+", value) is not None


def index(sources: Iterable[Source]) -> dict[str, list[tuple[Path, int]]]:
    uses: dict[str, list[tuple[Path, int]]] = defaultdict(list)
    for found in sources:
        for name, line in found.names:
            uses[name].append((found.path, line))
    return uses


def used_only_by_tests(root: Path = REPO) -> tuple[list[str], list[Definition]]:
    """The modules and the definitions of autoscaler/ that only tests use."""
    files = python_files(root, "autoscaler", generated=True)
    package = {path: source(root, path) for path in files}
    benchmarks = [source(root, path) for path in python_files(root, "benchmarks")]
    tests = [source(root, path) for path in python_files(root, "tests")]
    modules = _test_only_modules(root, package, benchmarks, tests)
    ours = [
        definition
        for path in python_files(root, "autoscaler")
        if path not in modules
        for definition in definitions(root, path)
    ]
    by_name: dict[str, list[Definition]] = defaultdict(list)
    for definition in ours:
        by_name[definition.name].append(definition)
    used_by_package = index(s for p, s in package.items() if p not in modules)
    used_elsewhere = index(benchmarks)
    used_by_tests = index([*tests, *(package[path] for path in modules)])
    found: list[Definition] = []
    while True:  # a definition only test-only ones use is test-only too
        fresh = [
            definition
            for name, named in by_name.items()
            if not set(named) & set(found)
            and name in used_by_tests
            and name not in used_elsewhere
            and not any(d.registered or str(d) in PUBLIC for d in named)
            and not any(
                not any(d.holds(path, line) for d in [*named, *found])
                for path, line in used_by_package.get(name, ())
            )
            for definition in named
        ]
        if not fresh:
            return sorted(str(path.relative_to(root)) for path in modules), found
        found += fresh


def _test_only_modules(
    root: Path, package: dict[Path, Source], benchmarks: list[Source], tests: list[Source]
) -> set[Path]:
    modules: set[Path] = set()
    while True:
        users = [s for p, s in package.items() if p not in modules] + benchmarks
        only_tests = [*tests, *(package[p] for p in modules)]
        fresh = {
            path
            for path in package
            if path not in modules
            and path.name not in ("__init__.py", "__main__.py")
            and not any(module_name(root, path) in s.imports for s in users if s.path != path)
            and any(module_name(root, path) in s.imports for s in only_tests)
        }
        if not fresh:
            return modules
        modules |= fresh


def test_nothing_in_the_package_is_used_by_tests_alone() -> None:
    modules, found = used_only_by_tests()
    left = sorted(str(d) for d in found)
    assert not modules, f"modules only tests import: {modules}"
    assert not left, f"defined in autoscaler/, used only by tests: {left}"


def test_the_check_finds_what_only_tests_use_and_passes_the_rest(tmp_path: Path) -> None:
    """The check itself, on a small tree: what it must find, and what it must let pass."""
    files = {
        "autoscaler/core.py": (
            "def used():\n    return 1\n\n\n"
            "def only_tested():\n    return chained()\n\n\n"
            "def chained():\n    return 2\n\n\n"
            "@router.get('/')\ndef route():\n    return used()\n\n\n"
            "class Port:\n    def read(self):\n        return self.read()\n"
        ),
        "autoscaler/helpers.py": "def helper():\n    return 3\n",
        "autoscaler/service.py": "from autoscaler.core import Port, used\n\nused(), Port\n",
        "tests/test_core.py": (
            "from autoscaler.core import Port, chained, only_tested, route, used\n"
            "from autoscaler.helpers import helper\n\n"
            "only_tested(), chained(), route(), used(), helper(), Port().read()\n"
        ),
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")

    modules, found = used_only_by_tests(tmp_path)

    assert modules == ["autoscaler/helpers.py"]
    assert sorted(d.qualified for d in found) == ["Port.read", "chained", "only_tested"]


if __name__ == "__main__":
    modules, found = used_only_by_tests()
    for module in modules:
        print(f"module {module}")
    for definition in found:
        print(definition)
    print(f"{len(found)} definitions and {len(modules)} modules used only by tests")
