"""The time `check-config` takes to refuse a hostile settings file, beyond its start-up.

Run by hand from the repository root (about a minute):

    python -m benchmarks.bench_hostile_documents              # 5 runs of each file
    python -m benchmarks.bench_hostile_documents --repeat 1 --files nul-bytes a-50-mb-list

Each file of `tests/support/hostile_files.py` (a 50 MB list, a list and a "billion laughs"
just under the 1 MiB limit, nesting 5,000 deep, UTF-16, NUL bytes, ...) is handed to
`python -m autoscaler check-config` as a child process, each run right after one on a file that
does not exist (the start-up: Python and the package imported, nothing read), so both see the
same load. The target: a refusal costs less than a second beyond the start-up. Then, in this
process, each file's text that passes the size and encoding checks is refused by
`parse_yaml` with the pure-Python safe loader and with the C one (libyaml): the pure-Python
one is the fallback where libyaml is absent. The tests count the work instead (events read,
values built, bytes read: tests/test_documents.py, tests/test_config.py).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from autoscaler.core.documents import DocumentRefused, parse_yaml, read_text_file
from tests.support.check_config import check_config
from tests.support.hostile_files import HOSTILE

LOADERS = {"pure Python": yaml.SafeLoader, "C (libyaml)": getattr(yaml, "CSafeLoader", None)}


def timed_check_config(path: Path) -> tuple[float, float]:
    """Wall and CPU seconds (the child's user and system time) of one check-config run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    result = check_config(path)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 2 or len(result.stderr.splitlines()) != 1:
        raise SystemExit(f"{path}: not refused in one line: {result.stderr[-2000:]}")
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def refusal_seconds(text: str, loader: type[yaml.SafeLoader]) -> float:
    began = time.perf_counter()
    try:
        parse_yaml(text, loader=loader)
    except DocumentRefused:
        return time.perf_counter() - began
    raise SystemExit("a hostile document was accepted")


def median_ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} ms"


def measure(name: str, path: Path, *, repeat: int) -> str:
    """One table row: the start-up just before each run, the run, the loaders in-process."""
    start_ups, walls, beyond, cpu_beyond = [], [], [], []
    for _ in range(repeat):
        start_up, start_up_cpu = timed_check_config(path.parent / "absent.yaml")
        wall, cpu = timed_check_config(path)
        start_ups.append(start_up)
        walls.append(wall)
        beyond.append(wall - start_up)
        cpu_beyond.append(cpu - start_up_cpu)
    try:
        text = read_text_file(path)
    except DocumentRefused:
        in_process = ["before parsing"] * len(LOADERS)
    else:
        in_process = [
            "no libyaml"
            if loader is None
            else median_ms([refusal_seconds(text, loader) for _ in range(repeat)])
            for loader in LOADERS.values()
        ]
    size = path.stat().st_size
    return (
        f"| {name} | {size:,} | {median_ms(start_ups)} | {median_ms(walls)} | "
        f"{median_ms(beyond)} | {max(beyond) * 1000:.0f} ms | {median_ms(cpu_beyond)} | "
        + " | ".join(in_process)
        + " |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each file")
    parser.add_argument("--files", nargs="+", choices=sorted(HOSTILE), default=list(HOSTILE))
    args = parser.parse_args()
    print(
        f"machine: {os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f} at start"
    )
    print(
        f"| file | bytes | start-up (median) | check-config (median) | beyond start-up "
        f"(median) | beyond start-up (max) | CPU beyond start-up (median) | "
        f"{' | '.join(f'parse_yaml, {name}' for name in LOADERS)} |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|" + "---:|" * len(LOADERS))
    with tempfile.TemporaryDirectory() as work:
        for name in args.files:
            path = Path(work) / f"{name}.yaml"
            path.write_bytes(HOSTILE[name][0]())
            print(measure(name, path, repeat=args.repeat), flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
