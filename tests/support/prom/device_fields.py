"""The device fields the evidence signals read, as dcgm-exporter publishes them.

Units and types from NVIDIA/dcgm-exporter etc/dcp-metrics-included.csv: FB_USED a gauge of
"Framebuffer memory used (in MiB)", POWER_USAGE a gauge of "Power draw (in W)", the PROF
PCIe / NVLink receive fields gauges of the rate in bytes per second (protocol headers
included). A field is printed only for the GPUs a test set it on: a series dcgm-exporter
does not publish is absent, which the service reads as no evidence either way.
"""

from __future__ import annotations

from dataclasses import dataclass

FB_USED = "DCGM_FI_DEV_FB_USED"
POWER_USAGE = "DCGM_FI_DEV_POWER_USAGE"
PCIE_RX_BYTES = "DCGM_FI_PROF_PCIE_RX_BYTES"
NVLINK_RX_BYTES = "DCGM_FI_PROF_NVLINK_RX_BYTES"
FIELD_HELP = {
    FB_USED: "Framebuffer memory used (in MiB).",
    POWER_USAGE: "Power draw (in W).",
    PCIE_RX_BYTES: "The rate of data received over the PCIe bus, in bytes per second.",
    NVLINK_RX_BYTES: "The rate of data received over NVLink, in bytes per second.",
}


@dataclass(frozen=True)
class DeviceFields:
    """One GPU's device fields; None: the exporter does not publish that series."""

    framebuffer_mib: float | None = None
    power_watts: float | None = None
    pcie_rx_bytes_per_second: float | None = None
    nvlink_rx_bytes_per_second: float | None = None

    def by_metric(self) -> dict[str, float]:
        values = {
            FB_USED: self.framebuffer_mib,
            POWER_USAGE: self.power_watts,
            PCIE_RX_BYTES: self.pcie_rx_bytes_per_second,
            NVLINK_RX_BYTES: self.nvlink_rx_bytes_per_second,
        }
        return {metric: value for metric, value in values.items() if value is not None}
