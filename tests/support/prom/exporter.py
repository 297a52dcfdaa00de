"""A live fake dcgm-exporter: /metrics on loopback, values the test changes at any moment.

    with FakeDcgmExporter() as exporter:
        prom.scrape(exporter)
        exporter.set(gpu, utilization=85)     # percent; math.nan serves NaN
        exporter.remove(gpu)                  # the series disappears (Prometheus marks it stale)
        exporter.set_fields(gpu, DeviceFields(framebuffer_mib=4096, power_watts=75))
                                              # the evidence fields, printed only where set

`pod` is the exporter pod Prometheus is told it scrapes; assign a new `ExporterPod` and call
`prom.scrape(exporter)` again to replay a DaemonSet pod being replaced (the series split).
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

from .dcgm import ALL_METRICS, HELP, ExporterPod, Gpu, LabelStyle, metric_value
from .device_fields import FIELD_HELP, DeviceFields
from .openmetrics import format_labels, format_value

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class FakeDcgmExporter:
    def __init__(
        self,
        *,
        pod: ExporterPod | None = None,
        style: LabelStyle = LabelStyle.SERVICE_MONITOR,
        metrics: tuple[str, ...] = ALL_METRICS,
    ) -> None:
        self.pod = pod or ExporterPod()
        self.style = style
        self.metrics = metrics
        self.scrapes = 0
        self._gpus: dict[tuple[str, int | None], tuple[Gpu, float]] = {}
        self._fields: dict[tuple[str, int | None], tuple[Gpu, DeviceFields]] = {}
        self._lock = threading.Lock()
        self._http: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> str:
        assert self._http is not None, "exporter not started"
        return f"127.0.0.1:{self._http.server_address[1]}"

    @property
    def honor_labels(self) -> bool:
        return self.style is LabelStyle.HONOR_LABELS

    def scrape_labels(self) -> dict[str, str]:
        return self.pod.target_labels()

    def set(self, gpu: Gpu, *, utilization: float) -> None:
        with self._lock:
            self._gpus[gpu.key] = (gpu, utilization)

    def set_fields(self, gpu: Gpu, fields: DeviceFields) -> None:
        """The GPU's device fields from now on (utilization is set apart, by `set`)."""
        with self._lock:
            self._fields[gpu.key] = (gpu, fields)

    def remove(self, gpu: Gpu) -> None:
        with self._lock:
            self._gpus.pop(gpu.key, None)
            self._fields.pop(gpu.key, None)

    def clear(self) -> None:
        with self._lock:
            self._gpus.clear()
            self._fields.clear()

    def render(self) -> str:
        """The exposition text, as dcgm-exporter prints it (no exported_* labels)."""
        with self._lock:
            readings = list(self._gpus.values())
            fields = list(self._fields.values())
        lines: list[str] = []
        for metric in self.metrics:
            lines += [f"# HELP {metric} {HELP[metric]}", f"# TYPE {metric} gauge"]
            for gpu, pct in readings:
                labels = format_labels(gpu.exposed_labels(self.style))
                lines.append(f"{metric}{labels} {format_value(metric_value(metric, gpu, pct))}")
        return "\n".join(lines + self._field_lines(fields)) + "\n"

    def _field_lines(self, fields: list[tuple[Gpu, DeviceFields]]) -> list[str]:
        lines: list[str] = []
        for metric, help_text in FIELD_HELP.items():
            found = [(gpu, v) for gpu, f in fields if (v := f.by_metric().get(metric)) is not None]
            if found:
                lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} gauge"]
            for gpu, value in found:
                labels = format_labels(gpu.exposed_labels(self.style))
                lines.append(f"{metric}{labels} {format_value(value)}")
        return lines

    def start(self) -> None:
        handler = type("BoundMetricsHandler", (MetricsHandler,), {"exporter": self})
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._http.daemon_threads = False  # server_close() joins in-flight scrapes
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, name="dcgm-exporter"
        )
        self._thread.start()

    def stop(self) -> None:
        if self._http is None or self._thread is None:
            return
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)
        self._http = self._thread = None

    def __enter__(self) -> FakeDcgmExporter:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class MetricsHandler(BaseHTTPRequestHandler):
    exporter: ClassVar[FakeDcgmExporter]

    def do_GET(self) -> None:
        if self.path.split("?")[0] != "/metrics":
            self.send_error(404)
            return
        body = self.exporter.render().encode()
        self.exporter.scrapes += 1
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass  # one line per scrape would drown the test output
