"""The evidence signals in the backtest: what each decision time would have seen (ISSUE 16).

Series shapes follow dcgm-exporter's fields (its default counters CSV): DCGM_FI_DEV_FB_USED in
MiB, DCGM_FI_DEV_POWER_USAGE in W. The fake answers each evidence query with the per-slot
value of the live expression (MiB risen in the slot, the slot's mean W); the real-Prometheus
test evaluates the expressions themselves.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.backtest.baselines import promql_quantile
from autoscaler.backtest.command import backtest
from autoscaler.domain.usage.evidence import FleetEvidence, Signal
from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.settings.rules import build_policy
from autoscaler.settings.tree import Settings

from .evidence_chain import evidence_at as chain
from .fakes import FakeRange, Gpus
from .test_replay import END, T0, options

H, M = 3600, 60
FB_USED, POWER = "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE"
A100 = "NVIDIA A100-SXM4-80GB"
LOADS_FROM, LOADS_UNTIL = T0 + H + 10 * M, T0 + H + 30 * M
LOADER = ("ml", "loader-rc-head-abcde", "GPU-L")
LOADER_KEY = GpuKey(*LOADER)


def compute_one_percent_after_an_hour(t: int) -> float:
    """80 % until T0 + 1 h, then 1 % (below the 5 % threshold) to the end."""
    return 0.8 if t <= T0 + H else 0.01


def fb_climbing(t: int) -> float:
    """1 GiB more in each slot ending in (LOADS_FROM, LOADS_UNTIL]: 20 minutes of loading."""
    return 1024.0 if LOADS_FROM < t <= LOADS_UNTIL else 0.0


def at(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def evidence_at(
    source: FakeRange,
    times: Iterable[int],
    *,
    settings: Settings | None = None,
    chunk: timedelta = timedelta(hours=12),
) -> dict[int, FleetEvidence]:
    keys = [GpuKey(*gpu) for gpu in source.gpus]
    return chain(
        source, times, keys=keys, start=T0 - 2 * H, end=END, settings=settings, chunk=chunk
    )


def sighted(evidence: FleetEvidence, key: GpuKey = LOADER_KEY) -> list[tuple[object, ...]]:
    return [
        (s.signal, s.first_at, s.last_at, s.detail, s.device_level) for s in evidence.for_gpu(key)
    ]


def loading_source(**more: Gpus) -> FakeRange:
    gpus = {LOADER: compute_one_percent_after_an_hour}
    return FakeRange(gpus, evidence={FB_USED: {LOADER: fb_climbing}, **more})


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        pytest.param(LOADS_FROM, [], id="before-the-climb-nothing"),
        pytest.param(
            LOADS_FROM + 10 * M,
            [
                (
                    Signal.FRAMEBUFFER,
                    at(LOADS_FROM + M),
                    at(LOADS_FROM + 10 * M),
                    "framebuffer rose 10.0 GiB",
                    False,
                )
            ],
            id="ten-minutes-into-the-climb",
        ),
        pytest.param(
            LOADS_UNTIL,
            [
                (
                    Signal.FRAMEBUFFER,
                    at(LOADS_FROM + M),
                    at(LOADS_UNTIL),
                    "framebuffer rose 20.0 GiB",
                    False,
                )
            ],
            id="the-whole-twenty-minute-climb",
        ),
        # the reach is the window (60 min) and one coarse step (15 min), as the live read's
        pytest.param(
            LOADS_UNTIL + 74 * M,
            [
                (
                    Signal.FRAMEBUFFER,
                    at(LOADS_UNTIL),
                    at(LOADS_UNTIL),
                    "framebuffer rose 1.0 GiB",
                    False,
                )
            ],
            id="only-the-last-rise-left-in-the-reach",
        ),
        pytest.param(LOADS_UNTIL + 75 * M, [], id="out-of-reach-flat-framebuffer-says-nothing"),
    ],
)
@pytest.mark.parametrize("chunk", [timedelta(minutes=7), timedelta(hours=1), timedelta(hours=12)])
def test_framebuffer_climbing_at_one_percent_compute_is_sighted_in_that_span_only(
    now: int, expected: list[tuple[object, ...]], chunk: timedelta
) -> None:
    found = evidence_at(loading_source(), [now], chunk=chunk)

    assert sighted(found[now]) == expected


def test_a_framebuffer_held_flat_at_sixty_gib_is_no_evidence() -> None:
    held = {LOADER: lambda t: 0.0}  # 60 GiB used, unchanged: the slot's rise is 0 MiB
    source = FakeRange({LOADER: lambda t: 0.0}, evidence={FB_USED: held})

    found = evidence_at(source, [T0 + 3 * H])

    assert found[T0 + 3 * H].gpus == {}


def power_fleet(loader_watts: float = 150.0) -> FakeRange:
    """Three idle A100s at 60, 62 and 64 W; the loader draws `loader_watts` while loading."""
    idle = {("ml", f"idle{i}-rc-head-abcde", f"GPU-{i}"): 60.0 + 2 * i for i in range(3)}
    compute: dict[tuple[str, str, str], object] = {gpu: (lambda t: 0.0) for gpu in idle}
    power = {gpu: (lambda t, w=watts: w) for gpu, watts in idle.items()}
    power[LOADER] = lambda t: loader_watts if LOADS_FROM < t <= LOADS_UNTIL else 60.0
    return FakeRange(
        {LOADER: compute_one_percent_after_an_hour, **compute},  # type: ignore[dict-item]
        models={uuid: A100 for _, _, uuid in [*idle, LOADER]},
        evidence={POWER: power},  # type: ignore[dict-item]
    )


def test_power_over_the_learned_baseline_is_sighted_as_device_level_evidence() -> None:
    now = LOADS_UNTIL

    found = evidence_at(power_fleet(), [now])[now]

    # the 0.1 quantile, as PromQL's quantile interpolates it, of the mean draw of each GPU
    # over the steps its compute had been idle a whole window: 60, 62, 64 W, and the loader's
    # 60 W (its load fell in its first idle window, before it counts as idle)
    assert found.power_baselines == {A100: pytest.approx(60.0)}
    assert sighted(found) == [
        (Signal.POWER, at(LOADS_FROM + M), at(LOADS_UNTIL), "power 150 W > baseline 60 W", True)
    ]
    assert all(
        found.for_gpu(GpuKey("ml", f"idle{i}-rc-head-abcde", f"GPU-{i}")) == () for i in range(3)
    )


@pytest.mark.parametrize(
    ("power", "sighted_power"),
    [
        pytest.param(
            {"baselines": {A100: 100.0}, "learnBaseline": False},
            True,
            id="a-set-baseline-150-W-over-100-plus-30",
        ),
        pytest.param(
            {"baselines": {A100: 130.0}}, False, id="a-set-baseline-wins-over-the-learned-one"
        ),
        pytest.param({"learnBaseline": False}, False, id="no-baseline-no-power-evidence"),
    ],
)
def test_a_configured_baseline_wins_and_none_means_no_power_evidence(
    power: Mapping[str, object], sighted_power: bool
) -> None:
    settings = Settings.model_validate({"prometheus": {"evidence": {"power": power}}})

    found = evidence_at(power_fleet(), [LOADS_UNTIL], settings=settings)[LOADS_UNTIL]

    assert bool(found.for_gpu(LOADER_KEY)) is sighted_power


def test_a_failed_evidence_query_fails_its_signal_within_the_reach_and_is_warned_about() -> None:
    source = loading_source()
    source.failing = frozenset({FB_USED})
    times = [T0 + H, END]

    found = evidence_at(source, times, chunk=timedelta(hours=1))

    assert set(found[T0 + H].failures) == {Signal.FRAMEBUFFER}
    assert "503" in found[T0 + H].failures[Signal.FRAMEBUFFER]
    settings = Settings()
    report = backtest(
        loading_source(), options=options(), settings=settings, policy=build_policy(settings)
    )
    assert not any("evidence unread" in w for w in report.warnings)
    failing = loading_source()
    failing.failing = frozenset({FB_USED})
    report = backtest(failing, options=options(), settings=settings, policy=build_policy(settings))
    assert any(w.startswith("framebuffer evidence unread from") for w in report.warnings)


def test_a_half_used_four_gpu_cluster_is_judged_at_every_step_and_never_stopped() -> None:
    """2 of 4 GPUs at 0 % the whole range, 2 at 80 %: each step may be idle-held, so each is
    judged (and counted in the report's states) though the cluster is busy."""
    gpus = {
        ("ml", "half-rc-gpu-group-worker-abcde", f"GPU-{i}"): (lambda t, i=i: 0.8 * (i < 2))
        for i in range(4)
    }
    settings = Settings()

    report = backtest(
        FakeRange(gpus), options=options(), settings=settings, policy=build_policy(settings)
    )

    assert report.variants[0].deactivations == ()
    assert sum(c.steps for c in report.states) == 6 * 60 + 1  # every minute of [T0, END]
    assert {c.workloads for c in report.states if c.steps} == {1}


def test_the_report_lists_loading_and_idle_held_among_the_states() -> None:
    settings = Settings()
    gpus = {("ns", "rc-head-abcde", "GPU-1"): lambda t: 0.8 if t <= T0 + H else 0.0}

    report = backtest(
        FakeRange(gpus), options=options(), settings=settings, policy=build_policy(settings)
    )

    states = {c.state.value: (c.steps, c.workloads) for c in report.states}
    assert {"idle", "loading", "idle-held", "unknown"} <= set(states)
    assert states["idle"][1] == 1 and states["loading"] == states["idle-held"] == (0, 0)


@pytest.mark.parametrize(
    ("q", "values", "expected"),
    [
        pytest.param(0.1, [66.0, 60.0, 64.0, 62.0], 60.6, id="interpolated-between-ranks"),
        pytest.param(0.5, [1.0, 2.0, 3.0, 4.0], 2.5, id="the-median-of-four"),
        pytest.param(0.1, [70.0], 70.0, id="one-gpu-is-its-own-baseline"),
    ],
)
def test_the_learned_baseline_quantile_interpolates_as_promql_does(
    q: float, values: list[float], expected: float
) -> None:
    assert promql_quantile(q, values) == pytest.approx(expected)
