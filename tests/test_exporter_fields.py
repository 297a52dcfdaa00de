"""The live fake dcgm-exporter publishes the evidence fields (framebuffer, power, PCIe and
NVLink receive) for the GPUs a test sets them on, beside utilization; no Prometheus here."""

from __future__ import annotations

from tests.support.prom import DeviceFields, FakeDcgmExporter, Gpu, Mig

LOADER = Gpu(namespace="ml", pod="loader-worker-0", node="n1", index=0)
QUIET = Gpu(namespace="ml", pod="quiet-worker-0", node="n1", index=1)


def lines_of(exporter: FakeDcgmExporter, metric: str) -> list[str]:
    return [line for line in exporter.render().splitlines() if line.startswith(f"{metric}{{")]


def test_a_loading_gpu_publishes_its_framebuffer_power_and_pcie_in_dcgm_exporters_units() -> None:
    exporter = FakeDcgmExporter()
    exporter.set(LOADER, utilization=2)
    exporter.set_fields(
        LOADER, DeviceFields(framebuffer_mib=30720, power_watts=75, pcie_rx_bytes_per_second=67e6)
    )

    text = exporter.render()

    (fb,) = lines_of(exporter, "DCGM_FI_DEV_FB_USED")
    assert 'pod="loader-worker-0"' in fb and fb.endswith(" 30720")
    assert lines_of(exporter, "DCGM_FI_DEV_POWER_USAGE")[0].endswith(" 75")
    assert lines_of(exporter, "DCGM_FI_PROF_PCIE_RX_BYTES")[0].endswith(" 6.7e+07")
    assert "# TYPE DCGM_FI_DEV_FB_USED gauge" in text
    assert "DCGM_FI_PROF_NVLINK_RX_BYTES" not in text  # never set: no series at all


def test_fields_are_printed_only_where_set_and_survive_utilization_updates() -> None:
    exporter = FakeDcgmExporter()
    exporter.set(QUIET, utilization=0)
    exporter.set_fields(LOADER, DeviceFields(framebuffer_mib=1024))
    exporter.set(LOADER, utilization=1)  # an e2e step moving utilization keeps the fields

    (fb,) = lines_of(exporter, "DCGM_FI_DEV_FB_USED")
    assert 'pod="loader-worker-0"' in fb
    assert len(lines_of(exporter, "DCGM_FI_DEV_GPU_UTIL")) == 2


def test_removing_a_gpu_removes_its_fields_too() -> None:
    exporter = FakeDcgmExporter()
    exporter.set(LOADER, utilization=2)
    exporter.set_fields(LOADER, DeviceFields(power_watts=80))

    exporter.remove(LOADER)

    assert "DCGM_FI_DEV_POWER_USAGE" not in exporter.render()


def test_a_mig_instance_carries_its_own_framebuffer_series() -> None:
    exporter = FakeDcgmExporter()
    mine = Gpu(namespace="ml", pod="a", mig=Mig(instance_id=1))
    neighbour = Gpu(namespace="ml", pod="b", mig=Mig(instance_id=2))
    exporter.set_fields(mine, DeviceFields(framebuffer_mib=2048))
    exporter.set_fields(neighbour, DeviceFields(framebuffer_mib=9000))

    fbs = lines_of(exporter, "DCGM_FI_DEV_FB_USED")

    assert [line.split()[-1] for line in fbs] == ["2048", "9000"]
    assert 'GPU_I_ID="1"' in fbs[0] and 'GPU_I_ID="2"' in fbs[1]
