"""The real-Prometheus rig itself: histories land with the right values and labels, the live
exporter is relabelled by Prometheus, and the auth proxy misbehaves exactly as told."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.conftest import PrometheusSession
from tests.support.prom import (
    GPU_UTIL,
    AuthProxy,
    ExporterPod,
    FakeDcgmExporter,
    Gpu,
    LabelStyle,
    Mig,
    Profile,
    PrometheusServer,
    block_duration_for,
    make_tls_files,
    require_binaries,
    wait_until,
    write_openmetrics,
)
from tests.support.prom_histories import RIG_POD_A as POD_A
from tests.support.prom_histories import RIG_POD_B as POD_B
from tests.support.prom_histories import RIG_POD_H as POD_H
from tests.support.prom_histories import Area

pytestmark = pytest.mark.real

HOUR = 3600
TOKEN = "token-1"
POD_L = ExporterPod(pod="nvidia-dcgm-exporter-lllll", ip="10.128.2.18")  # joins late


@dataclass(frozen=True)
class Rig:
    """The session's Prometheus, this module's history (`prom_rig` in prom_histories) and its
    three live exporters (pods A, B and an honor-labels H)."""

    prom: PrometheusServer
    proxy: AuthProxy
    exporter: FakeDcgmExporter
    replacement: FakeDcgmExporter
    honoring: FakeDcgmExporter
    now: int  # backfilled history covers [now - 3h, now - 60 s]


@pytest.fixture(scope="module")
def rig(
    prometheus_session: PrometheusSession, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Rig]:
    live, prom = prometheus_session.exporters, prometheus_session.server
    tls = make_tls_files(tmp_path_factory.mktemp("prom-rig") / "tls")
    with AuthProxy(upstream=prom.url, tls=tls, token=TOKEN) as proxy:
        yield Rig(
            prom,
            proxy,
            live.rig,
            live.rig_replacement,
            live.rig_honoring,
            now=prometheus_session.anchor(Area.PROM_RIG),
        )
    for exporter in (live.rig, live.rig_replacement, live.rig_honoring):
        exporter.clear()


@pytest.fixture
def late_exporter(prometheus_session: PrometheusSession) -> Iterator[FakeDcgmExporter]:
    """An exporter the running server was not told about; the session's own targets are
    restored after the test (another 5-10 s)."""
    with FakeDcgmExporter(pod=POD_L) as exporter:
        yield exporter
        prometheus_session.server.scrape(*prometheus_session.exporters.all())


@pytest.fixture
def proxy(rig: Rig) -> AuthProxy:
    rig.proxy.reset()
    rig.proxy.token = TOKEN
    rig.proxy.denied.clear()
    return rig.proxy


def only(result: list[dict[str, Any]]) -> dict[str, Any]:
    assert len(result) == 1, result
    return result[0]


def value_of(rig: Rig, promql: str, *, at: float) -> str:
    return str(only(rig.prom.query(promql, at=at))["value"][1])


def via_proxy(
    proxy: AuthProxy,
    *,
    token: str | None = TOKEN,
    path: str = "/api/v1/query",
    params: dict[str, str] | None = None,
    timeout: float = 5,
) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return requests.get(
        f"{proxy.url}{path}",
        params=params or {"query": "vector(1)"},
        headers=headers,
        verify=str(proxy.ca_bundle),
        timeout=timeout,
    )


# -- pure pieces -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("profile", "t", "expected"),
    [
        pytest.param(Profile.busy(80).idle_from(100), 99, 80.0, id="busy-before-idle-from"),
        pytest.param(Profile.busy(80).idle_from(100), 100, 0.0, id="idle-from-its-start"),
        pytest.param(Profile.busy(80).gap(10, 20), 15, None, id="gap-has-no-sample"),
        pytest.param(Profile.busy(80).gap(10, 20), 20, 80.0, id="gap-ends-exclusive"),
        pytest.param(Profile.bursty(period_s=60, busy_s=10), 65, 95.0, id="burst-busy-part"),
        pytest.param(Profile.bursty(period_s=60, busy_s=10), 75, 0.0, id="burst-idle-part"),
    ],
)
def test_profile_gives_the_level_of_the_latest_window_covering_a_time(
    profile: Profile, t: float, expected: float | None
) -> None:
    assert profile.utilization(t) == expected


def test_profile_nan_window_gives_nan_samples() -> None:
    assert math.isnan(Profile.busy().nan(0, 10).utilization(5) or 0.0)


def test_openmetrics_file_has_whole_families_second_timestamps_and_eof(tmp_path: Path) -> None:
    path = tmp_path / "h.om"
    series = [Gpu(namespace="a", pod=f"p{i}", index=i).history(Profile.busy(50)) for i in (0, 1)]
    written = write_openmetrics(series, path, start=1_000, end=1_030, step_s=15)
    lines = path.read_text().splitlines()
    names = [line.split("{")[0] for line in lines if not line.startswith("#")]
    assert written == 2 * 2 * 3
    assert names == ["DCGM_FI_DEV_GPU_UTIL"] * 6 + ["DCGM_FI_PROF_GR_ENGINE_ACTIVE"] * 6
    assert "# TYPE DCGM_FI_DEV_GPU_UTIL gauge" in lines
    assert lines[-1] == "# EOF"
    assert lines[2].endswith(" 50 1000") and lines[-2].endswith(" 0.5 1030")


def test_block_duration_puts_a_history_in_one_promtool_window() -> None:
    assert block_duration_for(0, 3 * HOUR) == "6h"
    assert block_duration_for(HOUR, HOUR + 600) == "2h"


# -- backfilled history --------------------------------------------------------------------------


def test_backfilled_busy_then_idle_history_is_queryable_with_its_values(rig: Rig) -> None:
    selector = '{exported_namespace="hist", exported_pod="busy-then-idle"}'
    before, after = rig.now - 2 * HOUR + 7, rig.now - 53
    assert value_of(rig, f"DCGM_FI_DEV_GPU_UTIL{selector}", at=before) == "80"
    assert value_of(rig, f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{selector}", at=before) == "0.8"
    assert value_of(rig, f"avg_over_time(DCGM_FI_DEV_GPU_UTIL{selector}[30m])", at=after) == "0"


def test_backfilled_bursty_history_averages_to_its_duty_cycle(rig: Rig) -> None:
    promql = 'avg_over_time(DCGM_FI_DEV_GPU_UTIL{exported_pod="bursty"}[20m])'
    average = float(value_of(rig, promql, at=rig.now - HOUR + 7))
    assert average == pytest.approx(19)  # 95 % busy for 60 s of every 300 s


def test_backfilled_gap_has_no_samples_and_nan_samples_stay_nan(rig: Rig) -> None:
    gap = rig.prom.query(
        'count_over_time(DCGM_FI_DEV_GPU_UTIL{exported_pod="gap"}[30m])', at=rig.now - HOUR - 60
    )
    assert gap == []
    assert value_of(rig, 'DCGM_FI_DEV_GPU_UTIL{exported_pod="nan"}', at=rig.now - 25 * 60) == "NaN"


def test_replaced_exporter_pod_splits_the_gpu_history_into_two_series(rig: Rig) -> None:
    selector = 'DCGM_FI_DEV_GPU_UTIL{exported_pod="replaced"}'
    promql = f"group by (pod, instance, UUID) (last_over_time({selector}[3h]))"
    result = rig.prom.query(promql, at=rig.now - 60)
    assert {(r["metric"]["pod"], r["metric"]["instance"]) for r in result} == {
        (POD_A.pod, "10.128.2.15:9400"),
        (POD_B.pod, "10.128.2.16:9400"),
    }
    assert len({r["metric"]["UUID"] for r in result}) == 1


def test_mig_instances_share_the_gpu_uuid_report_zero_util_and_engine_activity(rig: Rig) -> None:
    at = rig.now - HOUR
    util = rig.prom.query('DCGM_FI_DEV_GPU_UTIL{exported_pod=~"mig-.*"}', at=at)
    engine = rig.prom.query('DCGM_FI_PROF_GR_ENGINE_ACTIVE{exported_pod=~"mig-.*"}', at=at)
    assert [r["value"][1] for r in util] == ["0", "0"]
    assert [r["value"][1] for r in engine] == ["0.7", "0.7"]
    labels = [r["metric"] for r in util]
    assert {m["GPU_I_ID"] for m in labels} == {"1", "2"}
    assert {(m["GPU_I_PROFILE"], m["UUID"], m["device"]) for m in labels} == {
        ("1g.10gb", Gpu(node="node-mig-1").uuid, "nvidia0")
    }


def test_label_styles_and_unallocated_gpus_look_as_prometheus_stores_them(rig: Rig) -> None:
    honor = only(rig.prom.query('DCGM_FI_DEV_GPU_UTIL{pod="honor"}', at=rig.now - HOUR))["metric"]
    free = only(rig.prom.query('DCGM_FI_DEV_GPU_UTIL{Hostname="free-node"}', at=rig.now - HOUR))
    assert honor["namespace"] == "hist" and honor["hostname"] == "node-honor"
    assert "exported_namespace" not in honor and "Hostname" not in honor
    assert free["metric"]["namespace"] == "nvidia-gpu-operator"
    assert "exported_pod" not in free["metric"]


def test_backfill_refuses_history_that_reaches_into_the_future(tmp_path: Path) -> None:
    prom = PrometheusServer(tmp_path, binaries=require_binaries())
    with pytest.raises(ValueError, match="past"):
        prom.backfill([], start=int(time.time()), end=int(time.time()) + 60)


# -- auth proxy ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "token",
    [pytest.param(None, id="missing-token"), pytest.param("wrong", id="wrong-token")],
)
def test_proxy_refuses_a_missing_or_wrong_token_with_plain_text_401(
    proxy: AuthProxy, token: str | None
) -> None:
    response = via_proxy(proxy, token=token)
    assert response.status_code == 401
    assert response.headers["Content-Type"].startswith("text/plain")


def test_proxy_answers_a_denied_token_with_plain_text_403(proxy: AuthProxy) -> None:
    proxy.denied.add("viewer")
    response = via_proxy(proxy, token="viewer")
    assert response.status_code == 403
    assert response.headers["Content-Type"].startswith("text/plain")
    assert response.text.startswith("Forbidden")


def test_rotated_token_is_accepted_and_the_old_one_refused(proxy: AuthProxy) -> None:
    proxy.token = "token-2"
    assert via_proxy(proxy, token="token-2").status_code == 200
    assert via_proxy(proxy, token=TOKEN).status_code == 401


def test_proxy_forwards_get_and_post_and_records_queries_with_their_namespace(
    proxy: AuthProxy,
) -> None:
    got = via_proxy(proxy, params={"query": "2", "namespace": "team-a"})
    posted = requests.post(
        f"{proxy.url}/api/v1/query",
        data={"query": "3"},
        headers={"Authorization": f"Bearer {TOKEN}"},
        verify=str(proxy.ca_bundle),
        timeout=5,
    )
    assert got.json()["data"]["result"][1] == "2"
    assert posted.json()["data"]["result"][1] == "3"
    seen = [(r.method, r.query, r.namespace, r.status) for r in proxy.queries()]
    assert seen == [("GET", "2", "team-a", 200), ("POST", "3", None, 200)]


def test_injected_warnings_reach_only_the_next_n_queries(proxy: AuthProxy) -> None:
    proxy.inject_warnings("partial response: store unavailable", times=2)
    bodies = [via_proxy(proxy).json() for _ in range(3)]
    assert [b.get("warnings") for b in bodies] == [
        ["partial response: store unavailable"],
        ["partial response: store unavailable"],
        None,
    ]
    assert all(b["status"] == "success" for b in bodies)


@pytest.mark.parametrize(
    ("status", "error_type"),
    [pytest.param(422, "execution", id="bad-query-422"), pytest.param(503, "timeout", id="503")],
)
def test_error_envelope_replaces_the_answer(proxy: AuthProxy, status: int, error_type: str) -> None:
    proxy.respond_with_error(status=status, error_type=error_type, error="boom")
    failed, recovered = via_proxy(proxy), via_proxy(proxy)
    assert failed.status_code == status
    assert failed.json() == {"status": "error", "errorType": error_type, "error": "boom"}
    assert recovered.status_code == 200


def test_bare_5xx_is_plain_text(proxy: AuthProxy) -> None:
    proxy.respond_with_status(502, body="no healthy upstream", times=None)
    response = via_proxy(proxy)
    assert (response.status_code, response.text) == (502, "no healthy upstream")
    assert response.headers["Content-Type"].startswith("text/plain")


def test_delay_beyond_the_client_timeout_makes_the_client_time_out(proxy: AuthProxy) -> None:
    proxy.delay(3)
    with pytest.raises(requests.Timeout):
        via_proxy(proxy, timeout=0.3)
    assert via_proxy(proxy).status_code == 200


def test_nan_mode_replaces_every_value_of_vectors_and_matrices(rig: Rig, proxy: AuthProxy) -> None:
    proxy.serve_nan()
    selector = 'DCGM_FI_DEV_GPU_UTIL{exported_namespace="hist"}'
    at = rig.now - 2 * HOUR
    vector = via_proxy(proxy, params={"query": selector, "time": str(at)}).json()
    matrix = via_proxy(
        proxy,
        path="/api/v1/query_range",
        params={"query": selector, "start": str(at - 60), "end": str(at), "step": "15"},
    ).json()
    assert len(vector["data"]["result"]) > 3
    assert {r["value"][1] for r in vector["data"]["result"]} == {"NaN"}
    assert {v[1] for r in matrix["data"]["result"] for v in r["values"]} == {"NaN"}


def test_proxy_certificate_is_trusted_only_through_the_ca_bundle(proxy: AuthProxy) -> None:
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(f"{proxy.url}/-/ready", timeout=5)


# -- live exporter -------------------------------------------------------------------------------


def wait_for_value(rig: Rig, promql: str, expected: str | None) -> None:
    def seen() -> bool:
        result = rig.prom.query(promql)
        return (result[0]["value"][1] if result else None) == expected

    wait_until(seen, timeout_s=15, what=f"{promql} == {expected}")


def test_prometheus_renames_the_live_workload_labels_to_exported(rig: Rig) -> None:
    gpu = Gpu(namespace="live", pod="relabelled", node="live-node")
    rig.exporter.set(gpu, utilization=42)
    assert 'namespace="live",pod="relabelled"' in rig.exporter.render()
    wait_for_value(rig, 'DCGM_FI_DEV_GPU_UTIL{exported_pod="relabelled"}', "42")
    stored = only(rig.prom.query('DCGM_FI_DEV_GPU_UTIL{exported_pod="relabelled"}'))["metric"]
    assert stored | POD_A.target_labels() == stored  # namespace/pod/container... are the exporter's
    assert (stored["exported_namespace"], stored["exported_container"]) == ("live", "main")
    # ...and exactly the labels backfilled history carries, so both read the same.
    assert stored == {"__name__": GPU_UTIL} | gpu.stored_labels(POD_A, LabelStyle.SERVICE_MONITOR)


def test_honor_labels_exporter_keeps_the_workload_labels(rig: Rig) -> None:
    gpu = Gpu(namespace="live", pod="honored", node="h-node")
    rig.honoring.set(gpu, utilization=5)
    wait_for_value(rig, 'DCGM_FI_DEV_GPU_UTIL{namespace="live", pod="honored"}', "5")
    stored = only(rig.prom.query('DCGM_FI_DEV_GPU_UTIL{pod="honored"}'))["metric"]
    assert stored["hostname"] == "h-node" and stored["service"] == "nvidia-dcgm-exporter"
    assert stored == {"__name__": GPU_UTIL} | gpu.stored_labels(POD_H, LabelStyle.HONOR_LABELS)


def test_live_values_change_turn_nan_and_vanish_when_the_series_is_removed(rig: Rig) -> None:
    gpu = Gpu(namespace="live", pod="changing", node="live-node", index=1)
    promql = 'DCGM_FI_DEV_GPU_UTIL{exported_pod="changing"}'
    for utilization, shown in ((90, "90"), (math.nan, "NaN"), (0, "0")):
        rig.exporter.set(gpu, utilization=utilization)
        wait_for_value(rig, promql, shown)
    rig.exporter.remove(gpu)
    wait_for_value(rig, promql, None)  # staleness marker on the next scrape


def test_live_mig_instance_reports_zero_util_and_its_engine_ratio(rig: Rig) -> None:
    rig.exporter.set(Gpu(namespace="live", pod="mig", node="m-node", mig=Mig(9)), utilization=50)
    wait_for_value(rig, 'DCGM_FI_PROF_GR_ENGINE_ACTIVE{exported_pod="mig", GPU_I_ID="9"}', "0.5")
    assert value_of(rig, 'DCGM_FI_DEV_GPU_UTIL{exported_pod="mig"}', at=time.time()) == "0"


def test_moving_a_gpu_to_the_replacement_exporter_splits_its_series(rig: Rig) -> None:
    gpu = Gpu(namespace="live", pod="moved", node="moved-node")
    rig.exporter.set(gpu, utilization=70)
    wait_for_value(rig, f'DCGM_FI_DEV_GPU_UTIL{{exported_pod="moved", pod="{POD_A.pod}"}}', "70")
    rig.exporter.remove(gpu)
    rig.replacement.set(gpu, utilization=70)
    wait_for_value(rig, f'DCGM_FI_DEV_GPU_UTIL{{exported_pod="moved", pod="{POD_B.pod}"}}', "70")
    wait_for_value(rig, f'DCGM_FI_DEV_GPU_UTIL{{exported_pod="moved", pod="{POD_A.pod}"}}', None)


@pytest.mark.slow
def test_scrape_reconfigures_a_running_server_to_scrape_a_new_exporter(
    rig: Rig, prometheus_session: PrometheusSession, late_exporter: FakeDcgmExporter
) -> None:
    gpu = Gpu(namespace="late", pod="joined")
    late_exporter.set(gpu, utilization=33)
    scraped = prometheus_session.exporters.all()
    rig.prom.scrape(*scraped, late_exporter)  # returns once the target was scraped (5-10 s)
    stored = only(rig.prom.query('DCGM_FI_DEV_GPU_UTIL{exported_pod="joined"}'))
    assert (stored["metric"]["pod"], stored["value"][1]) == (POD_L.pod, "33")


# -- missing binaries -----------------------------------------------------------------------------


def test_missing_prometheus_skips_the_test_unless_real_parts_are_required(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("REQUIRE_REAL", raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install -y prometheus"):
        require_binaries(find=lambda name: None)
    monkeypatch.setenv("REQUIRE_REAL", "1")
    with pytest.raises(pytest.fail.Exception, match="REQUIRE_REAL=1"):
        require_binaries(find=lambda name: None)
