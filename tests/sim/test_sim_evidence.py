"""The simulated exporter's evidence signals, checked against sightings computed by hand.

Samples fall at :07 and :37 past each minute (the exporter's default timing); the slot
ending at minute m holds the samples of minute m - 1. Times below are minutes from ORIGIN.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.domain.models import UsageView
from autoscaler.domain.usage.evidence import FleetEvidence, Sighting, Signal
from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.settings.evidence import EvidenceSettings, FramebufferSettings, PowerSettings
from autoscaler.sim.metrics import GPU_MODEL, GpuHolding, SimulatedExporter
from autoscaler.sim.pods import gpu_uuid
from autoscaler.sim.profiles import Profile
from tests.support.usage_reads import read_one_view

ORIGIN = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)
THRESHOLD = 0.05


def at(minute: float) -> datetime:
    return ORIGIN + timedelta(minutes=minute)


@dataclass
class Holdings:
    held: list[GpuHolding]

    def gpu_holdings(self) -> Sequence[GpuHolding]:
        return self.held


def gpus(cluster: str, count: int = 1, *, start: float = -30) -> list[GpuHolding]:
    """`count` GPUs of one RayCluster's single pod, held from `start`."""
    node = f"node-{cluster}"
    return [
        GpuHolding(GpuKey("sim", cluster, gpu_uuid(node, i)), cluster, node, at(start), index=i)
        for i in range(count)
    ]


def exporter(
    profiles: dict[str, Profile], held: list[GpuHolding], evidence: EvidenceSettings | None = None
) -> SimulatedExporter:
    return SimulatedExporter(
        holdings=Holdings(held),
        profiles={("sim", name): profile for name, profile in profiles.items()},
        origin=ORIGIN,
        evidence=evidence,
    )


def evidence_at(
    minute: float,
    profiles: dict[str, Profile],
    held: list[GpuHolding],
    evidence: EvidenceSettings | None = None,
) -> FleetEvidence:
    usage = read_one_view(
        exporter(profiles, held, evidence), window=HOUR, threshold=THRESHOLD, now=at(minute)
    )
    return usage.evidence


def by_signal(found: tuple[Sighting, ...]) -> dict[Signal, Sighting]:
    return {sighting.signal: sighting for sighting in found}


LOADER = Profile.weight_loading(start=0, minutes=20, gib=60)
IDLE_PAIR = {"idle-a": Profile.idle(), "idle-b": Profile.idle()}  # 60 W each: the baseline


def test_weights_loading_show_framebuffer_growth_and_pcie_receive_from_the_first_slot() -> None:
    held = gpus("loader") + gpus("idle-a") + gpus("idle-b")
    found = evidence_at(15, {"loader": LOADER, **IDLE_PAIR}, held)

    (key,) = [h.key for h in held if h.raycluster == "loader"]
    sightings = by_signal(found.for_gpu(key))
    # 3 GiB/min from 0:00: the slot ending at 1 rose from 512 MiB to the 0:37 sample; the
    # slots up to 15 add up to the 14:37 sample minus 512 MiB: 3072 * 14.6167 MiB.
    assert sightings[Signal.FRAMEBUFFER] == Sighting(
        Signal.FRAMEBUFFER,
        last_at=at(15),
        first_at=at(1),
        detail="framebuffer grew 43.9 GiB over 15m",
    )
    assert sightings[Signal.FRAMEBUFFER].device_level is False
    # 51.2 MiB/s of weights, with PCIe's protocol headers: 67 MB/s on the wire.
    assert sightings[Signal.PCIE] == Sighting(
        Signal.PCIE,
        last_at=at(15),
        first_at=at(1),
        detail="PCIe receiving 67 MB/s",
    )
    assert sightings[Signal.PCIE].device_level is True
    assert Signal.POWER not in sightings  # 75 W while copying: under 60 W + 30 W
    assert found.power_baselines == {GPU_MODEL: 60.0}


def test_after_loading_the_framebuffer_is_flat_and_only_the_training_power_remains() -> None:
    held = gpus("loader") + gpus("idle-a") + gpus("idle-b")
    found = evidence_at(30, {"loader": LOADER, **IDLE_PAIR}, held)

    (key,) = [h.key for h in held if h.raycluster == "loader"]
    sightings = by_signal(found.for_gpu(key))
    assert (sightings[Signal.FRAMEBUFFER].first_at, sightings[Signal.FRAMEBUFFER].last_at) == (
        at(1),
        at(21),  # the 20:37 sample reaches 60.5 GiB; nothing rises after
    )
    assert sightings[Signal.POWER].first_at == at(21)  # training at 90 %: 366 W
    assert sightings[Signal.POWER].detail == "power 366 W, idle baseline 60 W"
    assert sightings[Signal.PCIE].last_at == at(30)  # input batches at 540 MB/s


@pytest.mark.parametrize(
    "profile",
    [
        pytest.param(Profile.idle().holding(gib=60), id="60-gib-held-flat-at-0-percent"),
        pytest.param(Profile.idle(), id="idle-with-a-context"),
        pytest.param(Profile.loading(until=50), id="compute-only-loading-at-2-percent"),
    ],
)
def test_a_gpu_doing_nothing_has_no_evidence_whatever_memory_it_holds(profile: Profile) -> None:
    held = gpus("quiet") + gpus("idle-a") + gpus("idle-b")
    found = evidence_at(45, {"quiet": profile, **IDLE_PAIR}, held)

    assert found.gpus == {}


def test_a_half_used_cluster_has_power_evidence_on_its_busy_gpus_only() -> None:
    held = gpus("half", 4)
    found = evidence_at(45, {"half": Profile.half_used(gpus=4, busy=2, pct=85)}, held)

    with_evidence = {key.uuid for key in found.gpus}
    assert with_evidence == {held[0].key.uuid, held[1].key.uuid}
    assert found.power_baselines == {GPU_MODEL: 60.0}  # learned from GPUs 2 and 3
    usage = read_one_view(
        exporter({"half": Profile.half_used()}, held), window=HOUR, threshold=THRESHOLD, now=at(45)
    )
    assert [gpu.peak for gpu in usage.for_pod("sim", "half")] == [0.85, 0.85, 0.0, 0.0]


def test_without_idle_gpus_or_a_configured_baseline_power_is_no_evidence() -> None:
    held = gpus("busy")
    found = evidence_at(45, {"busy": Profile.busy(90)}, held)

    assert found.power_baselines == {}
    assert Signal.POWER not in by_signal(found.for_gpu(held[0].key))


def test_a_configured_baseline_wins_over_the_learned_one() -> None:
    held = gpus("loader") + gpus("idle-a") + gpus("idle-b")
    configured = EvidenceSettings(power=PowerSettings(baselines={GPU_MODEL: 40.0}))
    found = evidence_at(15, {"loader": LOADER, **IDLE_PAIR}, held, configured)

    assert found.power_baselines == {GPU_MODEL: 40.0}
    power = by_signal(found.for_gpu(held[0].key))[Signal.POWER]  # 75 W >= 40 W + 30 W
    assert (power.first_at, power.detail) == (at(1), "power 75 W, idle baseline 40 W")


def test_a_disabled_signal_is_not_read() -> None:
    held = gpus("loader")
    off = EvidenceSettings(framebuffer=FramebufferSettings(enabled=False))
    found = evidence_at(15, {"loader": LOADER}, held, off)

    assert set(by_signal(found.for_gpu(held[0].key))) == {Signal.PCIE}


def test_an_exporter_gap_leaves_no_evidence_and_no_failure() -> None:
    held = gpus("loader")
    found = evidence_at(15, {"loader": LOADER.gap(-30, 16)}, held)

    assert (found.gpus, found.failures) == ({}, {})


def test_every_view_of_one_read_shares_the_same_evidence() -> None:
    sim = exporter({"loader": LOADER}, gpus("loader"))
    views = [UsageView(HOUR, THRESHOLD), UsageView(timedelta(minutes=30), 0.1)]

    read = sim.read_views(views, now=at(15))

    assert read[views[0]].evidence is read[views[1]].evidence
    assert read[views[0]].evidence.gpus


def test_the_fresh_check_sees_the_slot_ending_now_for_the_asked_pods_only() -> None:
    held = gpus("loader") + gpus("other-loader")
    sim = exporter({"loader": LOADER, "other-loader": LOADER}, held)

    latest = sim.read_latest([("sim", "loader")], now=at(15))

    assert set(latest.evidence.gpus) == {held[0].key}
    sightings = by_signal(latest.evidence.for_gpu(held[0].key))
    assert set(sightings) == {Signal.FRAMEBUFFER, Signal.PCIE}
    assert sightings[Signal.FRAMEBUFFER].detail == "framebuffer grew 3.0 GiB over 1m"
    assert {s.first_at for s in sightings.values()} == {at(15)}
