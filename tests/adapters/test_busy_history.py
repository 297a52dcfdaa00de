"""BUSY steps kept between reads (pure; the fake server answers what Prometheus would: the
steps aligned to the coarse step within the span asked, above the threshold only).

That a source reading again gets the usage a fresh source gets, against a real Prometheus,
is in test_prometheus_views.py."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.adapters.prometheus.busy_history import BusyHistory
from autoscaler.adapters.prometheus.promql import Columns, QueryWindow
from autoscaler.settings.tree import SignalSettings

COARSE = 900
LOOKBACK = timedelta(hours=6)
NOW = datetime(2026, 1, 1, 12, 0, 20, tzinfo=UTC)  # between two coarse steps
SPAN = QueryWindow(timedelta(hours=1), timedelta(minutes=1), LOOKBACK, threshold=0.05)
SIGNALS = (
    SignalSettings(metric="DCGM_FI_PROF_GR_ENGINE_ACTIVE", scale=1, valid_on_mig=True),
    SignalSettings(metric="DCGM_FI_DEV_GPU_UTIL", scale=100, valid_on_mig=False),
)
Busy = Callable[[str, int, int], float]  # signal, series, step end -> ratio


def bursts(signal: str, series: int, end: int) -> float:
    """Busy now and then, differently per signal and series."""
    return 0.9 if (end // COARSE + series + len(signal)) % 5 == 0 else 0.0


@dataclass
class FakeServer:
    busy: Busy = bursts
    reaches: list[timedelta] = field(default_factory=list)
    series: int = 3

    def at(self, now: datetime) -> Callable[[timedelta], list[list[Columns]]]:
        def ask(reach: timedelta) -> list[list[Columns]]:
            self.reaches.append(reach)
            start = (now - reach).timestamp()
            first = -(-start // COARSE) * COARSE
            ends = range(int(first), int(now.timestamp()) + 1, COARSE)
            return [[self._column(s.metric, n, ends) for n in range(self.series)] for s in SIGNALS]

        return ask

    def _column(self, signal: str, series: int, ends: range) -> Columns:
        kept = [end for end in ends if self.busy(signal, series, end) > SPAN.threshold]
        labels: Mapping[str, str] = {"UUID": f"GPU-{series}", "job": signal}
        return labels, [float(end) for end in kept], [self.busy(signal, series, e) for e in kept]


def read(history: BusyHistory, server: FakeServer, now: datetime, **span: object) -> list[Columns]:
    window = SPAN if not span else QueryWindow(**{**SPAN.__dict__, **span})  # type: ignore[arg-type]
    return sorted(
        history.read(server.at(now), signals=SIGNALS, span=window, now=now),
        key=lambda column: sorted(column[0].items()),
    )


def fresh(now: datetime, server: FakeServer | None = None) -> list[Columns]:
    return read(BusyHistory(), server or FakeServer(), now)


def test_a_first_read_asks_for_the_whole_lookback() -> None:
    server = FakeServer()
    read(BusyHistory(), server, NOW)
    assert server.reaches == [LOOKBACK]


@pytest.mark.parametrize("later", [timedelta(seconds=30), timedelta(minutes=7), timedelta(hours=2)])
def test_a_later_read_asks_only_after_the_settled_steps_and_answers_as_a_whole_read(
    later: timedelta,
) -> None:
    history, server = BusyHistory(), FakeServer()
    read(history, server, NOW)
    answer = read(history, server, NOW + later)
    settled = datetime(2026, 1, 1, 11, 45, tzinfo=UTC)  # a whole coarse step behind NOW
    assert server.reaches[1] == NOW + later - settled
    assert answer == fresh(NOW + later)


def test_steps_that_left_the_lookback_are_dropped_and_new_series_are_added() -> None:
    def new_gpu_since_now(signal: str, series: int, end: int) -> float:
        return 0.0 if series == 3 and end < NOW.timestamp() else bursts(signal, series, end)

    history, server = BusyHistory(), FakeServer(busy=new_gpu_since_now)
    read(history, server, NOW)
    server.series = 4  # a GPU appears
    later = NOW + timedelta(hours=3, minutes=1)
    assert read(history, server, later) == fresh(later, FakeServer(new_gpu_since_now, series=4))
    assert any(labels["UUID"] == "GPU-3" for labels, _, _ in fresh(later, server))


def test_a_series_busy_only_in_its_kept_steps_is_still_answered() -> None:
    ten = datetime(2026, 1, 1, 10, tzinfo=UTC).timestamp()

    def once(signal: str, series: int, end: int) -> float:
        return 0.9 if end == ten and series == 0 else 0.0

    history = BusyHistory()
    read(history, FakeServer(busy=once), NOW)
    answer = read(history, FakeServer(busy=once), NOW + timedelta(minutes=30))
    assert [(labels["UUID"], ends) for labels, ends, _ in answer] == [("GPU-0", [ten])] * 2


@pytest.mark.parametrize(
    ("change", "now"),
    [
        pytest.param({"threshold": 0.1}, NOW + timedelta(minutes=5), id="another-lowest-threshold"),
        pytest.param({"lookback": timedelta(hours=3)}, NOW + timedelta(minutes=5), id="lookback"),
        pytest.param({}, NOW - timedelta(minutes=5), id="now-went-back"),
    ],
)
def test_the_whole_lookback_is_read_again_when_the_kept_steps_do_not_fit(
    change: dict[str, object], now: datetime
) -> None:
    history, server = BusyHistory(), FakeServer()
    read(history, server, NOW)
    read(history, server, now, **change)
    assert server.reaches[1] == change.get("lookback", LOOKBACK)


def test_after_forget_or_a_failed_read_the_whole_lookback_is_read_again() -> None:
    history, server = BusyHistory(), FakeServer()
    read(history, server, NOW)
    history.forget()
    read(history, server, NOW + timedelta(minutes=5))

    def failing(reach: timedelta) -> list[list[Columns]]:
        raise OSError("connection refused")

    with pytest.raises(OSError):
        history.read(failing, signals=SIGNALS, span=SPAN, now=NOW + timedelta(minutes=6))
    read(history, server, NOW + timedelta(minutes=7))
    assert server.reaches == [LOOKBACK] * 3
