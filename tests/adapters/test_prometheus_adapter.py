"""The Prometheus metric source against a real Prometheus, directly and through a TLS auth proxy.

History is backfilled with promtool as dcgm-exporter behind a ServiceMonitor stores it, one
scenario per namespace (pod `worker-0`, `prometheus_adapter` in tests/support/prom_histories.py),
ending at `rig.at`; every read is evaluated at `rig.at`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from autoscaler.adapters.prometheus.http import (
    BearerTokenFile,
    ExchangeError,
    ReplyInspector,
    build_session,
)
from autoscaler.adapters.prometheus.promql import QueryTemplates
from autoscaler.adapters.prometheus.source import PrometheusMetricSource
from autoscaler.core.errors import ConfigError
from autoscaler.domain.models import FleetUsage, GpuUsage
from autoscaler.settings.tree import PolicySettings, PrometheusSettings
from tests.conftest import PrometheusSession
from tests.support.prom import AuthProxy, PrometheusServer, make_tls_files, ranges_in
from tests.support.prom_histories import Area
from tests.support.usage_reads import read_one_view

pytestmark = pytest.mark.real

MINUTE = 60
HOUR = 3600
WINDOW = timedelta(hours=1)
THRESHOLD = 0.05
TOKEN = "token-1"
# Three per utilization signal (two by default), one per evidence signal (framebuffer, PCIe,
# NVLink, Ray) and the learned power baseline; this history has no power series, so no power
# matrix (ISSUE 16); and the recorded slots' query, which finds none here and falls back to
# the raw read (docs/RECORDING-RULES.md).
QUERIES_PER_READ = 1 + 3 * 2 + 4 + 1
# A source's first read first asks whether the server's ranges are left-open (Prometheus 3)
# or closed (2.x): once per process, never again once answered (range_semantics.py).
PROBE = 1


@dataclass(frozen=True)
class Rig:
    prom: PrometheusServer
    proxy: AuthProxy
    at: datetime  # the end of this module's history
    alone_at: datetime  # the end of a history of one GPU, alone in the hours before


@pytest.fixture(scope="module")
def rig(
    prometheus_session: PrometheusSession, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Rig]:
    prom = prometheus_session.server
    tls = make_tls_files(tmp_path_factory.mktemp("prom-adapter") / "tls")
    at = datetime.fromtimestamp(prometheus_session.anchor(Area.PROMETHEUS_ADAPTER), UTC)
    alone_at = datetime.fromtimestamp(prometheus_session.anchor(Area.ONE_GPU), UTC)
    with AuthProxy(upstream=prom.url, tls=tls, token=TOKEN) as proxy:
        yield Rig(prom, proxy, at, alone_at)


@pytest.fixture
def proxy(rig: Rig) -> AuthProxy:
    rig.proxy.reset()
    rig.proxy.token = TOKEN
    rig.proxy.denied.clear()
    return rig.proxy


Source = Callable[..., PrometheusMetricSource]


@pytest.fixture
def source() -> Iterator[Source]:
    """Builds metric sources from settings overrides and closes them after the test."""
    built: list[PrometheusMetricSource] = []

    def build(**prometheus: Any) -> PrometheusMetricSource:
        made = PrometheusMetricSource(
            prometheus=PrometheusSettings(**prometheus), policy=PolicySettings()
        )
        built.append(made)
        return made

    yield build
    for made in built:
        made.close()


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n", encoding="utf-8")
    return path


@pytest.fixture
def through_proxy(proxy: AuthProxy, source: Source, token_file: Path) -> PrometheusMetricSource:
    return source(url=proxy.url, ca_file=proxy.ca_bundle, bearer_token_file=token_file)


@pytest.fixture(scope="module")
def usage(rig: Rig) -> FleetUsage:
    made = PrometheusMetricSource(
        prometheus=PrometheusSettings(url=rig.prom.url), policy=PolicySettings()
    )
    try:
        return read_one_view(made, window=WINDOW, threshold=THRESHOLD, now=rig.at)
    finally:
        made.close()


def read(made: PrometheusMetricSource, rig: Rig) -> FleetUsage:
    return read_one_view(made, window=WINDOW, threshold=THRESHOLD, now=rig.at)


def the_gpu(usage: FleetUsage, namespace: str) -> GpuUsage:
    gpus = usage.for_pod(namespace, "worker-0")
    assert len(gpus) == 1, gpus
    return gpus[0]


def ago(rig: Rig, seconds: int) -> datetime:
    return rig.at - timedelta(seconds=seconds)


# -- what the queries compute --------------------------------------------------------------


def test_an_idle_gpu_has_a_low_peak_full_coverage_a_fresh_sample_and_no_busy_time(
    usage: FleetUsage, rig: Rig
) -> None:
    gpu = the_gpu(usage, "idle")
    assert usage.failure is None and usage.doubtful_namespaces == frozenset()
    assert gpu.peak == pytest.approx(0.01)
    assert gpu.coverage == 1.0
    assert gpu.last_sample_at == rig.at
    assert gpu.last_busy_at is None
    assert (gpu.hostname, gpu.model) == ("node-idle", "NVIDIA A100-SXM4-80GB")


def test_a_busy_gpu_peaks_above_the_threshold_and_is_busy_now(usage: FleetUsage, rig: Rig) -> None:
    gpu = the_gpu(usage, "busy")
    assert gpu.peak == pytest.approx(0.85)
    assert gpu.last_busy_at == rig.at


def test_the_last_busy_time_is_the_end_of_the_last_busy_slot(usage: FleetUsage, rig: Rig) -> None:
    gpu = the_gpu(usage, "recently-busy")  # last busy sample 20 min 15 s ago
    assert gpu.peak == pytest.approx(0.9)
    assert gpu.last_busy_at == ago(rig, 20 * MINUTE)


def test_a_busy_time_just_before_the_window_is_still_exact(usage: FleetUsage, rig: Rig) -> None:
    gpu = the_gpu(usage, "busy-70m-ago")
    assert gpu.peak == 0.0
    assert gpu.last_busy_at == ago(rig, 70 * MINUTE)


def test_an_older_busy_time_is_rounded_up_to_a_coarse_step_but_stays_before_the_window(
    usage: FleetUsage, rig: Rig
) -> None:
    last_busy_sample = ago(rig, 2 * HOUR + 15)
    gpu = the_gpu(usage, "busy-2h-ago")
    assert gpu.last_busy_at is not None
    assert last_busy_sample <= gpu.last_busy_at <= last_busy_sample + timedelta(minutes=15)
    assert gpu.last_busy_at < rig.at - WINDOW


def test_a_burst_shorter_than_a_slot_between_two_slot_ends_is_still_seen(
    usage: FleetUsage, rig: Rig
) -> None:
    gpu = the_gpu(usage, "burst")  # busy samples 570 s and 555 s ago, none at a slot end
    assert gpu.peak == pytest.approx(0.95)
    assert gpu.last_busy_at == ago(rig, 9 * MINUTE)


def test_a_gap_shortens_coverage_by_the_slots_without_a_sample(usage: FleetUsage) -> None:
    gpu = the_gpu(usage, "gap")  # 20 minutes without samples: 19 empty slot ends
    assert gpu.coverage == pytest.approx(42 / 60)
    assert gpu.peak == 0.0


def test_coverage_counts_slots_not_samples_so_a_30s_scrape_covers_everything(
    usage: FleetUsage,
) -> None:
    gpus = [gpu for (ns, _), gpus in usage.gpus.items() if ns.startswith("team-") for gpu in gpus]
    assert len(gpus) == 100
    assert {gpu.coverage for gpu in gpus} == {1.0}


def test_a_gpu_with_only_nan_samples_has_no_peak_no_coverage_and_no_sample_time(
    usage: FleetUsage,
) -> None:
    gpu = the_gpu(usage, "nan")
    assert (gpu.peak, gpu.coverage, gpu.last_sample_at) == (None, 0.0, None)


def test_nan_samples_neither_count_as_coverage_nor_as_the_newest_sample(
    usage: FleetUsage,
) -> None:
    gpu = the_gpu(usage, "nan-lately")
    assert gpu.peak == 0.0
    assert gpu.coverage == pytest.approx(31 / 60)
    assert gpu.last_sample_at is None


def test_the_newest_sample_time_is_the_samples_own_time(usage: FleetUsage, rig: Rig) -> None:
    assert the_gpu(usage, "quiet-4m").last_sample_at == ago(rig, 4 * MINUTE + 15)


def test_a_gpu_silent_beyond_the_lookback_delta_has_no_sample_time(usage: FleetUsage) -> None:
    gpu = the_gpu(usage, "stale")
    assert gpu.last_sample_at is None
    assert gpu.peak == 0.0  # what it said before it went quiet is still known


@pytest.mark.parametrize(
    ("namespace", "peak"),
    [
        pytest.param("split-same-ip", 0.03, id="new-exporter-pod-same-ip"),
        pytest.param("split-new-ip", 0.02, id="new-exporter-pod-new-ip"),
    ],
)
def test_a_gpu_whose_exporter_pod_was_replaced_is_one_gpu_covering_the_whole_window(
    usage: FleetUsage, namespace: str, peak: float
) -> None:
    gpu = the_gpu(usage, namespace)
    assert gpu.peak == pytest.approx(peak)
    assert gpu.coverage == 1.0


def test_a_mig_instance_is_judged_by_engine_activity_only(usage: FleetUsage) -> None:
    gpu = the_gpu(usage, "mig")
    assert gpu.key.mig_instance == "1"
    assert gpu.peak == pytest.approx(0.7)


def test_a_mig_instance_without_engine_activity_has_no_series_at_all(usage: FleetUsage) -> None:
    assert usage.for_pod("mig-util-only", "worker-0") == ()


def test_a_whole_gpu_without_profiling_metrics_is_judged_by_gpu_util(usage: FleetUsage) -> None:
    assert the_gpu(usage, "util-only").peak == pytest.approx(0.4)


def test_honor_labels_series_are_read_with_their_own_namespace_pod_and_hostname(
    usage: FleetUsage,
) -> None:
    gpu = the_gpu(usage, "honor")
    assert (gpu.peak, gpu.hostname) == (pytest.approx(0.02), "node-honor")


def test_a_pod_with_two_gpus_has_two_entries(usage: FleetUsage) -> None:
    gpus = usage.for_pod("two-gpus", "worker-0")
    assert sorted(g.peak or 0 for g in gpus) == [0.0, pytest.approx(0.6)]


def test_the_query_count_is_the_same_for_one_gpu_and_for_a_hundred(
    rig: Rig, source: Source
) -> None:
    small, large = source(url=rig.prom.url), source(url=rig.prom.url)
    one = read_one_view(small, window=WINDOW, threshold=THRESHOLD, now=rig.alone_at)
    many = read(large, rig)
    assert sum(len(g) for g in one.gpus.values()) == 1
    assert sum(len(g) for g in many.gpus.values()) > 100
    assert small.queries_issued == large.queries_issued == PROBE + QUERIES_PER_READ
    assert read(large, rig) == many
    assert large.queries_issued == PROBE + 2 * QUERIES_PER_READ, "no probe in a later cycle"


def test_a_reply_is_parsed_once_and_the_client_library_is_handed_that_parse(rig: Rig) -> None:
    # The hook parses every body to check it; a second parse by the client library cost
    # seconds per read on a large fleet's slot matrix. The hook's parse (replies.py) reads
    # sample values as floats, where the standard library's leaves Prometheus' strings.
    session = build_session(PrometheusSettings(url=rig.prom.url), inspector=ReplyInspector())
    reply = session.get(f"{rig.prom.url}/api/v1/query", params={"query": "vector(1)"})
    first = reply.json()
    assert first["data"]["result"][0]["value"][1] == 1.0
    assert reply.json() is first


# -- through the TLS auth proxy ------------------------------------------------------------


def test_the_right_token_and_ca_bundle_read_the_same_usage_with_get_requests(
    through_proxy: PrometheusMetricSource, proxy: AuthProxy, usage: FleetUsage, rig: Rig
) -> None:
    assert read(through_proxy, rig) == usage
    seen = proxy.queries()
    assert [(r.method, r.token, r.status) for r in seen] == [("GET", TOKEN, 200)] * (
        PROBE + QUERIES_PER_READ
    )
    assert {r.params["time"][0] for r in seen} == {f"{rig.at.timestamp():.3f}"}


def test_a_wrong_token_fails_the_read_with_the_proxys_plain_text_401(
    proxy: AuthProxy, source: Source, token_file: Path, rig: Rig
) -> None:
    token_file.write_text("wrong", encoding="utf-8")
    made = source(url=proxy.url, ca_file=proxy.ca_bundle, bearer_token_file=token_file)
    result = read(made, rig)
    assert result.failure == "HTTP 401 Unauthorized (text/plain; charset=utf-8): Unauthorized"
    assert result.gpus == {}
    assert made.queries_issued == 1  # the first failure ends the read


def test_a_denied_token_fails_the_read_with_the_proxys_plain_text_403(
    through_proxy: PrometheusMetricSource, proxy: AuthProxy, rig: Rig
) -> None:
    proxy.denied.add(TOKEN)
    result = read(through_proxy, rig)
    assert (result.failure or "").startswith("HTTP 403 Forbidden (text/plain; charset=utf-8): ")
    assert through_proxy.queries_issued == 1


def test_a_rotated_token_file_is_read_again_without_restarting(
    through_proxy: PrometheusMetricSource, proxy: AuthProxy, token_file: Path, rig: Rig
) -> None:
    assert read(through_proxy, rig).failure is None
    proxy.token = "token-2"
    assert "401" in (read(through_proxy, rig).failure or "")
    token_file.write_text("token-2\n", encoding="utf-8")
    assert read(through_proxy, rig).failure is None
    assert proxy.queries()[-1].token == "token-2"


def test_warnings_make_every_namespace_doubtful_but_keep_the_data(
    through_proxy: PrometheusMetricSource, proxy: AuthProxy, rig: Rig
) -> None:
    proxy.inject_warnings("partial response: store 10.0.0.1 unavailable", times=1)
    result = read(through_proxy, rig)
    assert result.failure is None and result.doubtful_namespaces == frozenset({"*"})
    assert result.doubt_about("idle") == "Prometheus returned partial data (warnings)"
    assert the_gpu(result, "idle").peak == pytest.approx(0.01)
    assert read(through_proxy, rig).doubtful_namespaces == frozenset()  # not carried over


def test_an_error_envelope_fails_the_read_with_its_type_and_message(
    through_proxy: PrometheusMetricSource, proxy: AuthProxy, rig: Rig
) -> None:
    proxy.respond_with_error(status=422, error_type="execution", error="query timed out")
    result = read(through_proxy, rig)
    assert result.failure == "HTTP 422 Unprocessable Entity: execution: query timed out"


def test_a_passing_503_is_retried_once_and_the_read_succeeds(
    through_proxy: PrometheusMetricSource, proxy: AuthProxy, rig: Rig
) -> None:
    proxy.respond_with_status(503, body="upstream restarting", times=1)
    assert read(through_proxy, rig).failure is None
    assert [r.status for r in proxy.queries()] == [503] + [200] * (PROBE + QUERIES_PER_READ)


def test_a_lasting_503_fails_the_read_after_one_retry(
    through_proxy: PrometheusMetricSource, proxy: AuthProxy, rig: Rig
) -> None:
    proxy.respond_with_status(503, body="no healthy upstream", times=None)
    result = read(through_proxy, rig)
    assert (result.failure or "").endswith("no healthy upstream")
    assert len(proxy.queries()) == 2


SERVER_DELAY_S = 30.0  # far beyond the 0.5 s timeout: only the timeout ends a wait for it


def test_a_server_slower_than_the_timeout_fails_the_read_with_both_attempts_cut(
    proxy: AuthProxy, source: Source, token_file: Path, rig: Rig
) -> None:
    made = source(
        url=proxy.url, ca_file=proxy.ca_bundle, bearer_token_file=token_file, timeout="0.5s"
    )
    proxy.delay(SERVER_DELAY_S, times=2)  # the first query and its retry
    began = time.monotonic()
    result = read(made, rig)
    elapsed = time.monotonic() - began
    # Had either attempt waited for the server, the read would have its answer (after 30 s).
    assert (result.failure or "").startswith("Prometheus did not answer in time")
    assert elapsed < SERVER_DELAY_S / 2, f"{elapsed:.1f}s: an attempt waited for the server"
    assert made.queries_issued == 1
    proxy.stop()  # ends the held replies: each is logged unanswered (status 0)
    proxy.start()
    assert [q.status for q in proxy.queries()] == [0, 0]  # the attempt and its one retry


def test_nan_answers_leave_every_gpu_without_peak_or_times(
    through_proxy: PrometheusMetricSource, proxy: AuthProxy, rig: Rig
) -> None:
    assert read(through_proxy, rig).failure is None  # the range semantics probe answered
    proxy.serve_nan()
    result = read(through_proxy, rig)
    gpus = [gpu for pod in result.gpus.values() for gpu in pod]
    assert gpus and all(g.peak is None and g.last_sample_at is None for g in gpus)
    assert {g.coverage for g in gpus} == {0.0}


def test_a_probe_answered_with_nan_is_unknown_logged_once_and_asked_again(
    through_proxy: PrometheusMetricSource,
    proxy: AuthProxy,
    rig: Rig,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Neither 3 (left-closed) nor 2 (left-open): never a guess. Each read fails (unknown,
    # which stops nothing) and asks again; the warning is logged once.
    caplog.set_level(logging.INFO, logger="autoscaler.adapters.prometheus.source")
    proxy.serve_nan()
    for _ in range(2):
        result = read(through_proxy, rig)
        assert (result.failure or "").startswith(
            "cannot tell whether Prometheus keeps a sample at a range's start: "
            "count_over_time(vector(1)[2s:1s]) answered [nan]"
        )
    assert through_proxy.queries_issued == 2 * PROBE, "the probe alone, asked again"
    assert sum("range semantics probe failed" in r.message for r in caplog.records) == 1
    proxy.reset()
    assert read(through_proxy, rig).failure is None
    assert through_proxy.queries_issued == 3 * PROBE + QUERIES_PER_READ
    assert "Prometheus ranges are left-closed" in caplog.messages


def test_a_probe_answered_by_another_engine_is_unknown_and_the_log_names_the_setting(
    through_proxy: PrometheusMetricSource,
    proxy: AuthProxy,
    rig: Rig,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="autoscaler.adapters.prometheus.source")
    proxy.serve_value(5)
    result = read(through_proxy, rig)
    assert (result.failure or "").startswith(
        "cannot tell whether Prometheus keeps a sample at a range's start: "
        "count_over_time(vector(1)[2s:1s]) answered [5.0]"
    )
    assert through_proxy.queries_issued == PROBE
    [logged] = [r.message for r in caplog.records if "range semantics probe failed" in r.message]
    assert "set prometheus.rangeSemantics to left-open (Prometheus 3) or left-closed" in logged


def test_left_closed_set_sends_no_probe_and_the_queries_the_probe_would_have_led_to(
    proxy: AuthProxy, source: Source, token_file: Path, rig: Rig, usage: FleetUsage
) -> None:
    tls = {"url": proxy.url, "ca_file": proxy.ca_bundle, "bearer_token_file": token_file}
    probed = source(**tls)  # the gate's 2.42 answers the probe: left-closed
    assert read(probed, rig) == usage
    after_the_probe = [r.query for r in proxy.queries()][PROBE:]
    proxy.reset()
    told = source(**tls, range_semantics="left-closed")
    assert read(told, rig) == usage
    assert told.queries_issued == QUERIES_PER_READ
    assert [r.query for r in proxy.queries()] == after_the_probe
    assert "count_over_time(vector(1)[2s:1s])" not in after_the_probe


def test_left_open_set_sends_no_probe_and_writes_each_range_whole(
    proxy: AuthProxy, source: Source, token_file: Path, rig: Rig
) -> None:
    told = source(
        url=proxy.url,
        ca_file=proxy.ca_bundle,
        bearer_token_file=token_file,
        range_semantics="left-open",
    )
    proxy.serve_value(5)  # a probe would be unanswerable: none is asked
    assert read(told, rig).failure is None
    assert told.queries_issued == QUERIES_PER_READ
    ranges = ranges_in(proxy.queries())
    assert ("60", "s") in ranges  # the one-minute slot, (t - 60s, t] on a left-open server
    assert all(not (unit == "ms" and amount.endswith("999")) for amount, unit in ranges), ranges


def test_tls_is_verified_by_default_so_an_unknown_ca_fails_the_read(
    proxy: AuthProxy, source: Source, token_file: Path, rig: Rig
) -> None:
    result = read(source(url=proxy.url, bearer_token_file=token_file), rig)
    assert (result.failure or "").startswith("TLS failed")
    assert proxy.queries() == []


def test_the_tenancy_namespace_goes_with_every_request(
    proxy: AuthProxy, source: Source, token_file: Path, rig: Rig
) -> None:
    made = source(
        url=proxy.url,
        ca_file=proxy.ca_bundle,
        bearer_token_file=token_file,
        tenancy_namespace="nvidia-gpu-operator",
    )
    assert read(made, rig).failure is None
    assert [r.namespace for r in proxy.queries()] == ["nvidia-gpu-operator"] * (
        PROBE + QUERIES_PER_READ
    )


def test_an_unreachable_server_fails_the_read(source: Source, rig: Rig) -> None:
    result = read(source(url="http://127.0.0.1:9", timeout="1s"), rig)
    assert (result.failure or "").startswith("cannot connect to Prometheus")


def test_an_unreadable_token_file_fails_the_read(
    proxy: AuthProxy, source: Source, tmp_path: Path, rig: Rig
) -> None:
    made = source(url=proxy.url, ca_file=proxy.ca_bundle, bearer_token_file=tmp_path / "none")
    assert (read(made, rig).failure or "").startswith("cannot read the bearer token")


# -- the token file on its own -------------------------------------------------------------


def test_the_token_is_read_again_only_when_the_file_changes(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("one\n", encoding="utf-8")
    auth = BearerTokenFile(path)
    assert auth.token() == "one"
    path.write_text("two\n", encoding="utf-8")
    os.utime(path, ns=(1, 1))  # a different mtime, whatever the clock's resolution
    assert auth.token() == "two"


def test_an_empty_token_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("\n", encoding="utf-8")
    with pytest.raises(ExchangeError, match="empty"):
        BearerTokenFile(path).token()


# -- configuration and arguments -----------------------------------------------------------


def test_a_template_with_an_unknown_placeholder_is_refused_at_startup() -> None:
    with pytest.raises(ConfigError, match="query templates"):
        PrometheusMetricSource(
            prometheus=PrometheusSettings(),
            policy=PolicySettings(),
            templates=QueryTemplates(slots="max_over_time({selector}[{windwo}])"),
        )


def test_a_template_that_still_divides_by_scale_is_refused_at_startup_saying_why() -> None:
    with pytest.raises(ConfigError, match=r"drop the division by \{scale\}"):
        PrometheusMetricSource(
            prometheus=PrometheusSettings(),
            policy=PolicySettings(),
            templates=QueryTemplates(slots="max_over_time({selector}[{slot}]) / {scale}"),
        )


def test_a_read_that_cannot_be_written_as_promql_fails_without_a_request(source: Source) -> None:
    made = source(url="http://127.0.0.1:9")
    result = read_one_view(made, window=timedelta(0), threshold=THRESHOLD, now=datetime.now(UTC))
    assert (result.failure or "").startswith("cannot build the queries")
    assert made.queries_issued == 0
