"""How the house is built: the figures issue 28 ("One house, by concept") compares before and after.

Run from the repository root; it reads files only (standard library, `ast`), so it measures any
checkout, for example an older commit checked out with `git worktree add`:

    python -m benchmarks.house                  # this checkout
    python -m benchmarks.house --tree DIR       # the checkout in DIR

It prints, for DIR/autoscaler/, each figure with what it lists, then one line per figure:

- lines and modules (`.py` files), with and without the generated gRPC code (`*_pb2*`); every
  other figure leaves the generated code out (it is not ours to shape);
- functions taking more than 6 parameters (`self`/`cls` not counted; `*args` and `**kwargs`
  count one each);
- modules over 300 and over 400 lines, functions over 50 and over 60 lines (from the `def` line
  to the body's last, as tests/test_size_limits.py measures), lines holding `# fmt: skip`;
- test-only modules: imported (absolute imports, read with `ast`) by tests/ but by no module of
  autoscaler/ other than test-only ones;
- test-only definitions (outside test-only modules): module-level functions and classes and
  methods whose name (a word, as `\\bname\\b` finds it) appears nowhere in autoscaler/ outside
  test-only modules, its own definition and the `def`/`class` line of any namesake, nor in
  benchmarks/, but does in tests/. Dunder methods and functions a decorator call registers
  (`@router.get(...)`, `@model_validator(...)`) are called by their framework, not by name,
  and are left out;
- near-named clusters: modules of one folder whose names share a stem (the first word, with
  plural, -ing, -ion, -er, -ed, -ors and -ation endings taken off; two stems are shared when
  one begins the other and the shorter has 3 letters or more), one module name in several
  folders (inflections count as the same name: guards.py and guarding.py), class names defined
  more than once, module constants (UPPER_CASE at module level) defined more than once.
"""

from __future__ import annotations

import argparse
import ast
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
PACKAGE = "autoscaler"
MAX_PARAMETERS = 6
MODULE_LIMITS = (300, 400)
FUNCTION_LIMITS = (50, 60)
FMT_SKIP = "# fmt: skip"
ENTRY_NAMES = frozenset({"__init__", "__main__"})
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Longest first, so "actuators" loses "ors" rather than "s".
ENDINGS = ("ation", "ors", "ing", "ion", "er", "ed", "s")
MIN_STEM = 3
CONSTANT = re.compile(r"_?[A-Z][A-Z0-9_]*")
TYPE_FACTORIES = frozenset({"TypeVar", "NewType", "ParamSpec", "TypeVarTuple"})
WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Module:
    path: str  # relative to the tree, "autoscaler/engine/acting/stop.py"
    text: str

    @property
    def generated(self) -> bool:
        return "_pb2" in Path(self.path).name

    @property
    def lines(self) -> int:
        return len(self.text.splitlines())

    @property
    def folder(self) -> str:
        return str(Path(self.path).parent)

    @property
    def name(self) -> str:
        return Path(self.path).stem

    @property
    def dotted(self) -> str:
        return ".".join(Path(self.path).with_suffix("").parts)

    def syntax(self) -> ast.Module:
        return ast.parse(self.text, filename=self.path)

    def imports(self) -> set[str]:
        """Every module `import a.b` or `from a.b import c` may name: a.b, and a.b.c."""
        named: set[str] = set()
        for node in ast.walk(self.syntax()):
            if isinstance(node, ast.Import):
                named |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                named |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
        return named


@dataclass(frozen=True)
class Definition:
    """A `def` or `class`, named `module.py:line Qualified.name`."""

    module: str
    qualname: str
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    nested_in_function: bool

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def label(self) -> str:
        return f"{self.module}:{self.node.lineno} {self.qualname}"

    @property
    def length(self) -> int:
        return (self.node.end_lineno or self.node.lineno) - self.node.lineno + 1

    @property
    def span(self) -> range:
        first = min([self.node.lineno, *(d.lineno for d in self.node.decorator_list)])
        return range(first, (self.node.end_lineno or self.node.lineno) + 1)


@dataclass(frozen=True)
class House:
    modules_all: int
    lines_all: int
    modules: int
    lines: int
    many_parameters: list[str]
    long_modules: dict[int, list[str]]
    long_functions: dict[int, list[str]]
    largest_module: int
    longest_function: int
    fmt_skips: dict[str, int]
    test_only_modules: list[str]
    test_only: list[str]
    folder_clusters: list[str]
    name_clusters: list[str]
    class_clusters: list[str]
    constant_clusters: list[str]
    constant_copies: int

    @property
    def clusters(self) -> int:
        return sum(
            len(kind)
            for kind in (
                self.folder_clusters,
                self.name_clusters,
                self.class_clusters,
                self.constant_clusters,
            )
        )


def read_modules(folder: Path, root: Path, pattern: str = "*.py") -> list[Module]:
    if not folder.is_dir():
        return []
    return [
        Module(str(path.relative_to(root)), path.read_text(encoding="utf-8"))
        for path in sorted(folder.rglob(pattern))
        if "__pycache__" not in path.parts
    ]


def definitions(module: Module) -> list[Definition]:
    return list(_definitions(module.path, module.syntax(), prefix="", in_function=False))


def _definitions(
    path: str, node: ast.AST, *, prefix: str, in_function: bool
) -> Iterator[Definition]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (*FUNCTIONS, ast.ClassDef)):
            qualname = prefix + child.name
            yield Definition(path, qualname, child, in_function)
            inner = in_function or isinstance(child, FUNCTIONS)
            yield from _definitions(path, child, prefix=qualname + ".", in_function=inner)
        else:
            yield from _definitions(path, child, prefix=prefix, in_function=in_function)


def parameter_count(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    if positional and positional[0].arg in {"self", "cls"}:
        positional = positional[1:]
    starred = (arguments.vararg is not None) + (arguments.kwarg is not None)
    return len(positional) + len(arguments.kwonlyargs) + starred


def words_by_line(text: str) -> dict[str, set[int]]:
    found: dict[str, set[int]] = defaultdict(set)
    for number, line in enumerate(text.splitlines(), start=1):
        for word in WORD.findall(line):
            found[word].add(number)
    return found


def words_of(modules: Iterable[Module]) -> set[str]:
    return {word for module in modules for word in WORD.findall(module.text)}


def registered_by_decorator(definition: Definition) -> bool:
    """`@router.get("/x")` or `@model_validator(mode="after")`: the framework calls it."""
    return isinstance(definition.node, FUNCTIONS) and any(
        isinstance(decorator, ast.Call) for decorator in definition.node.decorator_list
    )


def test_only_modules(modules: list[Module], tests: list[Module]) -> set[str]:
    """Paths of the modules only tests (or other test-only modules) import."""
    importers: dict[str, set[str]] = defaultdict(set)
    for module in modules:
        for name in module.imports() - {module.dotted}:
            importers[name].add(module.path)
    by_tests = set().union(*(test.imports() for test in tests))
    candidates = [m for m in modules if not m.generated and m.name not in ENTRY_NAMES]
    found: set[str] = set()
    while grown := [
        m
        for m in candidates
        if m.path not in found
        and importers[m.dotted] <= found
        and (m.dotted in by_tests or importers[m.dotted])
    ]:
        found |= {m.path for m in grown}
    return found


def test_only_candidates(ours: list[Definition]) -> list[Definition]:
    return [
        d
        for d in ours
        if not d.nested_in_function
        and not (d.name.startswith("__") and d.name.endswith("__"))
        and not registered_by_decorator(d)
    ]


def test_only(
    ours: list[Definition],
    package: list[Module],
    *,
    benchmark_words: set[str],
    test_words: set[str],
) -> list[str]:
    index = {module.path: words_by_line(module.text) for module in package}
    headers: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
    for d in ours:
        headers[d.name][d.module].add(d.node.lineno)

    def used_in_package(d: Definition) -> bool:
        for path, words in index.items():
            lines = words.get(d.name, set()) - headers[d.name][path]
            if path == d.module:
                lines -= set(d.span)
            if lines:
                return True
        return False

    return [
        d.label
        for d in test_only_candidates(ours)
        if d.name in test_words and d.name not in benchmark_words and not used_in_package(d)
    ]


def stem(word: str) -> str:
    """`actuators` → `actuat`, `acting` → `act`, `guards` → `guard`; `class` stays `class`."""
    while True:
        for ending in ENDINGS:
            keeps_double_s = ending == "s" and word.endswith("ss")
            if word.endswith(ending) and len(word) - len(ending) >= MIN_STEM and not keeps_double_s:
                word = word[: -len(ending)]
                break
        else:
            return word


def share_stem(one: str, other: str) -> bool:
    shorter, longer = sorted((one, other), key=len)
    return len(shorter) >= MIN_STEM and longer.startswith(shorter)


def _groups(names: Sequence[str], joined: dict[str, str]) -> list[list[str]]:
    """Connected groups of `names` where `joined[a] == joined[b]` or their stems share."""
    parent = list(range(len(names)))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for i, one in enumerate(names):
        for j in range(i):
            if share_stem(joined[one], joined[names[j]]):
                parent[root(i)] = root(j)
    grouped: dict[int, list[str]] = defaultdict(list)
    for i, name in enumerate(names):
        grouped[root(i)].append(name)
    return [sorted(group) for group in grouped.values() if len(group) > 1]


def folder_clusters(modules: list[Module]) -> list[str]:
    by_folder: dict[str, list[str]] = defaultdict(list)
    for module in modules:
        if module.name not in ENTRY_NAMES:
            by_folder[module.folder].append(module.name)
    found = []
    for folder, names in sorted(by_folder.items()):
        stems = {name: stem(name.split("_")[0]) for name in names}
        found += [f"{folder}/: {', '.join(group)}" for group in _groups(sorted(names), stems)]
    return sorted(found)


def name_clusters(modules: list[Module]) -> list[str]:
    by_name: dict[tuple[str, ...], list[Module]] = defaultdict(list)
    for module in modules:
        if module.name not in ENTRY_NAMES:
            by_name[tuple(stem(word) for word in module.name.split("_"))].append(module)
    return sorted(
        f"{' / '.join(sorted({m.name + '.py' for m in group}))} x{len(group)}: "
        + ", ".join(m.path for m in group)
        for group in by_name.values()
        if len({m.folder for m in group}) > 1
    )


def class_clusters(ours: list[Definition]) -> list[str]:
    by_name: dict[str, list[str]] = defaultdict(list)
    for d in ours:
        if isinstance(d.node, ast.ClassDef):
            by_name[d.name].append(f"{d.module}:{d.node.lineno}")
    return sorted(
        f"{name} x{len(where)}: {', '.join(where)}"
        for name, where in by_name.items()
        if len(where) > 1
    )


def module_constants(module: Module) -> Iterator[tuple[str, ast.expr]]:
    for statement in module.syntax().body:
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets, value = [statement.target], statement.value
        else:
            continue
        for target in targets:
            if (
                isinstance(target, ast.Name)
                and CONSTANT.fullmatch(target.id)
                and not _type_factory(value)
            ):
                yield target.id, value


def _type_factory(value: ast.expr) -> bool:
    called = value.func if isinstance(value, ast.Call) else None
    name = called.id if isinstance(called, ast.Name) else getattr(called, "attr", "")
    return name in TYPE_FACTORIES


def constant_clusters(modules: list[Module]) -> tuple[list[str], int]:
    """Each name defined in more than one module, and how many of them repeat one value."""
    by_name: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for module in modules:
        for name, value in module_constants(module):
            by_name[name].append((module.path, ast.dump(value)))
    found, copies = [], 0
    for name, where in sorted(by_name.items()):
        if len({path for path, _ in where}) < 2:
            continue
        same = len({value for _, value in where}) == 1
        copies += same
        kind = "same value" if same else "other values"
        found.append(f"{name} x{len(where)} ({kind}): {', '.join(path for path, _ in where)}")
    return found, copies


def measure(tree: Path) -> House:
    everything = read_modules(tree / PACKAGE, tree)
    modules = [module for module in everything if not module.generated]
    tests = read_modules(tree / "tests", tree)
    only_tested = test_only_modules(everything, tests)
    package = [m for m in everything if m.path not in only_tested]
    package += read_modules(tree / PACKAGE, tree, "*.pyi")
    ours = [d for module in modules for d in definitions(module)]
    functions = [d for d in ours if isinstance(d.node, FUNCTIONS)]
    constants, copies = constant_clusters(modules)
    return House(
        modules_all=len(everything),
        lines_all=sum(module.lines for module in everything),
        modules=len(modules),
        lines=sum(module.lines for module in modules),
        many_parameters=[
            f"{d.label} ({parameter_count(d.node)})"
            for d in functions
            if isinstance(d.node, FUNCTIONS) and parameter_count(d.node) > MAX_PARAMETERS
        ],
        long_modules={
            limit: [f"{m.path} ({m.lines})" for m in modules if m.lines > limit]
            for limit in MODULE_LIMITS
        },
        long_functions={
            limit: [f"{d.label} ({d.length})" for d in functions if d.length > limit]
            for limit in FUNCTION_LIMITS
        },
        largest_module=max((m.lines for m in modules), default=0),
        longest_function=max((d.length for d in functions), default=0),
        fmt_skips={m.path: count for m in modules if (count := m.text.count(FMT_SKIP)) > 0},
        test_only_modules=sorted(only_tested),
        test_only=test_only(
            [d for d in ours if d.module not in only_tested],
            package,
            benchmark_words=words_of(read_modules(tree / "benchmarks", tree)),
            test_words=words_of(tests + [m for m in modules if m.path in only_tested]),
        ),
        folder_clusters=folder_clusters(modules),
        name_clusters=name_clusters(modules),
        class_clusters=class_clusters(ours),
        constant_clusters=constants,
        constant_copies=copies,
    )


def _section(title: str, items: Sequence[str]) -> list[str]:
    return ["", f"{title}: {len(items)}", *(f"  {item}" for item in items)]


def report(house: House, tree: Path) -> list[str]:
    lines = [
        f"The house in {tree}/{PACKAGE}/ (generated *_pb2* files left out unless named)",
        "",
        f"modules (.py files) with *_pb2*: {house.modules_all}, lines {house.lines_all}",
        f"modules (.py files) without *_pb2*: {house.modules}, lines {house.lines}",
    ]
    lines += _section(
        f"functions taking more than {MAX_PARAMETERS} parameters", house.many_parameters
    )
    for limit, found in house.long_modules.items():
        lines += _section(f"modules over {limit} lines", found)
    for limit, found in house.long_functions.items():
        lines += _section(f"functions over {limit} lines", found)
    skips = [f"{path} ({count})" for path, count in house.fmt_skips.items()]
    lines += _section(f"modules with '{FMT_SKIP}' lines", skips)
    lines += _section("test-only modules", house.test_only_modules)
    lines += _section("test-only definitions outside them", house.test_only)
    lines += _section("near-named modules in one folder", house.folder_clusters)
    lines += _section("one module name in several folders", house.name_clusters)
    lines += _section("class names defined more than once", house.class_clusters)
    lines += _section("module constants defined more than once", house.constant_clusters)
    return [*lines, "", *summary(house)]


def summary(house: House) -> list[str]:
    return [
        "summary:",
        f"modules with *_pb2*: {house.modules_all}",
        f"lines with *_pb2*: {house.lines_all}",
        f"modules without *_pb2*: {house.modules}",
        f"lines without *_pb2*: {house.lines}",
        f"functions over {MAX_PARAMETERS} parameters: {len(house.many_parameters)}",
        *(f"modules over {n} lines: {len(found)}" for n, found in house.long_modules.items()),
        *(f"functions over {n} lines: {len(found)}" for n, found in house.long_functions.items()),
        f"largest module: {house.largest_module} lines",
        f"longest function: {house.longest_function} lines",
        f"'{FMT_SKIP}' lines: {sum(house.fmt_skips.values())}",
        f"test-only modules: {len(house.test_only_modules)}",
        f"test-only definitions outside them: {len(house.test_only)}",
        f"near-named modules in one folder: {len(house.folder_clusters)}",
        f"one module name in several folders: {len(house.name_clusters)}",
        f"class names defined more than once: {len(house.class_clusters)}",
        f"module constants defined more than once: {len(house.constant_clusters)}"
        f" ({house.constant_copies} with the same value)",
        f"near-name clusters in all: {house.clusters}",
    ]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tree", type=Path, default=REPOSITORY, help="checkout to measure (default: this one)"
    )
    tree = parser.parse_args(argv).tree.resolve()
    print("\n".join(report(measure(tree), tree)))


if __name__ == "__main__":
    main()
