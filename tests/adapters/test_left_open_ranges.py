"""Prometheus 3's left-open ranges: both servers' answers give the same usage and decisions.

Prometheus 2.x closes a range at its start; Prometheus 3 leaves it open ("Range selectors and
the lookback delta are now left-open, i.e. a sample coinciding with the lower time limit is
excluded rather than included", https://prometheus.io/docs/prometheus/latest/migration/), so
a subquery `[reach:step]` evaluated on a step boundary answers one step fewer on 3.x: the step
exactly at its start. Every reader of a subquery answer (SLOTS, BUSY, the evidence matrices)
leaves that step out (`promql.reach_start`). Each case here builds, for the same series, the
answer 2.x gives (with that step) and the one 3.x gives (without it), reads both as the metric
source reads them and asserts the same figures and the same decision; the last case shows the
gate's real Prometheus 2.42 does answer that step, and that reading without it changes nothing.

A sample exactly on a slot boundary is the other edge: `max_over_time(x[slot])` holds it in
two slots on 2.x and in one on 3.x. The source asks the server once which it does
(`range_semantics.py`) and writes each slot range one millisecond shorter on 2.x. The
boundary cases evaluate the very queries sent to each server over the same samples, each
server's way, and the gate's Prometheus 2.42 answers a backfilled history on the minute.
"""

from __future__ import annotations

import logging
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests

from autoscaler.adapters.prometheus.busy_history import BusyHistory
from autoscaler.adapters.prometheus.device_evidence import DeviceEvidenceReader
from autoscaler.adapters.prometheus.promql import (
    SLOTS,
    Columns,
    QueryTemplates,
    QueryWindow,
    Stat,
    build_queries,
    parse_columns,
    parse_matrix,
    reach_start,
    workload_gpu_key,
)
from autoscaler.adapters.prometheus.ray import PART, RayReader
from autoscaler.adapters.prometheus.recording_rules import either_server
from autoscaler.adapters.prometheus.slot_columns import newest_rows
from autoscaler.adapters.prometheus.source import PrometheusMetricSource
from autoscaler.adapters.prometheus.views import (
    FleetAnswers,
    Steps,
    merged_steps,
    newest_of,
    slots_end,
    usage_of_view,
)
from autoscaler.domain.models import Decision, FleetUsage, GpuUsage, Pauses, UsageView
from autoscaler.domain.policy.decisions import decide
from autoscaler.domain.states import State
from autoscaler.domain.usage.evidence import FleetEvidence, Signal
from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.settings.evidence import RaySettings
from autoscaler.settings.tree import PolicySettings, PrometheusSettings
from tests.conftest import PrometheusSession
from tests.support.domain_builders import LONG_AGO, a_policy, a_workload
from tests.support.prom_histories import Area

MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
NOW = datetime(2025, 3, 3, 12, 1, tzinfo=UTC)  # a slot end, not a coarse step's
VIEW = UsageView(timedelta(hours=1), 0.05)
SPAN = QueryWindow.for_views([VIEW], slot=MINUTE, lookback=timedelta(days=1))
KEY = GpuKey("team-a", "w-0", "GPU-0", None)
LABELS = {"exported_namespace": "team-a", "exported_pod": "w-0", "UUID": "GPU-0"}
SIGNAL = PrometheusSettings().signals[0]
IDLE, BUSY = 0.01, 0.9
LEFT_CLOSED, LEFT_OPEN = "2.x", "3.x"
SHAPES = (LEFT_CLOSED, LEFT_OPEN)


def _steps(value_at: Callable[[int], float | None], *, shape: str) -> Steps:
    """The SLOTS answer for one GPU at E = slots_end(NOW): a point every slot over the reach,
    `value_at(k)` for the slot ending k slots before E (None: no point, a hole); the step at
    the reach's start, k = recent / slot, only in the 2.x shape."""
    end = slots_end(NOW, MINUTE).timestamp()
    oldest = round(SPAN.recent / MINUTE) - (shape == LEFT_OPEN)
    ends, values = [], []
    for k in range(oldest, -1, -1):
        value = value_at(k)
        if value is not None:
            ends.append(end - 60 * k)
            values.append(value)
    return Steps(ends, values)


def _judged(slots: Steps, busy: Steps) -> tuple[FleetUsage, Decision]:
    answers = FleetAnswers(
        slots={KEY: slots},
        busy={KEY: busy},
        newest={KEY: (NOW - timedelta(seconds=30), "node-1", "NVIDIA A100-SXM4-80GB")},
    )
    gpus = usage_of_view(answers, VIEW, span=SPAN, now=NOW)
    usage = FleetUsage(VIEW.window, VIEW.threshold, evaluated_at=NOW, gpus=gpus)
    workload = a_workload("team-a", "rc").gpu_pod("w-0", created=LONG_AGO).admitted(at=LONG_AGO)
    policy = a_policy(min_coverage=0.8)
    return usage, decide(workload.build(), usage, policy=policy, pauses=Pauses(), now=NOW)


def _both(
    value_at: Callable[[int], float | None], busy: Steps
) -> list[tuple[FleetUsage, Decision]]:
    return [_judged(_steps(value_at, shape=shape), busy) for shape in SHAPES]


def _said(decision: Decision) -> tuple[object, ...]:
    return decision.state, decision.reason, decision.peak, decision.coverage, decision.idle_since


def test_a_busy_slot_at_the_reachs_start_gives_one_last_busy_time() -> None:
    # Busy only in the slot ending exactly where the SLOTS subquery begins (10:46): 2.x answers
    # it, 3.x does not. BUSY holds it in its coarse step ending 11:00 either way, so both say
    # "last busy 11:00", as a read whose reach began a moment later would.
    reach = round(SPAN.recent / MINUTE)
    busy = Steps([datetime(2025, 3, 3, 11, 0, tzinfo=UTC).timestamp()], [BUSY])
    (closed, by_closed), (opened, by_open) = _both(lambda k: BUSY if k == reach else IDLE, busy)
    assert closed == opened
    [gpu] = closed.for_pod("team-a", "w-0")
    assert gpu.last_busy_at == datetime(2025, 3, 3, 11, 0, tzinfo=UTC)
    assert _said(by_closed) == _said(by_open)
    assert by_closed == by_open
    assert by_closed.state is State.IDLE


@pytest.mark.parametrize(
    ("holes", "coverage", "state"),
    [(13, 0.8, State.IDLE), (14, 47 / 60, State.UNKNOWN)],
    ids=["at-min-coverage", "one-slot-below"],
)
def test_coverage_at_min_coverage_is_the_same_from_both_answers(
    holes: int, coverage: float, state: State
) -> None:
    # 61 slot ends in [E - 60m, E] over 60 slots: 48 real ones are exactly minCoverage (0.8).
    # Slots older than the window hold samples, the reach's first one (2.x only) too.
    missing = set(range(5, 5 + holes))
    (closed, by_closed), (opened, by_open) = _both(
        lambda k: None if k in missing else IDLE, Steps()
    )
    assert closed == opened
    [gpu] = closed.for_pod("team-a", "w-0")
    assert gpu.coverage == coverage
    assert _said(by_closed) == _said(by_open)
    assert by_closed == by_open
    assert by_closed.state is state


def _busy_answer(
    *, at: datetime, shape: str, busy_after_start: bool
) -> Callable[[timedelta], list[list[Columns]]]:
    """BUSY over the lookback: busy exactly at its start (the step 2.x alone answers) and,
    with `busy_after_start`, in the coarse step after it."""
    start = reach_start(at, SPAN.lookback)
    ends = [start] if shape == LEFT_CLOSED else []
    ends += [start + SPAN.coarse.total_seconds()] if busy_after_start else []

    def ask(reach: timedelta) -> list[list[Columns]]:
        assert reach == SPAN.lookback
        return [[(LABELS, ends, [BUSY] * len(ends))] if ends else []]

    return ask


@pytest.mark.parametrize("busy_after_start", [False, True])
def test_busy_steps_at_the_lookbacks_start_read_alike(busy_after_start: bool) -> None:
    at = datetime(2025, 3, 3, 12, 0, tzinfo=UTC)  # on a coarse step: a step at now - lookback
    read = [
        BusyHistory().read(
            _busy_answer(at=at, shape=shape, busy_after_start=busy_after_start),
            signals=[SIGNAL],
            span=SPAN,
            now=at,
        )
        for shape in SHAPES
    ]
    assert read[0] == read[1]
    busy = merged_steps(read[0]).get(KEY)
    found = None if busy is None else busy.last_above(VIEW.threshold)
    after = at - SPAN.lookback + SPAN.coarse
    assert found == (after.timestamp() if busy_after_start else None)


def _matrix(
    labels: Mapping[str, str], values_at: Mapping[int, float], *, reach: timedelta, shape: str
) -> dict[str, Any]:
    """One series of an evidence subquery over `reach` at E: the value k slots before E; the
    reach's start (k = reach / slot) only in the 2.x shape."""
    end = slots_end(NOW, MINUTE).timestamp()
    start = round(reach / MINUTE)
    points = [
        [end - 60 * k, str(value)]
        for k, value in sorted(values_at.items(), reverse=True)
        if k < start or shape == LEFT_CLOSED
    ]
    return {"metric": dict(labels), "values": points}


def test_evidence_at_the_reachs_start_reads_alike() -> None:
    # Framebuffer growth in the reach's first slot (2.x only) and two later ones: the same
    # sighting (first seen, last seen, "grew ... over N min") from both answers.
    reader = DeviceEvidenceReader(Signal.FRAMEBUFFER, "DCGM_FI_DEV_FB_USED", 256.0)
    reach = round(SPAN.evidence_reach / MINUTE)
    grown = {reach: 4096.0, 30: 1024.0, 29: 2048.0}
    found: list[FleetEvidence] = []
    for shape in SHAPES:
        series = _matrix(LABELS, grown, reach=SPAN.evidence_reach, shape=shape)
        found.append(reader.read(lambda _q, _at, s=series: [s], span=SPAN, now=NOW))
    assert found[0] == found[1]
    [sighting] = found[0].gpus[KEY]
    assert sighting.first_at == slots_end(NOW, MINUTE) - 30 * MINUTE


def test_ray_tasks_at_the_reachs_start_read_alike() -> None:
    settings = RaySettings()
    pod = {settings.namespace_label: "team-a", settings.pod_label: "head-0"}
    reach = round(SPAN.evidence_reach / MINUTE)
    finished = {reach: 7.0, 20: 2.0, 10: 1.0}
    found: list[FleetEvidence] = []
    for shape in SHAPES:
        series = _matrix(pod | {PART: "finished"}, finished, reach=SPAN.evidence_reach, shape=shape)
        found.append(RayReader(settings).read(lambda _q, _at, s=series: [s], span=SPAN, now=NOW))
    assert found[0] == found[1]
    [sighting] = found[0].pods[("team-a", "head-0")]
    assert sighting.detail.startswith("Ray tasks: 3 finished")


@pytest.mark.real
def test_the_gates_prometheus_2_answers_the_reachs_start_and_reading_without_it_agrees(
    prometheus_session: PrometheusSession,
) -> None:
    """The real Prometheus 2.42 closes the SLOTS subquery's range: its answer holds a step at
    the reach's start. Read with and without that step (the 3.x answer), every GPU of the
    adapter's history has the same usage in every view."""
    at = datetime.fromtimestamp(prometheus_session.anchor(Area.PROMETHEUS_ADAPTER), UTC)
    policy = PolicySettings()
    views = [VIEW, UsageView(15 * MINUTE, 0.05), UsageView(150 * MINUTE, 0.5)]
    span = QueryWindow.for_views(views, slot=policy.slot, lookback=policy.idle_since_lookback)
    signals = PrometheusSettings().signals
    queries = build_queries(signals, span=span, templates=QueryTemplates())
    url = f"{prometheus_session.server.url}/api/v1/query"

    def ask(query: str, when: datetime) -> Sequence[Mapping[str, Any]]:
        reply = requests.get(url, params={"query": query, "time": when.timestamp()}, timeout=30)
        reply.raise_for_status()
        result: Sequence[Mapping[str, Any]] = reply.json()["data"]["result"]
        return result

    end = slots_end(at, span.slot)
    slot_series = [
        column
        for signal, query in zip(signals, queries[Stat.SLOTS], strict=True)
        for column in parse_columns(ask(query, end), scale=signal.scale)
    ]
    start = reach_start(end, span.recent)
    assert any(ends and ends[0] == start for _, ends, _ in slot_series), "2.x answers the start"
    opened = [
        (
            labels,
            [e for e in ends if e > start],
            [v for e, v in zip(ends, values, strict=True) if e > start],
        )
        for labels, ends, values in slot_series
    ]
    busy = merged_steps(
        column
        for signal, query in zip(signals, queries[Stat.BUSY], strict=True)
        for column in parse_columns(ask(query, at), scale=signal.scale)
    )
    newest = newest_of(row for query in queries[Stat.NEWEST] for row in newest_rows(ask(query, at)))
    closed_answers = FleetAnswers(merged_steps(slot_series), busy, newest)
    open_answers = FleetAnswers(merged_steps(opened), busy, newest)
    for view in views:
        read_closed = usage_of_view(closed_answers, view, span=span, now=at)
        assert read_closed, "the history has GPUs in this view"
        assert read_closed == usage_of_view(open_answers, view, span=span, now=at)


# -- a sample exactly on a slot boundary ----------------------------------------------------

Samples = Sequence[tuple[int, float]]  # (unix ms, value), ascending
OPEN, CLOSED, CLOSED_BEFORE = "3.x", "2.x", "2.x, [slot] as written before"


def _range_ms(query: str) -> int:
    """The range of the one range selector in a SLOTS or BUSY query (not its subquery's)."""
    [(amount, unit)] = re.findall(r"\[(\d+)(ms|s)\]", query)
    return int(amount) * (1 if unit == "ms" else 1000)


def _evaluated(
    samples: Samples, *, ends: Iterable[int], range_ms: int, closed: bool, above: float = -1
) -> Steps:
    """`max_over_time(x[range])` at each end (ms), as a server evaluates it: over
    [end - range, end] when `closed` (2.x), else (end - range, end] (3.x); no point without a
    sample, none at or below `above` (BUSY's filter)."""
    times = [at for at, _ in samples]
    found = Steps([], [])
    for end in ends:
        first = (bisect_left if closed else bisect_right)(times, end - range_ms)
        values = [value for _, value in samples[first : bisect_right(times, end)]]
        if values and max(values) > above:
            found.ends.append(end / 1000)  # type: ignore[attr-defined]
            found.values.append(max(values))  # type: ignore[attr-defined]
    return found


def _answers(samples: Samples, *, server: str, span: QueryWindow, now: datetime) -> FleetAnswers:
    """The SLOTS and BUSY answers for one GPU's samples: the queries the source sends to
    `server` (one millisecond shorter ranges once it knows it is 2.x), evaluated its way."""
    closed = server != OPEN
    sent = replace(span, closed_ranges=server == CLOSED)
    queries = build_queries([SIGNAL], span=sent, templates=QueryTemplates())
    end_ms = round(slots_end(now, span.slot).timestamp() * 1000)
    slot_ms, coarse_ms = round(span.slot.total_seconds() * 1000), 900_000
    now_ms = round(now.timestamp() * 1000)
    recent_ms, lookback_ms = (round(s.total_seconds() * 1000) for s in (span.recent, span.lookback))
    first_slot = end_ms - recent_ms + (0 if closed else slot_ms)  # the subquery's own start
    first_busy = -(-(now_ms - lookback_ms) // coarse_ms) * coarse_ms
    slots = _evaluated(
        samples,
        ends=range(first_slot, end_ms + 1, slot_ms),
        range_ms=_range_ms(queries[Stat.SLOTS][0]),
        closed=closed,
    )
    busy = _evaluated(
        samples,
        ends=range(first_busy + (0 if closed else coarse_ms), now_ms + 1, coarse_ms),
        range_ms=_range_ms(queries[Stat.BUSY][0]),
        closed=closed,
        above=span.threshold,
    )
    newest_at = datetime.fromtimestamp(samples[-1][0] / 1000, UTC)
    return FleetAnswers({KEY: slots}, {KEY: busy}, {KEY: (newest_at, "node-1", "A100")})


def _on_the_minute(value_at: Callable[[int], float | None]) -> Samples:
    """A sample each minute on the minute over the day before NOW: `value_at(k)` for the one k
    minutes before the slots' end (None: no sample)."""
    end = round(slots_end(NOW, MINUTE).timestamp() * 1000)
    return [
        (end - 60_000 * k, value)
        for k in range(24 * 60, -1, -1)
        if (value := value_at(k)) is not None
    ]


def _judged_on(samples: Samples, server: str) -> tuple[FleetUsage, Decision]:
    answers = _answers(samples, server=server, span=SPAN, now=NOW)
    return _judged(answers.slots[KEY], answers.busy[KEY])


@pytest.mark.parametrize(
    ("value_at", "differs"),
    [
        pytest.param(lambda k: BUSY if k == 60 else IDLE, "peak", id="busy-at-window-start"),
        pytest.param(lambda k: BUSY if k == 30 else IDLE, "last_busy_at", id="busy-mid-window"),
        pytest.param(
            lambda k: None if 7 <= k <= 19 else IDLE, "coverage", id="gap-after-a-boundary"
        ),
    ],
)
def test_a_sample_on_a_slot_boundary_reads_alike_on_both_servers(
    value_at: Callable[[int], float | None], differs: str
) -> None:
    samples = _on_the_minute(value_at)
    (opened, by_open), (closed, by_closed), (before, by_before) = (
        _judged_on(samples, server) for server in (OPEN, CLOSED, CLOSED_BEFORE)
    )
    assert closed == opened
    assert _said(by_closed) == _said(by_open)
    assert by_closed == by_open
    # The same samples, read by 2.x through the queries written as before: another figure.
    [gpu], [then] = opened.for_pod("team-a", "w-0"), before.for_pod("team-a", "w-0")
    assert getattr(gpu, differs) != getattr(then, differs)
    assert _said(by_before) != _said(by_open)
    end = slots_end(NOW, MINUTE)
    expected = {
        "peak": (IDLE, end - HOUR),  # the busy sample's slot ends at the window's start
        "last_busy_at": (BUSY, end - 30 * MINUTE),
        "coverage": (IDLE, None),  # 13 holes: 48 of 60 slots, minCoverage exactly
    }[differs]
    assert (gpu.peak, gpu.last_busy_at) == expected
    assert by_open.state is State.IDLE
    if differs == "coverage":
        assert (gpu.coverage, then.coverage) == (0.8, 49 / 60)


def _usage_of(
    answers: FleetAnswers,
    key: GpuKey,
    newest: Mapping[GpuKey, tuple[datetime, str | None, str | None]],
    span: QueryWindow,
    at: datetime,
) -> GpuUsage:
    """One GPU's usage in VIEW from the answers `_answers` built for KEY, moved to `key`."""
    moved = FleetAnswers({key: answers.slots[KEY]}, {key: answers.busy[KEY]}, newest)
    [gpu] = usage_of_view(moved, VIEW, span=span, now=at)[(key.namespace, key.pod)]
    return gpu


def _figures(gpu: GpuUsage) -> tuple[object, ...]:
    return gpu.peak, gpu.coverage, gpu.last_busy_at, gpu.last_sample_at


@pytest.mark.real
def test_the_gates_prometheus_2_is_probed_left_closed_and_reads_boundary_samples_left_open(
    prometheus_session: PrometheusSession, caplog: pytest.LogCaptureFixture
) -> None:
    """A history with every sample on the minute: the source's probe says left-closed, and
    each GPU's usage and decision from its read equal those computed from the raw samples with
    left-open ranges; read as 2.x reads the queries written before, each differs."""
    at = datetime.fromtimestamp(prometheus_session.anchor(Area.SLOT_BOUNDARIES), UTC)
    url = prometheus_session.server.url
    source = PrometheusMetricSource(prometheus=PrometheusSettings(url=url), policy=PolicySettings())
    caplog.set_level(logging.INFO, logger="autoscaler.adapters.prometheus.source")
    try:
        usage = source.read_views([VIEW], now=at)[VIEW]
        assert "Prometheus ranges are left-closed" in caplog.messages
    finally:
        source.close()
    span = QueryWindow.for_views([VIEW], slot=MINUTE, lookback=PolicySettings().idle_since_lookback)
    reply = requests.get(
        f"{url}/api/v1/query",
        params={
            "query": f'{SIGNAL.metric}{{exported_namespace=~"bound-.*"}}[1d]',
            "time": at.timestamp(),
        },
        timeout=30,
    )
    reply.raise_for_status()
    raw = parse_matrix(reply.json()["data"]["result"])
    assert len(raw) == 3
    decided = {}
    for labels, points in raw:
        key = workload_gpu_key(labels)
        assert key is not None
        samples = [(round(t * 1000), value / SIGNAL.scale) for t, value in points]
        [read] = usage.for_pod(key.namespace, key.pod)
        newest = {key: (datetime.fromtimestamp(points[-1][0], UTC), read.hostname, read.model)}
        computed, as_before = (
            _usage_of(_answers(samples, server=server, span=span, now=at), key, newest, span, at)
            for server in (OPEN, CLOSED_BEFORE)
        )
        assert read == computed
        assert _figures(as_before) != _figures(computed), key.namespace
        workload = a_workload(key.namespace, "rc").gpu_pod(key.pod, created=LONG_AGO)
        decided[key.namespace] = [
            _said(
                decide(
                    workload.admitted(at=LONG_AGO).build(),
                    judged,
                    policy=a_policy(min_coverage=0.8),
                    pauses=Pauses(),
                    now=at,
                )
            )
            for judged in (usage, replace(usage, gpus={(key.namespace, key.pod): (computed,)}))
        ]
    for namespace, (from_read, from_left_open) in decided.items():
        assert from_read == from_left_open, namespace
    assert [said[0][0] for said in decided.values()] == [State.IDLE] * 3


@pytest.mark.real
def test_the_recording_rules_slot_reads_boundary_samples_left_open_on_the_gates_prometheus_2(
    prometheus_session: PrometheusSession,
) -> None:
    """The recording rule's X (`recording_rules.either_server`), which Prometheus evaluates
    itself, probing its own ranges: at every slot end of the boundary history it holds the
    left-open slots computed from the raw samples."""
    at = datetime.fromtimestamp(prometheus_session.anchor(Area.SLOT_BOUNDARIES), UTC)
    url = f"{prometheus_session.server.url}/api/v1/query"
    span = QueryWindow.for_views([VIEW], slot=MINUTE, lookback=PolicySettings().idle_since_lookback)
    rule_slot = either_server(SLOTS, SIGNAL, slot=MINUTE)
    matcher = '{exported_namespace=~"bound-.*"}'
    rule_slot = rule_slot.replace(SIGNAL.metric, SIGNAL.metric + matcher)
    end = slots_end(at, MINUTE)

    def ask(query: str) -> list[tuple[Mapping[str, str], list[tuple[float, float]]]]:
        reply = requests.get(url, params={"query": query, "time": end.timestamp()}, timeout=30)
        reply.raise_for_status()
        return parse_matrix(reply.json()["data"]["result"])

    start = reach_start(end, span.recent)  # a step there is in 2.x's answer only
    recorded = {
        workload_gpu_key(labels): Steps([t for t, _ in kept], [v for _, v in kept])
        for labels, points in ask(f"({rule_slot})[{span.recent.seconds}s:60s]")
        if (kept := [(t, v) for t, v in points if t > start])
    }
    raw = ask(f"{SIGNAL.metric}{matcher}[1d]")
    assert len(recorded) == len(raw) == 3
    for labels, points in raw:
        samples = [(round(t * 1000), value) for t, value in points]
        left_open = _answers(samples, server=OPEN, span=span, now=end).slots[KEY]
        assert recorded[workload_gpu_key(labels)] == left_open
