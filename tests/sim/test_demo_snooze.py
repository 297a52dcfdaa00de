"""The two-clusters story with the warning stage on (the product's 15-minute `warnBefore`):
first-raycluster is warned, its user snoozes it by running the real CLI against the demo's own
REST API, it is warned again before the snooze runs out and stopped when it does; the second
cluster is admitted then. Without an API the step says so and the warned stop comes on time."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest

from autoscaler.compose.demo import DEMO_USER, build_demo_service, demo_parts
from autoscaler.compose.service import Service
from autoscaler.demo.endpoints import Endpoints
from autoscaler.demo.people import People, Ran
from autoscaler.demo.scenarios import SCENARIOS
from autoscaler.demo.story import Cycle, Outcome, World, play
from autoscaler.domain.models import Action, State, WorkloadRef
from autoscaler.domain.notices.notice import Notice
from autoscaler.sim.kueue_model import EventKind

SCENARIO = SCENARIOS["two-clusters"]
FIRST, SECOND = "first-raycluster", "second-raycluster"
REASON = "checking the results after lunch"


def at(minute: int) -> datetime:
    return SCENARIO.start + timedelta(minutes=minute)


@dataclass(frozen=True)
class Story:
    world: World
    outcome: Outcome
    cycles: tuple[Cycle, ...]

    def name(self, ref: WorkloadRef) -> str:
        return self.world.cluster.spec(ref).name

    def milestones(self) -> list[tuple[int, str]]:
        """Warnings with their planned stop, the CLI's answers, stops and the second cluster's
        admission, minute by minute, in the order they happened."""
        found: list[tuple[int, str]] = []
        for cycle in self.cycles:
            for record in cycle.snapshot.actions:
                row = cycle.snapshot.find(record.workload)
                assert row is not None
                stop = row.decision.notice.stop_at
                said = f" (stop at {stop:%H:%M})" if record.action is Action.WARN and stop else ""
                found.append((cycle.minute, f"{record.action} {self.name(record.workload)}{said}"))
            found += [(cycle.minute, f"CLI:{line}") for line in cycle.told if "kept until" in line]
            for event in cycle.events:
                if event.kind is EventKind.ADMITTED and self.name(event.workload) == SECOND:
                    found.append((cycle.minute, f"admitted {SECOND}"))
        return found

    def first(self, cycle: Cycle) -> tuple[State, Action, Notice]:
        (row,) = [r for r in cycle.snapshot.workloads if self.name(r.ref) == FIRST]
        return row.decision.state, row.decision.action, row.decision.notice


def played(world: World, people: People | None = None) -> Story:
    cycles: list[Cycle] = []
    outcome = play(world, on_cycle=lambda _, cycle: cycles.append(cycle), people=people)
    return Story(world, outcome, tuple(cycles))


@pytest.fixture(scope="module")
def served() -> Story:
    """The story as `demo` plays it: its REST API up, the CLI run as a child process."""
    parts = demo_parts()
    world = World.build(
        SCENARIO,
        dry_run=False,
        speed=None,
        build_service=parts.build_service,
        configure=parts.configure,
        logger=logging.getLogger("test-demo-snooze"),
    )
    with parts.extra_servers(world) as endpoints:
        return played(world, People(SCENARIO.people, endpoints=endpoints))


def unserved_world() -> World:
    return World.build(
        SCENARIO,
        dry_run=False,
        speed=None,
        build_service=build_demo_service,
        logger=logging.getLogger("test-demo-snooze"),
    )


def test_the_warned_cluster_is_snoozed_from_the_cli_and_stopped_only_when_the_snooze_ends(
    served: Story,
) -> None:
    kept = f"CLI:  demo/{SCENARIO.arrivals[0].spec.workload_name} kept until 2026-03-02T11:35:00Z"

    assert served.milestones() == [
        (65, f"warn {FIRST} (stop at 11:20)"),  # 15 minutes before its window completes
        (65, kept),  # 30 minutes from now: 11:35
        (80, f"warn {FIRST} (stop at 11:35)"),  # 15 minutes before the snooze runs out
        (95, f"deactivate {FIRST}"),
        (95, f"admitted {SECOND}"),
    ]
    assert served.outcome.admitted_at[SECOND] == at(95)


def test_the_snooze_is_audited_with_the_demos_user_as_actor_and_the_reason(
    served: Story,
) -> None:
    service = served.world.service
    assert isinstance(service, Service) and service.shared is not None

    snoozes = [r for r in service.shared.store.read().audit if r.action == "snooze"]

    (record,) = snoozes
    assert (record.actor, record.at, record.namespace) == (DEMO_USER, at(65), "demo")
    assert record.reason == f"until 2026-03-02T11:35:00Z: {REASON}"


def test_while_snoozed_the_cluster_reads_snoozed_by_the_demo_user_and_is_not_stopped(
    served: Story,
) -> None:
    snoozed = [served.first(c) for c in served.cycles if 66 <= c.minute < 95]

    assert len(snoozed) == 29
    for state, action, notice in snoozed:
        assert state is State.SNOOZED and action is not Action.DEACTIVATE
        assert (notice.snoozed_until, notice.snoozed_by) == (at(95), DEMO_USER)


def test_the_view_is_told_the_command_line_and_the_clis_answer(served: Story) -> None:
    (warned,) = [c for c in served.cycles if c.minute == 65]

    said, command, answer = warned.told
    assert said.startswith(f"a person reads the warning and keeps {FIRST} from the CLI")
    assert command == f"$ python -m autoscaler snooze demo/{FIRST} 30m --reason '{REASON}'"
    assert answer.endswith("kept until 2026-03-02T11:35:00Z")


def test_without_an_api_the_step_says_so_and_the_warned_stop_comes_on_time() -> None:
    story = played(unserved_world())

    (warned,) = [c for c in story.cycles if c.minute == 65]
    (told,) = warned.told
    assert told.startswith(f"{FIRST} is warned; no REST API in this run, nobody runs: $ ")
    assert [e.audit.at for e in story.outcome.audits] == [at(80)]


def test_a_failing_cli_is_told_once_and_the_warned_stop_stands() -> None:
    ran: list[tuple[Sequence[str], Mapping[str, str]]] = []

    def refusing(argv: Sequence[str], environ: Mapping[str, str]) -> Ran:
        ran.append((argv, environ))
        return Ran(code=1, out="", err="error: 409 Conflict: cannot be snoozed\n")

    endpoints = Endpoints("http://127.0.0.1:18080", "127.0.0.1:19090", token="t0k")
    people = People(SCENARIO.people, endpoints=endpoints, python="py", run=refusing)
    story = played(unserved_world(), people)

    ((argv, environ),) = ran
    assert list(argv) == [
        "py",
        "-m",
        "autoscaler",
        "snooze",
        f"demo/{FIRST}",
        "30m",
        "--reason",
        REASON,
    ]
    assert (environ["IGA_URL"], environ["IGA_TOKEN"]) == (endpoints.rest_url, "t0k")
    (warned,) = [c for c in story.cycles if c.minute == 65]
    assert warned.told[-1] == (
        "  the CLI failed (exit 1): error: 409 Conflict: cannot be snoozed; the warned stop stands"
    )
    assert [e.audit.at for e in story.outcome.audits] == [at(80)]
