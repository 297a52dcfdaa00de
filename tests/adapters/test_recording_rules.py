"""The recording rules as generated from the settings, the shipped copies, and the hole finder
that decides which GPUs are read raw (no server needed, but promtool checks the files)."""

from __future__ import annotations

import math
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from autoscaler.adapters.prometheus.promql import Columns
from autoscaler.adapters.prometheus.recording_rules import (
    SLOT_PEAK,
    RecordedSlots,
    has_holes,
    merged_tail,
    rule_group,
)
from autoscaler.cli import main
from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.settings.tree import SignalSettings
from tests.support.prom import require_binaries

RULES = Path(__file__).parents[2] / "config" / "recording-rules"
MINUTE = timedelta(minutes=1)
SM_ACTIVE = SignalSettings(metric="DCGM_FI_PROF_SM_ACTIVE", scale=100, valid_on_mig=False)


def cli_output(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["recording-rules", *args]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize(
    ("name", "flags"),
    [("prometheus.yaml", ()), ("thanos-ruler.yaml", ("--thanos",))],
)
def test_the_shipped_rules_files_are_what_the_generator_prints_for_the_defaults(
    capsys: pytest.CaptureFixture[str], name: str, flags: tuple[str, ...]
) -> None:
    assert (RULES / name).read_text(encoding="utf-8") == cli_output(capsys, *flags)


def test_promtool_accepts_the_prometheus_rules_file() -> None:
    promtool = require_binaries().promtool
    command = [str(promtool), "check", "rules", str(RULES / "prometheus.yaml")]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_only_the_thanos_file_asks_to_abort_on_partial_data() -> None:
    plain = rule_group([SM_ACTIVE], slot=MINUTE, thanos=False)
    thanos = rule_group([SM_ACTIVE], slot=MINUTE, thanos=True)
    assert "partial_response_strategy" not in plain
    assert thanos["partial_response_strategy"] == "abort"


def test_one_rule_per_signal_at_the_slot_tagged_with_its_metric_and_divided_by_its_scale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yaml"
    settings = {
        "policy": {"slot": "2m", "idleWindow": "1h"},
        "prometheus": {
            "signals": [{"metric": SM_ACTIVE.metric, "scale": 100, "validOnMig": False}]
        },
    }
    config.write_text(yaml.safe_dump(settings), encoding="utf-8")
    [group] = yaml.safe_load(cli_output(capsys, "--config", str(config)))["groups"]
    [rule] = group["rules"]
    assert group["interval"] == "120s"
    assert rule["record"] == SLOT_PEAK and rule["labels"] == {"signal": SM_ACTIVE.metric}
    # The slot as (t - 2m, t] on both servers: 119999ms where the server's own probe says
    # its ranges are left-closed (2.x), 120s where it says left-open (3).
    probe = "count_over_time(vector(1)[2s:1s] @ 1000)"
    closed = 'max_over_time(DCGM_FI_PROF_SM_ACTIVE{GPU_I_ID=""}[119999ms])'
    opened = 'max_over_time(DCGM_FI_PROF_SM_ACTIVE{GPU_I_ID=""}[120s])'
    either = f"(({closed}) and on () ({probe} == 3)) or (({opened}) and on () ({probe} == 2))"
    assert f"last_over_time(({either})[120s:120s])" in rule["expr"]
    assert rule["expr"].endswith(" / 100")
    assert rule["expr"].startswith("max by (workload_namespace, workload_pod, UUID, GPU_I_ID)")


def test_an_invalid_config_exits_non_zero_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("prometheus:\n  recordedSeries:\n    maxAge: 10m\n", encoding="utf-8")
    assert main(["recording-rules", "--config", str(config)]) == 2
    assert "recordedSeries" in capsys.readouterr().err


# -- the hole finder ------------------------------------------------------------------------

M = 60_000  # one slot, in ms


@pytest.mark.parametrize(
    ("ends", "holes"),
    [
        pytest.param([0, M, 2 * M, 3 * M], False, id="every-slot"),
        pytest.param([0, M, 3 * M], True, id="a-missed-evaluation"),
        pytest.param([2 * M, 3 * M], False, id="a-gpu-that-began-in-the-reach"),
        pytest.param([0, M, 2 * M], True, id="stops-before-the-newest-slot"),
        pytest.param([-2 * M], True, id="only-before-the-reach"),
        pytest.param([], False, id="no-slots"),
    ],
)
def test_holes_are_missing_slot_ends_from_the_first_in_reach_to_the_newest(
    ends: list[int], holes: bool
) -> None:
    assert has_holes(ends, first=0, last=3 * M, slot_ms=M) is holes


def recorded(*series: tuple[str, str, list[int]]) -> RecordedSlots:
    columns: list[Columns] = [
        (
            {"workload_namespace": "ns", "workload_pod": pod, "UUID": f"GPU-{pod}", "signal": s},
            [at / 1000 + 7 for at in ends],  # evaluated 7 s after each slot end
            [0.0] * len(ends),
        )
        for pod, s, ends in series
    ]
    return RecordedSlots.of(columns, slot=MINUTE)


def test_gpus_with_holes_or_with_raw_tail_slots_only_are_read_raw() -> None:
    slots = recorded(("full", "A", [0, M, 2 * M]), ("holey", "A", [0, 2 * M]))
    tail = [GpuKey("ns", "full", "GPU-full"), GpuKey("ns", "new", "GPU-new")]
    assert slots.holey(reach_from=0, tail=tail) == {
        GpuKey("ns", "holey", "GPU-holey"),
        GpuKey("ns", "new", "GPU-new"),
    }
    assert slots.tail_from([SignalSettings(metric="A", scale=1, valid_on_mig=True)]) == 3 * M


@pytest.mark.parametrize(
    ("now_s", "signals", "reason"),
    [
        pytest.param(120 + 7 + 180, ("A",), None, id="fresh-at-max-age"),
        pytest.param(120 + 7 + 181, ("A",), "stale", id="stale-past-max-age"),
        pytest.param(130, ("A", "B"), "absent", id="a-signal-without-recordings"),
    ],
)
def test_recordings_are_unusable_when_a_signal_has_none_or_its_newest_is_too_old(
    now_s: int, signals: tuple[str, ...], reason: str | None
) -> None:
    slots = recorded(("full", "A", [0, M, 2 * M]))
    wanted = [SignalSettings(metric=name, scale=1, valid_on_mig=True) for name in signals]
    now = datetime.fromtimestamp(now_s, UTC)
    why = slots.unusable(wanted, now=now, max_age=3 * MINUTE)
    assert (why.split(":")[0] if why else None) == reason


def test_two_evaluations_of_one_slot_after_a_ruler_restart_count_once_the_later_kept() -> None:
    restarted: Columns = (
        {"workload_namespace": "ns", "workload_pod": "p", "UUID": "GPU-p", "signal": "A"},
        [10.0, 50.0, 70.0, 110.0],  # evaluated at +10 s, then, after a restart, at +50 s
        [0.1, 0.2, 0.3, 0.4],
    )
    [series] = RecordedSlots.of([restarted], slot=MINUTE).series["A"]
    assert (series.at_ms, series.at_s, series.values) == ([0, M], [0.0, 60.0], [0.2, 0.4])
    assert not has_holes(series.at_ms, first=0, last=M, slot_ms=M)


def test_a_signal_s_raw_tail_is_merged_per_gpu_a_real_value_over_nan() -> None:
    style = {"exported_namespace": "ns", "exported_pod": "p", "UUID": "GPU-p"}
    tail = merged_tail(
        [
            ({**style, "pod": "exporter-a"}, [60.0, 120.0], [float("nan"), 0.1]),
            ({**style, "pod": "exporter-b"}, [120.0, 180.0], [0.5, float("nan")]),
        ]
    )
    [(ends, values)] = tail.values()
    assert ends == [60.0, 120.0, 180.0] and values[1] == 0.5
    assert math.isnan(values[0]) and math.isnan(values[2])  # NaN alone stays NaN
