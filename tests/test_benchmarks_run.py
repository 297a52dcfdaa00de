"""Every benchmark runs as benchmarks/README.md and its own docstring say, at the smallest sizes.

The benchmarks are run by hand for their figures; this gate only shows that each documented
invocation still runs to its result, so a benchmark does not rot unseen until someone needs
it. Each runs as a child process from the repository root, as a person would start it, with
every option the documentation shows and sizes that take seconds. They all start at once
(they mostly wait: on Prometheus, on child processes, on the API servers they start), and a
test per benchmark asserts that each of its runs exited 0 and printed its table.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.prom import require_binaries
from tests.support.prom.tools import find_binary

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS_DIR = REPO / "benchmarks"
# A benchmark's runs, in all, on a loaded machine (a healthy one takes seconds); within the
# gate's 120 s per test, which counts from when the test starts waiting.
RUNS_TIMEOUT_S = 110.0


@dataclass(frozen=True)
class Benchmark:
    """`runs`: the arguments of each run, in turn (a `--keep` run before the `--reuse` that
    reads its data; `{work}`: a directory of the benchmark's own, `{root}`: the repository
    root, a tree holding `autoscaler/` for `--before`); `shows`: lines its result holds;
    `real`: needs prometheus and promtool."""

    runs: tuple[str, ...]
    shows: tuple[str, ...]
    real: bool = True


BENCHMARKS = {
    "bench_cycle_queries": Benchmark(
        runs=(
            "--workloads 4 --hours 1 --repeat 1 --workdir {work} --keep",
            "--workloads 4 --repeat 1 --workdir {work} --keep --reuse",
            "--workloads 4 --repeat 1 --workdir {work} --keep --reuse --fleet-read --before {root}",
        ),
        shows=(
            "| adapter read, 1 view (fleet-wide) | ",
            "| one query set per workload, plain requests | 24 | ",  # 4 workloads x 6 queries
            "| before read_views, no evidence | ",
            "| cheapest formulation, total | 3 | ",
        ),
    ),
    "bench_backtest": Benchmark(
        runs=(
            "--gpus 4 --days 1 --repeat 1 --workdir {work} --keep",
            "--gpus 4 --days 1 --repeat 1 --workdir {work} --keep --reuse",
        ),
        shows=("| run | wall | CPU | peak RSS |", "| 1 | "),
    ),
    "bench_scale": Benchmark(
        runs=(
            "--workdir {work} --sizes 4 --hours 2 --repeat 1 --cycles 1",
            "--workdir {work} --reuse --sizes 4 --repeat 1 --cycles 2 --before {root}",
        ),
        shows=("| 4 | raw (raw) | ", "| 4 | recorded (recorded) | ", "| 4 | raw before (raw) | "),
    ),
    "bench_keda": Benchmark(
        runs=("--callers 2 --calls 4 --workloads 4 --streams 4 --rounds 2",),
        shows=(
            "| IsActive | 2 | keda scaler | 4 | ",
            "| GetMetrics | 2 | constant | 4 | ",
            "| 4 streams | 2 | ",
        ),
        real=False,
    ),
    "bench_keda_serve": Benchmark(
        runs=("--callers 2 --calls 4 --workloads 4 --before {root}",),
        shows=("| IsActive | 2 | serve | 4 | ", "| GetMetrics | 2 | "),
    ),
    "bench_rest_load": Benchmark(
        runs=(
            "--workloads 4 --clients 1 2 --seconds 0.2 --rate 10 --open-seconds 0.5 --alone 4 "
            "--bursts 1",
        ),
        shows=("| list | alone, back to back | 4 | ", "| one | burst of 200 at once, x1 | 200 | "),
    ),
    "house": Benchmark(
        runs=("", "--tree {root}"),
        shows=("test-only modules: 0", "near-name clusters in all: "),
        real=False,
    ),
    "bench_body_cap": Benchmark(
        runs=("",),
        shows=("(default): HTTP 413, ", "(the largest allowed): HTTP 422, "),
        real=False,
    ),
    "bench_keepalive": Benchmark(
        runs=("--connections 2",),
        shows=("request 1: median ", "request 4: median "),
        real=False,
    ),
    "bench_hostile_documents": Benchmark(
        runs=("--repeat 1 --files nul-bytes a-50-mb-list",),
        shows=("| nul-bytes | 9 | ", "| a-50-mb-list | 52,428,807 | "),
        real=False,
    ),
    "bench_soak": Benchmark(
        runs=(
            "--workloads 20 --minutes 5 --seed 7",
            "--workloads 20 --minutes 5 --simulation-only",
        ),
        shows=('"wrongful_actions": 0,', '"simulation_only_peak_rss_mib": '),
        real=False,
    ),
}


@dataclass(frozen=True)
class Finished:
    command: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def describe(self) -> str:
        return (
            f"{' '.join(self.command)} exited {self.returncode} after {self.seconds:.0f} s\n"
            f"stdout ends:\n{self.stdout[-3000:]}\nstderr ends:\n{self.stderr[-3000:]}"
        )


def commands_of(name: str, *, work: Path) -> list[list[str]]:
    """The benchmark's runs as commands, all with the same work directory."""
    return [
        [
            sys.executable,
            "-m",
            f"benchmarks.{name}",
            *arguments.format(work=work, root=REPO).split(),
        ]
        for arguments in BENCHMARKS[name].runs
    ]


def run_one(command: list[str], *, timeout: float) -> Finished:
    """The child in a session of its own, so a timeout stops what it started too."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    environment["PYTHONPATH"] = str(REPO)  # this tree, whatever is installed
    began = time.monotonic()
    with subprocess.Popen(
        command,
        cwd=REPO,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as child:
        try:
            out, err = child.communicate(timeout=max(timeout, 0))
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            out, err = child.communicate()
            err += f"\n(killed after {timeout:.0f} s)"
    return Finished(command, child.returncode, out, err, time.monotonic() - began)


def run_in_turn(commands: list[list[str]]) -> list[Finished]:
    deadline = time.monotonic() + RUNS_TIMEOUT_S
    done: list[Finished] = []
    for command in commands:
        done.append(run_one(command, timeout=deadline - time.monotonic()))
        if done[-1].returncode != 0:
            break  # a --reuse run needs the run before it
    return done


def can_run(benchmark: Benchmark) -> bool:
    return not benchmark.real or None not in (find_binary("prometheus"), find_binary("promtool"))


@pytest.fixture(scope="module")
def started(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Future[list[Finished]]]]:
    """Every selected benchmark that can run here, started at once."""
    chosen = [item for item in request.session.items if item.module is request.module]
    selected = {item.callspec.params.get("name") for item in chosen if hasattr(item, "callspec")}
    names = [name for name in BENCHMARKS if name in selected and can_run(BENCHMARKS[name])]
    with ThreadPoolExecutor(max_workers=max(len(names), 1)) as pool:
        yield {
            name: pool.submit(run_in_turn, commands_of(name, work=tmp_path_factory.mktemp(name)))
            for name in names
        }


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=[pytest.mark.real] if benchmark.real else [], id=name)
        for name, benchmark in BENCHMARKS.items()
    ],
)
def test_the_benchmark_runs_as_documented_to_its_table(
    name: str, started: dict[str, Future[list[Finished]]]
) -> None:
    benchmark = BENCHMARKS[name]
    if benchmark.real:
        require_binaries()
    finished = started[name].result()
    assert len(finished) == len(benchmark.runs), finished[-1].describe()
    for run in finished:
        assert run.returncode == 0, run.describe()
    printed = "".join(run.stdout for run in finished)
    for line in benchmark.shows:
        assert line in printed, f"{line!r} not printed:\n{printed[-3000:]}"


def documented_commands() -> dict[str, list[str]]:
    """Per benchmark script, the commands benchmarks/README.md and its docstring show (an
    inline `python -m benchmarks...` may wrap; a block line may continue after a backslash)."""
    texts = [(BENCHMARKS_DIR / "README.md").read_text(encoding="utf-8")]
    texts += [path.read_text(encoding="utf-8") for path in scripts()]
    found: dict[str, list[str]] = {}
    for text in texts:
        joined = text.replace("\\\n", " ")
        inline = re.findall(r"`(python -m benchmarks\.[^`]*)`", joined)
        lines = re.findall(r"^\s*(python -m benchmarks\.[^#\n`]*)", joined, flags=re.MULTILINE)
        for command in inline + lines:
            script = command.split()[2].removeprefix("benchmarks.")
            found.setdefault(script, []).append(" ".join(command.split()))
    return found


def options(command: str) -> set[str]:
    return {word for word in command.split() if word.startswith("--")}


def scripts() -> list[Path]:
    """The benchmark scripts: every `bench_*.py`, and `house.py` (the package's shape)."""
    return [*BENCHMARKS_DIR.glob("bench_*.py"), BENCHMARKS_DIR / "house.py"]


def test_every_benchmark_script_is_smoke_run() -> None:
    names = {path.stem for path in scripts()}
    assert set(BENCHMARKS) == names
    assert set(documented_commands()) == names


@pytest.mark.parametrize("script", sorted(documented_commands()))
def test_every_option_the_documentation_shows_is_one_the_smoke_run_passes(script: str) -> None:
    shown = set().union(*map(options, documented_commands()[script]))
    passed = set().union(*map(options, BENCHMARKS[script].runs))
    assert shown <= passed, f"{script}: documented but never run: {sorted(shown - passed)}"
