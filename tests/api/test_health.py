"""Probes and /metrics over HTTP: ready after the first snapshot, and ready through outages."""

from __future__ import annotations

from autoscaler.engine.metrics.telemetry import METRIC_NAMES
from autoscaler.settings.api import ApiSettings
from tests.api.rig import ApiRig


def test_the_process_is_alive_before_and_after_the_first_cycle(rig: ApiRig) -> None:
    assert rig.http.get("/healthz").json() == {"status": "ok"}
    rig.cycle()
    assert rig.http.get("/healthz").status_code == 200


def test_readiness_fails_only_until_the_first_snapshot_exists(rig: ApiRig) -> None:
    before = rig.http.get("/readyz")
    assert before.status_code == 503
    assert before.json()["ready"] is False
    rig.cycle()
    after = rig.http.get("/readyz")
    assert after.status_code == 200
    assert after.json() == {
        "ready": True,
        "cycle": 1,
        "takenAt": after.json()["takenAt"],
        "clusterOk": True,
        "metricsOk": True,
        "errors": [],
        "guards": after.json()["guards"],  # the screen's report: every loop is guarded
    }


def test_readiness_stays_but_reports_when_the_last_cycle_missed_the_cluster(rig: ApiRig) -> None:
    rig.cycle()
    rig.kube.faults.fail_next("GET", "/apis/kueue.x-k8s.io", status=503, times=3)
    rig.cycle()
    response = rig.http.get("/readyz")
    assert response.status_code == 200
    assert (response.json()["clusterOk"], response.json()["cycle"]) == (False, 2)
    assert "cluster unreachable" in response.json()["errors"][0]


def test_readiness_reports_when_the_last_cycle_missed_prometheus(rig: ApiRig) -> None:
    rig.usage.failing = True
    rig.cycle()
    body = rig.http.get("/readyz").json()
    assert (body["ready"], body["clusterOk"], body["metricsOk"]) == (True, True, False)


def test_metrics_expose_every_documented_name_in_the_prometheus_text_format(rig: ApiRig) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    response = rig.http.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain")
    exposed = {line.split()[2] for line in response.text.splitlines() if line.startswith("# TYPE")}
    exposed |= {name + "_total" for name in exposed}
    assert set(METRIC_NAMES) <= exposed
    assert 'idle_gpu_autoscaler_workloads{state="idle"} 1.0' in response.text
    assert "idle_gpu_autoscaler_cycles_total 1.0" in response.text


def test_swagger_ui_is_off_by_default_and_the_schema_is_served_from_the_package(
    rig: ApiRig,
) -> None:
    assert rig.http.get("/docs").status_code == 404
    assert rig.reader.get("/redoc").status_code == 404  # not an open path: a token to see
    assert rig.http.get("/openapi.json").json()["info"]["title"] == "idle-gpu-autoscaler"


def test_swagger_ui_is_served_when_asked_for() -> None:
    with ApiRig(settings=ApiSettings(host="127.0.0.1", port=0, serve_docs=True)) as rig:
        response = rig.http.get("/docs")
    assert response.status_code == 200
    assert "swagger-ui" in response.text
