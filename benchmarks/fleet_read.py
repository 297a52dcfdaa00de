"""One fleet read beside the cheapest formulation of the same facts (issue 18), alternated.

Run by `bench_cycle_queries --fleet-read` on its kept fleet. Each repeat times, in turn:
  - the adapter's `read_views` (one 1 h view) of the raw series (`recordedSeries.mode: off`):
    a first read (a new source), and the next cycle's (a source that read a minute before, so
    BUSY asks only for the steps it lacks), without evidence readers and with the default
    ones as the service builds them;
  - the same from the recorded series (`mode: auto`, when the fleet has recordings:
    `bench_cycle_queries` backfills them with promtool), next cycle, no evidence;
  - the same read by an older adapter (`--before DIR`: a source tree holding `autoscaler/`,
    e.g. `git archive <commit> autoscaler | tar -x -C DIR`), in a child process that times
    the read itself, so interpreter start-up is not counted;
  - each query of the read (this adapter's and the older one's), of the per-series summary
    formulation (`summary_queries.py`) and of the cheapest formulation, sent with plain
    `requests`: the HTTP exchange (server and transfer) timed apart from `json.loads`.
The cheapest formulation: per GPU over both signals, `max_over_time` over the window,
`count_over_time` over it and the newest sample time; three plain instant queries.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import requests

from autoscaler.adapters.prometheus.promql import QueryTemplates, QueryWindow, Stat, build_queries
from autoscaler.adapters.prometheus.recording_rules import recorded_query
from autoscaler.adapters.prometheus.source import PrometheusMetricSource
from autoscaler.domain.models import FleetUsage, UsageView
from autoscaler.settings.recorded import RecordedSeriesSettings
from autoscaler.settings.tree import PolicySettings, PrometheusSettings, SignalSettings
from benchmarks.summary_queries import nan_query, view_queries

VIEW = UsageView(timedelta(hours=1), 0.05)
SUMMARIES = ("PEAK", "HELD", "LAST")  # summary_queries.view_queries, in its order
KEYS = "exported_namespace, exported_pod, UUID, GPU_I_ID"

# The child process: one read by the adapter found first on sys.path, its time, the digest of
# its usage, and the query texts it sends.
_CHILD = """
import hashlib, json, sys, time
from datetime import UTC, datetime, timedelta
from autoscaler.adapters.prometheus import promql
from autoscaler.adapters.prometheus.source import PrometheusMetricSource
from autoscaler.domain.models import UsageView
from autoscaler.settings.tree import PolicySettings, PrometheusSettings
url, at, lookback, evidence = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
policy = PolicySettings(idle_since_lookback=timedelta(seconds=lookback))
raw = {"recorded_series": {"mode": "off"}}  # the raw read, before recordings existed too
raw = raw if "recorded_series" in PrometheusSettings.model_fields else {}
settings = PrometheusSettings(url=url, timeout=timedelta(seconds=120), **raw)
source = PrometheusMetricSource(
    prometheus=settings, policy=policy, readers=None if evidence == "yes" else []
)
view = UsageView(timedelta(hours=1), 0.05)
began = time.perf_counter()
usage = source.read_views([view], now=datetime.fromtimestamp(at, UTC))[view]
seconds = time.perf_counter() - began
span = promql.QueryWindow(view.window, policy.slot, policy.idle_since_lookback, view.threshold)
built = promql.build_queries(settings.signals, span=span, templates=promql.QueryTemplates())
texts = {stat.value: [q] if isinstance(q, str) else list(q) for stat, q in built.items()}
digest = hashlib.sha256(repr(sorted(usage.gpus.items())).encode()).hexdigest()[:12]
print(json.dumps({"seconds": seconds, "queries": source.queries_issued, "digest": digest,
                  "texts": texts, "failure": usage.failure}))
"""


@dataclass
class Case:
    """One line of the table: wall times, and for bare queries their HTTP and JSON parts."""

    label: str
    requests: int = 0
    seconds: list[float] = field(default_factory=list)
    http: list[float] = field(default_factory=list)
    parse: list[float] = field(default_factory=list)
    size: int = 0
    digest: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def cheapest(signals: Sequence[SignalSettings], window: str) -> dict[str, str]:
    """Peak, sample count and newest sample time per GPU over every signal, at one step."""

    def both(expression: str, *, scaled: bool) -> str:
        parts = [
            f"label_replace({expression.format(s=_selector(signal))}"
            f'{f" / {signal.scale!r}" if scaled else ""}, "signal", "{signal.metric}", "", "")'
            for signal in signals
        ]
        return f"max by ({KEYS}) ({' or '.join(parts)})"

    return {
        "peak": both(f"max_over_time({{s}}[{window}])", scaled=True),
        "coverage": both(f"count_over_time({{s}}[{window}])", scaled=False),
        "newest": both("timestamp({s})", scaled=False),
    }


def _selector(signal: SignalSettings) -> str:
    return signal.metric if signal.valid_on_mig else f'{signal.metric}{{GPU_I_ID=""}}'


def measure(
    url: str,
    *,
    policy: PolicySettings,
    at: datetime,
    repeat: int,
    before: Path | None,
    evidence: bool = True,
    recorded: bool = False,
) -> list[Case]:
    """Every case once per repeat, in the same order, so all see the same machine load."""
    settings = PrometheusSettings(url=url, timeout=timedelta(seconds=120))
    span = QueryWindow(VIEW.window, policy.slot, policy.idle_since_lookback, VIEW.threshold)
    ours = _ours(settings.signals, span)
    cheap = {
        f"cheapest {name}": [text] for name, text in cheapest(settings.signals, "3600s").items()
    }
    older = _child(before, url, at, policy, evidence=False)["texts"] if before else {}
    bare = {**ours, **{f"before {name}": texts for name, texts in older.items()}, **cheap}
    reads = _reads(settings, policy, at, recorded=recorded)
    if recorded:
        bare["recorded: the recorded slots (a range selector)"] = [recorded_query(span)]
    if not evidence:  # a quicker run: the reads without evidence only
        reads.pop("read_views, next cycle, default evidence")
    children = _child_labels(before, evidence=evidence)
    cases = {label: Case(label) for label in [*reads, *children, *bare]}
    with requests.Session() as session:
        try:
            for _ in range(repeat):
                for label, source in reads.items():
                    _time_read(cases[label], source() if callable(source) else source, at)
                for label, with_evidence in children.items():
                    _time_child(cases[label], before, url, at, policy, evidence=with_evidence)
                for label, texts in bare.items():
                    _time_bare(cases[label], session, url, texts, at)
        finally:
            for source in reads.values():
                if isinstance(source, PrometheusMetricSource):
                    source.close()
    return list(cases.values())


def _ours(signals: Sequence[SignalSettings], span: QueryWindow) -> dict[str, list[str]]:
    """The read's queries and the summary formulation's (`summary_queries.py`), one line per
    kind, each for every signal."""
    summaries = [view_queries(s, VIEW, slot=span.slot, coarse=span.coarse) for s in signals]
    built = build_queries(signals, span=span, templates=QueryTemplates())
    return {
        "raw slots": list(built[Stat.SLOTS]),
        "raw busy (whole lookback)": list(built[Stat.BUSY]),
        "raw newest": list(built[Stat.NEWEST]),
        "summaries: NaN check": [nan_query(s, window=VIEW.window, slot=span.slot) for s in signals],
        **{f"summaries: {name}": [q[i] for q in summaries] for i, name in enumerate(SUMMARIES)},
    }


def _reads(
    settings: PrometheusSettings, policy: PolicySettings, at: datetime, *, recorded: bool
) -> dict[str, PrometheusMetricSource | Callable[[], PrometheusMetricSource]]:
    """A first read (a new source each time: BUSY over the whole lookback) and the next
    cycle's (a source that read a minute before: BUSY only after its settled steps), of the
    raw series; and the next cycle's from the recorded series when there are some."""
    raw = settings.model_copy(update={"recorded_series": RecordedSeriesSettings(mode="off")})
    warm = {
        "read_views, next cycle, no evidence": PrometheusMetricSource(
            prometheus=raw, policy=policy, readers=[]
        ),
        "read_views, next cycle, default evidence": PrometheusMetricSource(
            prometheus=raw, policy=policy
        ),
    }
    if recorded:
        warm["recorded read_views, next cycle, no evidence"] = PrometheusMetricSource(
            prometheus=settings, policy=policy, readers=[]
        )
    for source in warm.values():
        _check(source.read_views([VIEW], now=at - timedelta(minutes=1))[VIEW])
    return {
        "read_views, first read, no evidence": lambda: PrometheusMetricSource(
            prometheus=raw, policy=policy, readers=[]
        ),
        **warm,
    }


def _child_labels(before: Path | None, *, evidence: bool = True) -> dict[str, bool]:
    if before is None:
        return {}
    labels = {"before read_views, no evidence": False, "before read_views, default evidence": True}
    return labels if evidence else dict(list(labels.items())[:1])


def _time_read(case: Case, source: PrometheusMetricSource, at: datetime) -> None:
    issued = source.queries_issued
    received: list[int] = []
    hooks = source._client._session.hooks["response"]  # to count the bytes received
    hooks.append(lambda response, *_, **__: received.append(len(response.content)))
    began = time.perf_counter()
    usage = source.read_views([VIEW], now=at)[VIEW]
    case.seconds.append(time.perf_counter() - began)
    hooks.pop()
    if issued == 0:  # made for this read
        source.close()
    _check(usage)
    if case.label.startswith("recorded") and source.slots.source != "recorded":
        raise SystemExit(f"{case.label} read the raw series")
    case.requests, case.digest, case.size = (
        source.queries_issued - issued,
        _digest(usage),
        sum(received),
    )


def _time_child(
    case: Case,
    before: Path | None,
    url: str,
    at: datetime,
    policy: PolicySettings,
    *,
    evidence: bool,
) -> None:
    answer = _child(before, url, at, policy, evidence=evidence)
    if answer["failure"]:
        raise SystemExit(f"{case.label} failed: {answer['failure']}")
    case.seconds.append(answer["seconds"])
    case.requests, case.digest = answer["queries"], answer["digest"]


def _child(
    before: Path | None, url: str, at: datetime, policy: PolicySettings, *, evidence: bool
) -> dict[str, object]:
    lookback = str(policy.idle_since_lookback.total_seconds())
    argv = [sys.executable, "-c", _CHILD, url, str(at.timestamp()), lookback]
    env = {**os.environ, "PYTHONPATH": str(before)}  # run there: `-c` puts the cwd first
    done = subprocess.run(
        [*argv, "yes" if evidence else "no"],
        env=env,
        cwd=before,
        capture_output=True,
        text=True,
        check=True,
    )
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


def _time_bare(
    case: Case, session: requests.Session, url: str, texts: Sequence[str], at: datetime
) -> None:
    http = parse = 0.0
    size = 0
    for text in texts:
        began = time.perf_counter()
        reply = session.get(
            f"{url}/api/v1/query",
            params={"query": text, "time": f"{at.timestamp():.3f}"},
            timeout=600,
        )
        reply.raise_for_status()
        body = reply.content
        received = time.perf_counter()
        json.loads(body)
        http, parse, size = (
            http + received - began,
            parse + time.perf_counter() - received,
            size + len(body),
        )
    case.http.append(http)
    case.parse.append(parse)
    case.seconds.append(http + parse)
    case.requests, case.size = len(texts), size


def _check(usage: FleetUsage) -> None:
    if usage.failure is not None:
        raise SystemExit(f"read failed: {usage.failure}")


def _digest(usage: FleetUsage) -> str:
    return hashlib.sha256(repr(sorted(usage.gpus.items())).encode()).hexdigest()[:12]


def report(cases: Sequence[Case], *, load: Mapping[str, str]) -> None:
    """The table, and ratios to the cheapest formulation's total from the same run."""
    cheapest_total = sum(case.median for case in cases if case.label.startswith("cheapest"))
    print()
    print(f"Load average before / after: {load['before']} / {load['after']}")
    print()
    repeats = max((len(case.seconds) for case in cases), default=0)
    columns = ("HTTP", "json.loads", "bytes", "× cheapest", "usage")
    print(f"| what | requests | median (of {repeats}) | {' | '.join(columns)} |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for case in cases:
        http = f"{statistics.median(case.http):.3f} s" if case.http else ""
        parse = f"{statistics.median(case.parse):.3f} s" if case.parse else ""
        size = f"{case.size:,}" if case.size else ""
        ratio = case.median / cheapest_total
        print(
            f"| {case.label} | {case.requests} | {case.median:.3f} s | {http} | {parse} | {size} "
            f"| {ratio:.2f} | {case.digest} |"
        )
    print(f"| cheapest formulation, total | 3 | {cheapest_total:.3f} s | | | | 1.00 | |")
