"""`idle-gpu-autoscaler demo`: every scenario's outcome, on the real service at max speed."""

from __future__ import annotations

import argparse
import io
import logging
import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import pytest

from autoscaler.compose.demo import build_demo_service
from autoscaler.demo.endpoints import Endpoints
from autoscaler.demo.run import (
    DemoOptions,
    DemoRun,
    add_demo_arguments,
    options_from,
    play_demo,
    run_demo,
)
from autoscaler.demo.scenarios import MISSING_IMAGE, SCENARIOS
from autoscaler.demo.story import Outcome, World, keep_serving, play
from autoscaler.settings.tree import Settings
from autoscaler.sim.clock import DEFAULT_SPEED
from autoscaler.sim.kueue_model import EventKind
from tests.support.demo_runs import play_served
from tests.support.usage_reads import read_one_view


def at(scenario: str, minute: float) -> datetime:
    return SCENARIOS[scenario].start + timedelta(minutes=minute)


def deactivated(outcome: Outcome) -> dict[str, datetime]:
    return {entry.raycluster: entry.audit.at for entry in outcome.audits}


@pytest.fixture(scope="module")
def runs() -> dict[str, tuple[DemoRun, str]]:
    """Each scenario this file asserts on (the others have test files of their own) played
    once at max speed, non-interactive, with what it printed, with the REST API served as
    `demo` serves it (the story's people use it)."""
    played = {}
    for name in ("two-clusters", "rd-and-production", "noisy"):
        out = io.StringIO()
        options = DemoOptions(scenario=name, speed=None, interactive=False)
        played[name] = (play_served(options, out=out), out.getvalue())
    return played


def test_two_clusters_deactivates_the_first_when_its_snooze_ends_and_admits_the_second(
    runs: dict[str, tuple[DemoRun, str]],
) -> None:
    run, printed = runs["two-clusters"]
    window_after_the_job_stopped = at("two-clusters", 20 + 60)
    snooze_ends = window_after_the_job_stopped + timedelta(minutes=15)  # 30 min from 11:05

    assert deactivated(run.live) == {"first-raycluster": snooze_ends}
    assert run.live.admitted_at["second-raycluster"] == snooze_ends
    assert run.summary.gpu_hours == pytest.approx(2 * 15 / 60)  # 2 GPUs, 11:35 to 11:50
    (reclaimed,) = run.summary.reclaimed
    assert reclaimed.notice == "warned at 11:05 and 11:20; snoozed until 11:35 by demo-admin"
    (sooner,) = run.summary.sooner
    assert (
        sooner.raycluster,
        sooner.dry_run_admitted_at is None,
        sooner.by,
    ) == (  # "at least": never admitted in the dry run
        "second-raycluster",
        True,
        timedelta(minutes=15),
    )
    assert "Summary of two-clusters" in printed
    assert "[11:05 +65m] warned first-raycluster: stop planned at 11:20, in 15 min" in printed
    assert "[11:20 +80m] warned first-raycluster: stop planned at 11:35, in 15 min" in printed
    assert "[11:35 +95m] deactivated first-raycluster: idle for the whole window" in printed


def test_the_dry_run_replay_deactivates_nothing_and_leaves_the_second_waiting(
    runs: dict[str, tuple[DemoRun, str]],
) -> None:
    run, _ = runs["two-clusters"]

    assert run.replay.dry_run and run.replay.audits == ()
    assert "needs 2, 0 available" in run.replay.waiting["second-raycluster"]


def test_rd_and_production_frees_two_dev_workspaces_and_admits_production_at_once(
    runs: dict[str, tuple[DemoRun, str]],
) -> None:
    run, _ = runs["rd-and-production"]
    live = run.live

    assert deactivated(live) == {
        "bob-workspace": at("rd-and-production", 10 + 60),
        "carol-workspace": at("rd-and-production", 20 + 60),
    }
    assert live.admitted_at["final-training-run"] == at("rd-and-production", 120)  # it arrives
    evicted = [live.names[e.workload] for e in live.events if e.kind is EventKind.EVICTED]
    assert evicted == ["bob-workspace", "carol-workspace"]  # no preemption: only our two
    reason = run.replay.waiting["final-training-run"]
    assert "cohort all-gpus" in reason and "needs 12, 8 available" in reason
    assert run.summary.gpu_hours == pytest.approx(4 * 65 / 60 + 4 * 55 / 60)
    left = {a.raycluster: a.reason for a in run.summary.left_alone}
    assert (
        left["final-training-run"] == "kind RayJob not enabled (cluster.ownerKinds.RayJob.enabled)"
    )
    assert "alice-workspace" in left


def test_noisy_stops_the_truly_idle_notebook_and_none_of_the_noisy_ones(
    runs: dict[str, tuple[DemoRun, str]],
) -> None:
    run, _ = runs["noisy"]

    stopped = deactivated(run.live)
    assert stopped["idle-notebook"] == at("noisy", 5 + 60)  # its 24 GiB held flat: no evidence
    left = {a.raycluster: a for a in run.summary.left_alone}
    assert {"bursty-eval", "slow-loader", "gappy-trainer", "half-used"} <= set(left)
    window = timedelta(hours=1)
    assert timedelta(0) < left["bursty-eval"].longest_idle < window
    assert timedelta(minutes=45) < left["slow-loader"].longest_idle < window
    assert left["gappy-trainer"].unknown_for >= timedelta(minutes=10)
    assert "no usable samples" in left["gappy-trainer"].unknown_reason


def test_noisy_leaves_the_weight_loader_loading_and_the_half_used_cluster_idle_held(
    runs: dict[str, tuple[DemoRun, str]],
) -> None:
    run, printed = runs["noisy"]

    assert deactivated(run.live) == {
        "idle-notebook": at("noisy", 5 + 60),
        "vit-trainer": at("noisy", 1 + 30),  # its image cannot be pulled: quota held without work
    }
    left = {a.raycluster: a for a in run.summary.left_alone}
    # Compute idle from minute 0; from 45 to 65 the framebuffer climbs 3 GiB/min: loading
    # covers the minutes past the window (60 to 65) and it trains from 65.
    assert left["weight-loader"].loading_for >= timedelta(minutes=5)
    assert left["half-used"].state.value == "idle-held"
    assert left["half-used"].idle_held_gpus == 2
    assert "2 GPUs idle-held" in printed


def test_noisy_stops_the_cluster_whose_image_cannot_be_pulled_and_admits_the_one_behind_it(
    runs: dict[str, tuple[DemoRun, str]],
) -> None:
    run, printed = runs["noisy"]
    # Admitted at minute 1; the product's 15-minute grace, 30-minute notRunningAfter and
    # 15-minute warnBefore: warned when its grace ends, stopped at the limit.
    warned, limit = at("noisy", 1 + 15), at("noisy", 1 + 30)

    assert run.live.watched["vit-trainer"].warnings == (warned,)
    assert deactivated(run.live)["vit-trainer"] == limit
    assert run.live.admitted_at["vit-eval"] == limit
    assert "needs 2, 0 available" in run.replay.waiting["vit-eval"]
    cannot = f"image {MISSING_IMAGE} cannot be pulled (ImagePullBackOff)"
    # The warning names what is wrong, not idle GPUs: held since admission at minute 1.
    warned_line = "[09:16 +16m] warned vit-trainer: GPUs held, not running: stop planned at 09:31"
    assert f"{warned_line}, in 15 min — {cannot} for 15 min (an Event" in printed
    stopped = next(line for line in printed.splitlines() if "deactivated vit-trainer" in line)
    assert stopped.startswith("[09:31 +31m] deactivated vit-trainer: not running for 30m, past 30m")
    assert cannot in stopped
    reclaimed = {r.raycluster: r for r in run.summary.reclaimed}
    assert (reclaimed["vit-trainer"].not_running, reclaimed["idle-notebook"].not_running) == (
        True,
        False,
    )
    assert run.summary.not_running_gpu_hours == pytest.approx(2 * 89 / 60)  # 09:31 to 11:00
    assert run.summary.gpu_hours == pytest.approx(2 * 89 / 60 + 2 * 55 / 60)
    assert "GPU-hours reclaimed: 4.80 (2.97 of them quota held without work)" in printed


def test_noisy_reports_the_cluster_running_but_not_monitored_and_leaves_it_alone(
    runs: dict[str, tuple[DemoRun, str]],
) -> None:
    run, printed = runs["noisy"]

    left = {a.raycluster: a for a in run.summary.left_alone}
    notebook = left["vit-notebook"]
    assert notebook.state.value == "unknown"
    assert notebook.reason.startswith("running but not monitored: pod vit-notebook-")
    assert notebook.decision.assessment is not None and notebook.decision.assessment.unmonitored
    assert not run.live.watched["vit-notebook"].not_running  # its pods run: never held
    assert "vit-notebook, now unknown: running but not monitored" in printed


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_story_ends_by_itself_within_three_minutes_at_the_default_speed(name: str) -> None:
    scenario = SCENARIOS[name]
    wall_seconds = scenario.end_minute * 60 / DEFAULT_SPEED

    assert wall_seconds < 180


def test_the_command_exits_zero_and_prints_plain_lines_with_the_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = argparse.ArgumentParser()
    add_demo_arguments(parser)
    args = parser.parse_args(["--speed", "max", "--non-interactive"])

    assert run_demo(args, build_service=build_demo_service) == 0

    printed = capsys.readouterr().out
    assert printed.startswith("idle-gpu-autoscaler demo: two-clusters")
    assert "[10:10 +10m] RAYCLUSTER" in printed
    assert "\x1b[" not in printed


def test_a_terminal_keeps_the_header_and_gets_the_table_redrawn_under_it() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Terminal()
    options = DemoOptions(scenario="two-clusters", speed=None, interactive=True)

    play_demo(options, build_service=build_demo_service, out=out)

    screen = out.getvalue()
    redraws = re.findall(r"\x1b\[(\d+);1H\x1b\[J", screen)  # to a row, then clear to the end
    header = screen[: screen.index("\x1b[5;1H")]
    assert screen.count("\x1b[2J") == 1  # the whole screen is cleared once, for the header
    assert header.startswith("\x1b[2J\x1b[Hidle-gpu-autoscaler demo: two-clusters")
    assert len(header.splitlines()) == 4  # story, policy, mode and a blank line
    assert len(redraws) > 90 and set(redraws) == {"5"}  # one per minute, under the header
    assert "first-raycluster   demo       user-queue -> cluster-queue  0/2" in screen[-2000:]


def test_the_extra_servers_are_announced_after_the_summary_and_stopped_at_the_end() -> None:
    lifecycle: list[str] = []

    @contextmanager
    def servers(world: World) -> Iterator[Endpoints]:
        lifecycle.append(f"started on {world.scenario.name}")
        yield Endpoints("http://127.0.0.1:18080", "127.0.0.1:19090", token="t")
        lifecycle.append("stopped")

    out = io.StringIO()
    options = DemoOptions(scenario="two-clusters", speed=None, duration=0.01, interactive=False)
    play_demo(options, build_service=build_demo_service, extra_servers=servers, out=out)

    lines = out.getvalue().splitlines()
    summary, serving = (
        lines.index("Summary of two-clusters (10:00–11:50, simulated)"),
        next(i for i, line in enumerate(lines) if line.startswith("serving for")),
    )
    assert not any(line.startswith(("REST", "gRPC", "token")) for line in lines[:summary])
    after = lines[summary:serving]
    assert "REST: http://127.0.0.1:18080" in after and "gRPC: 127.0.0.1:19090" in after
    assert "token: t" in after
    assert lifecycle == ["started on two-clusters", "stopped"]


def test_a_story_that_does_not_serve_on_says_how_to_try_the_api_instead_of_dead_addresses() -> None:
    @contextmanager
    def servers(world: World) -> Iterator[Endpoints]:
        yield Endpoints("http://127.0.0.1:18080", "127.0.0.1:19090", token="t")

    out = io.StringIO()
    options = DemoOptions(scenario="two-clusters", speed=None, interactive=False)
    play_demo(options, build_service=build_demo_service, extra_servers=servers, out=out)

    printed = out.getvalue()
    assert not re.search(r"^(REST|gRPC|token|try)", printed, re.MULTILINE)  # a paste would fail
    assert printed.splitlines()[-2].startswith("The REST API and KEDA scaler stopped")
    assert re.fullmatch(r"  \S+ demo --serve", printed.splitlines()[-1])


def test_after_the_story_the_service_keeps_cycling_for_the_requested_wall_time() -> None:
    world = World.build(
        SCENARIOS["two-clusters"],
        dry_run=False,
        speed=None,
        build_service=build_demo_service,
        logger=logging.getLogger("test-demo"),
    )
    wall = [0.0]

    def sleep(seconds: float) -> None:
        wall[0] += seconds

    keep_serving(world, wall_seconds=5, monotonic=lambda: wall[0], sleep=sleep)

    assert world.clock.now() == SCENARIOS["two-clusters"].start + timedelta(minutes=5)
    snapshot = world.service.store.latest()
    assert snapshot is not None and snapshot.cycle == 5


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param([], DemoOptions(), id="defaults"),
        pytest.param(
            ["--scenario", "noisy", "--speed", "max", "--duration", "30", "--non-interactive"],
            DemoOptions(scenario="noisy", speed=None, duration=30, interactive=False),
            id="everything-set",
        ),
        pytest.param(["--serve"], DemoOptions(duration=math.inf), id="serve-until-ctrl-c"),
    ],
)
def test_the_arguments_become_demo_options(argv: list[str], expected: DemoOptions) -> None:
    parser = argparse.ArgumentParser()
    add_demo_arguments(parser)

    assert options_from(parser.parse_args(argv)) == expected


def test_serve_and_duration_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    add_demo_arguments(parser)

    with pytest.raises(SystemExit):
        parser.parse_args(["--serve", "--duration", "30"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_bad_speed_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    add_demo_arguments(parser)

    with pytest.raises(SystemExit):
        parser.parse_args(["--speed", "0"])
    assert "positive number or 'max'" in capsys.readouterr().err


def test_ctrl_c_ends_the_demo_with_130_after_stopping_the_extra_servers() -> None:
    stopped: list[bool] = []

    @contextmanager
    def servers(world: World) -> Iterator[None]:
        try:
            yield None
        finally:
            stopped.append(True)

    class Interrupting(io.StringIO):
        def write(self, text: str) -> int:
            if "Summary of" in text:
                raise KeyboardInterrupt
            return super().write(text)

    parser = argparse.ArgumentParser()
    add_demo_arguments(parser)
    args = parser.parse_args(["--speed", "max", "--non-interactive"])

    code = run_demo(
        args, build_service=build_demo_service, extra_servers=servers, out=Interrupting()
    )

    assert (code, stopped) == (130, [True])


def test_the_composition_root_may_configure_ports_and_keda_but_never_the_policy() -> None:
    seen: list[tuple[bool, bool]] = []

    def configure(settings: Settings) -> Settings:
        policy = settings.policy.model_copy(update={"dry_run": True})  # ignored for the live run
        keda = settings.keda.model_copy(update={"enabled": True, "port": 19090})
        return settings.model_copy(update={"keda": keda, "policy": policy})

    def recording(settings: Settings, **parts: Any) -> Any:
        seen.append((settings.keda.enabled, settings.policy.dry_run))
        return build_demo_service(settings, **parts)

    run = play_demo(
        DemoOptions(scenario="two-clusters", speed=None, interactive=False),
        build_service=recording,
        configure=configure,
        out=io.StringIO(),
    )

    assert seen == [(True, False), (True, True)]  # the live run acts, the replay does not
    assert [entry.raycluster for entry in run.live.audits] == ["first-raycluster"]


def test_in_the_noisy_story_the_exporter_shows_the_loader_loading_and_half_used_half_idle() -> None:
    world = World.build(
        SCENARIOS["noisy"],
        dry_run=True,
        speed=None,
        build_service=build_demo_service,
        logger=logging.getLogger("test-demo"),
    )
    play(world)
    minute_60 = at("noisy", 60)

    usage = read_one_view(world.exporter, window=timedelta(hours=1), threshold=0.05, now=minute_60)

    def pods_of(raycluster: str) -> list[tuple[str, str]]:
        return sorted(pod for pod in usage.gpus if pod[1].startswith(f"{raycluster}-"))

    (loader,) = pods_of("weight-loader")
    assert all(gpu.peak is not None and gpu.peak <= 0.05 for gpu in usage.for_pod(*loader))
    for gpu in usage.for_pod(*loader):
        signals = {s.signal.value: s for s in usage.evidence.for_gpu(gpu.key)}
        assert set(signals) == {"framebuffer", "pcie"}
        assert signals["framebuffer"].first_at == at("noisy", 46)
        assert signals["framebuffer"].last_at == minute_60
    (half,) = pods_of("half-used")
    assert sorted(gpu.peak or 0.0 for gpu in usage.for_pod(*half)) == [0.0, 0.0, 0.85, 0.85]
    (notebook,) = pods_of("idle-notebook")
    notebook_seen = [s for gpu in usage.for_pod(*notebook) for s in usage.evidence.for_gpu(gpu.key)]
    assert notebook_seen  # its power while it computed, until minute 5; its memory stays flat
    assert {s.signal.value for s in notebook_seen} == {"power", "pcie"}
    assert max(s.last_at for s in notebook_seen) == at("noisy", 5)


ANNOTATION_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")


def test_the_storys_own_lines_write_times_as_its_clock_only_a_cli_answer_keeps_rfc_3339(
    runs: dict[str, tuple[DemoRun, str]],
) -> None:
    """The view's and the summary's reasons say "stop planned at 11:35", as the stamps do; the
    CLI's own answer, indented under the command a person ran, stays as the CLI prints it."""
    for name, (_, printed) in runs.items():
        for line in printed.splitlines():
            if ANNOTATION_TIME.search(line):
                assert re.match(r"^\[\d\d:\d\d \+\d+m\]   \S", line), f"{name}: {line}"
