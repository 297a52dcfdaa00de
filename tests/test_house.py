"""The house measure (`python -m benchmarks.house`) counts what it says it counts: each figure,
measured on a small tree written for it, where every answer is known by construction."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.house import House, main, measure, stem


def padded(head: str, lines: int) -> str:
    """`head`, then comment lines up to `lines` lines in all."""
    body = head.splitlines()
    return "\n".join(body + [f"# line {n}" for n in range(len(body) + 1, lines + 1)]) + "\n"


def function_of(name: str, lines: int) -> str:
    """A function `lines` long from its `def` line to its last."""
    return "\n".join([f"def {name}() -> int:", *["    x = 1"] * (lines - 2), "    return x", ""])


FILES = {
    "autoscaler/__init__.py": '"""The package."""\n',
    # The generated gRPC code: counted in the first line figure only.
    "autoscaler/eng/api_pb2.py": padded("def generated(a, b, c, d, e, f, g, h): ...", 500),
    "autoscaler/eng/__init__.py": "",
    "autoscaler/eng/acting.py": padded(
        "def wide(a, b, c, d, e, f, g) -> None: ...\n"
        "class Stop:\n"
        "    def __init__(self, a, b, c, d, e, f) -> None: ...\n"
        "    def starred(self, *args, a, b, c, d, e, **kwargs) -> None: ...\n"
        "    @classmethod\n"
        "    def build(cls, a, b, c, d, e, f) -> None: ...\n"
        "x = (1,)  # fmt: skip\n"
        "y = (2,)  # fmt: skip\n",
        350,
    ),
    "autoscaler/eng/actuators.py": padded(function_of("long_one", 55), 450),
    "autoscaler/eng/act_steps.py": function_of("longer_one", 65),
    "autoscaler/eng/guarding.py": (
        "from autoscaler.dom.guards import used_in_package\n"
        "DEVICE_LEVEL = frozenset({'power'})\n"
        "PREFIX = 'idle_'\n"
        "T = TypeVar('T')\n"
        "lower = 1\n"
        "def uses() -> None:\n"
        "    used_in_package()\n"
    ),
    "autoscaler/eng/pending.py": "class Exemption: ...\n",
    "autoscaler/dom/__init__.py": "",
    "autoscaler/dom/guards.py": (
        "DEVICE_LEVEL = frozenset({'power'})\n"
        "PREFIX = 'idle-gpu/'\n"
        "T = TypeVar('T')\n"
        "class Exemption: ...\n"
        "def used_in_package() -> None: ...\n"
        "def only_tested() -> None:\n"
        "    only_tested()  # its own body is not a use\n"
        "def benchmarked() -> None: ...\n"
        "def never_named() -> None: ...\n"
        "def partly_named() -> None: ...\n"
        "class Helper:\n"
        "    def probe(self) -> None: ...\n"
        "    def __repr__(self) -> str: ...\n"
        "@router.get('/x')\n"
        "def handler() -> None: ...\n"
    ),
    "autoscaler/dom/pending.py": "def probe() -> None: ...  # a namesake's def line is no use\n",
    "autoscaler/sim/__init__.py": "",
    "autoscaler/sim/fixture.py": "from autoscaler.sim.seeds import part\n",
    "autoscaler/sim/seeds.py": "def part() -> None: ...\n",
    "benchmarks/bench.py": "benchmarked()\n",
    "tests/test_it.py": (
        "from autoscaler.sim.fixture import part\n"
        "only_tested(); benchmarked(); Helper().probe(); handler(); repr(Helper())\n"
        "partly_named_too()\n"
    ),
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tree")
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def house(tree: Path) -> House:
    return measure(tree)


def lines_of(*, generated: bool) -> int:
    """Lines of the package's files written above, with or without the generated one."""
    return sum(
        len(text.splitlines())
        for name, text in FILES.items()
        if name.startswith("autoscaler/") and (generated or "_pb2" not in name)
    )


def test_lines_and_modules_are_given_with_and_without_the_generated_code(house: House) -> None:
    assert (house.modules_all, house.modules) == (14, 13)
    assert house.lines_all == lines_of(generated=True)
    assert house.lines == lines_of(generated=False)
    assert house.lines_all - house.lines == 500


def test_more_than_six_parameters_counts_neither_self_nor_cls_but_does_count_stars(
    house: House,
) -> None:
    assert house.many_parameters == [
        "autoscaler/eng/acting.py:1 wide (7)",
        "autoscaler/eng/acting.py:4 Stop.starred (7)",
    ]


def test_long_modules_and_functions_are_counted_at_both_limits(house: House) -> None:
    assert house.long_modules == {
        300: ["autoscaler/eng/acting.py (350)", "autoscaler/eng/actuators.py (450)"],
        400: ["autoscaler/eng/actuators.py (450)"],
    }
    assert house.long_functions == {
        50: [
            "autoscaler/eng/act_steps.py:1 longer_one (65)",
            "autoscaler/eng/actuators.py:1 long_one (55)",
        ],
        60: ["autoscaler/eng/act_steps.py:1 longer_one (65)"],
    }
    assert (house.largest_module, house.longest_function) == (450, 65)


def test_fmt_skip_lines_are_counted_per_module(house: House) -> None:
    assert house.fmt_skips == {"autoscaler/eng/acting.py": 2}


def test_a_module_only_tests_import_is_test_only_with_what_only_it_imports(house: House) -> None:
    assert house.test_only_modules == ["autoscaler/sim/fixture.py", "autoscaler/sim/seeds.py"]


def test_a_definition_named_only_in_tests_is_test_only(house: House) -> None:
    """Not `used_in_package` (another module calls it), `benchmarked`, `never_named` (dead, not
    tested), `partly_named` (tests name only `partly_named_too`), `__repr__`, nor `handler`
    (its decorator call registers it)."""
    assert house.test_only == [
        "autoscaler/dom/guards.py:6 only_tested",
        "autoscaler/dom/guards.py:11 Helper",
        "autoscaler/dom/guards.py:12 Helper.probe",
        "autoscaler/dom/pending.py:1 probe",
    ]


def test_near_named_modules_in_one_folder_share_a_stem(house: House) -> None:
    assert house.folder_clusters == ["autoscaler/eng/: act_steps, acting, actuators"]


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("acting", "act"),
        ("actuation", "actu"),
        ("actuators", "actuat"),
        ("guards", "guard"),
        ("notices", "notice"),
        ("staging", "stag"),
        ("class", "class"),
        ("caps", "cap"),
        ("bus", "bus"),
    ],
)
def test_a_stem_drops_the_endings_and_keeps_three_letters(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_one_name_in_several_folders_counts_its_inflections(house: House) -> None:
    assert house.name_clusters == [
        "guarding.py / guards.py x2: autoscaler/dom/guards.py, autoscaler/eng/guarding.py",
        "pending.py x2: autoscaler/dom/pending.py, autoscaler/eng/pending.py",
    ]


def test_class_names_defined_twice_are_listed(house: House) -> None:
    assert house.class_clusters == [
        "Exemption x2: autoscaler/dom/guards.py:4, autoscaler/eng/pending.py:1"
    ]


def test_module_constants_defined_twice_say_whether_they_copy_a_value(house: House) -> None:
    """`T = TypeVar('T')` in each module is a convention, not a copy; `lower` is no constant."""
    assert house.constant_clusters == [
        "DEVICE_LEVEL x2 (same value): autoscaler/dom/guards.py, autoscaler/eng/guarding.py",
        "PREFIX x2 (other values): autoscaler/dom/guards.py, autoscaler/eng/guarding.py",
    ]
    assert house.constant_copies == 1
    assert house.clusters == 1 + 2 + 1 + 2


def test_the_summary_gives_one_line_per_figure_the_same_on_every_run(
    tree: Path, house: House, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["--tree", str(tree)])
    first = capsys.readouterr().out
    main(["--tree", str(tree)])

    assert capsys.readouterr().out == first
    summary = first[first.index("summary:") :].splitlines()[1:]
    assert summary == [
        "modules with *_pb2*: 14",
        f"lines with *_pb2*: {house.lines_all}",
        "modules without *_pb2*: 13",
        f"lines without *_pb2*: {house.lines}",
        "functions over 6 parameters: 2",
        "modules over 300 lines: 2",
        "modules over 400 lines: 1",
        "functions over 50 lines: 2",
        "functions over 60 lines: 1",
        "largest module: 450 lines",
        "longest function: 65 lines",
        "'# fmt: skip' lines: 2",
        "test-only modules: 2",
        "test-only definitions outside them: 4",
        "near-named modules in one folder: 1",
        "one module name in several folders: 2",
        "class names defined more than once: 1",
        "module constants defined more than once: 2 (1 with the same value)",
        "near-name clusters in all: 6",
    ]
