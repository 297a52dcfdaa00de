"""The guards' memory and audit records in the runtime-state ConfigMap, on the test API
server: the format, backward compatibility, fail-safe reading, one write per change."""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import timedelta

import pytest
from kubernetes.client import ApiClient

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.state.guards import RuntimeGuardStore, outcome_of
from autoscaler.adapters.state.store import RuntimeStateStore
from autoscaler.domain.audit.records import AuditRecord
from autoscaler.domain.guards.breaker import CLOSED, BreakerState
from autoscaler.domain.guards.screen import Contest, Deed, GuardMemory, LoopRecord
from autoscaler.domain.models import WorkloadRef
from autoscaler.domain.outcomes import Outcome
from tests.support.domain_builders import NOW
from tests.support.fakes import FakeClock
from tests.support.kube_server import KubeServer

NAME = "idle-gpu-autoscaler-state"
RC = WorkloadRef("team-a", "rc")
_numbers = itertools.count()


@dataclass
class Rig:
    kube: KubeServer
    namespace: str
    state: RuntimeStateStore
    guards: RuntimeGuardStore

    def data(self) -> dict[str, str]:
        found = self.kube.store.get("configmaps", name=NAME, namespace=self.namespace)
        return dict(found["data"])

    def seed(self, data: dict[str, str]) -> None:
        self.kube.store.put(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": NAME, "namespace": self.namespace},
                "data": data,
            }
        )

    def writes(self) -> int:
        path = f"/api/v1/namespaces/{self.namespace}/configmaps"
        return len([r for r in self.kube.requests.writes() if r.path.startswith(path)])


@pytest.fixture
def rig(kube_server: KubeServer) -> Iterator[Rig]:
    namespace = f"guard-store-{next(_numbers)}"
    with ApiClient(kube_server.configuration()) as api_client:
        client = KubeClient(api_client, timeout=timedelta(seconds=5))
        state = RuntimeStateStore(
            client=client,
            name=NAME,
            namespace=namespace,
            audit_limit=50,
            attempts=3,
            logger=logging.getLogger("test"),
        )
        guards = RuntimeGuardStore(store=state, audit_limit=50, clock=FakeClock(NOW))
        yield Rig(kube_server, namespace, state, guards)


def started(minutes: int) -> LoopRecord:
    return LoopRecord(
        NOW - timedelta(minutes=minutes),
        Deed.DEACTIVATE,
        RC,
        reason="idle for the whole window",
        gpus=2,
        peak=0.01,
        coverage=1.0,
        threshold=0.05,
    )


def test_a_config_map_from_before_the_guards_reads_as_a_closed_breaker_and_no_marks(
    rig: Rig,
) -> None:
    rig.seed({"pauses": json.dumps({"everything": False, "namespaces": ["team-b"]})})
    assert rig.guards.load() == GuardMemory()
    rig.guards.change(lambda memory: memory)
    assert json.loads(rig.data()["pauses"])["namespaces"] == ["team-b"], "old keys are kept"


def test_the_breaker_and_the_marks_round_trip_in_their_own_keys(rig: Rig) -> None:
    opened = BreakerState(open=True, since=NOW, reason="5 of 10 turned", normal_cycles=1)
    marks = {RC: Contest(since=NOW, reason="undone 3 times")}
    rig.guards.change(lambda _: GuardMemory(breaker=opened, contested=marks))
    assert rig.guards.load() == GuardMemory(breaker=opened, contested=marks)
    assert json.loads(rig.data()["breaker"]) == {
        "open": True,
        "since": "2025-03-03T12:00:00Z",
        "reason": "5 of 10 turned",
        "normalCycles": 1,
    }
    assert json.loads(rig.data()["contested"]) == {
        "team-a/rc": {"since": "2025-03-03T12:00:00Z", "reason": "undone 3 times"}
    }


def test_the_breakers_summary_round_trips_and_reads_empty_when_written_before_it(
    rig: Rig,
) -> None:
    opened = BreakerState(open=True, since=NOW, reason="5 of 10 turned: ns/a", summary="5 of 10")
    rig.guards.change(lambda _: GuardMemory(breaker=opened))
    assert rig.guards.load().breaker == opened
    assert json.loads(rig.data()["breaker"])["summary"] == "5 of 10"
    rig.seed({"breaker": json.dumps({"open": True, "reason": "5 of 10 turned: ns/a"})})
    assert rig.guards.load().breaker.summary == ""


@pytest.mark.parametrize(
    "garbled",
    [
        '{"open": "no"}',
        "not json",
        '{"normalCycles": 2}',
        '{"open": ' + "[" * 10**5 + "]" * 10**5 + "}",
    ],
    ids=["open-not-a-boolean", "not-json", "open-missing", "nested-past-recursion"],
)
def test_a_garbled_breaker_reads_as_open_so_a_bad_edit_cannot_disarm_it(
    rig: Rig, garbled: str
) -> None:
    rig.seed({"breaker": garbled})
    breaker = rig.guards.load().breaker
    assert breaker.open
    assert "unreadable" in breaker.reason


def test_the_loops_records_join_the_audit_list_and_read_back_as_the_guards_count_them(
    rig: Rig,
) -> None:
    rig.guards.record(started(5))
    [written] = rig.state.read().audit
    assert (written.actor, written.action, written.target, written.outcome) == (
        "idle-gpu-autoscaler",
        "deactivate",
        "team-a/rc",
        "started",
    )
    assert rig.guards.recent(NOW - timedelta(hours=1)) == [started(5)]
    assert rig.guards.recent(NOW - timedelta(minutes=1)) == []


def test_an_admins_deactivate_now_and_other_changes_are_not_counted(rig: Rig) -> None:
    def by(actor: str, action: str, target: str) -> AuditRecord:
        return AuditRecord(at=NOW, actor=actor, action=action, target=target, reason="r")

    rig.state.record(
        by("alice", "deactivate", "team-a/rc"),
        by("alice", "pause", "service"),
        by("idle-gpu-autoscaler", "undone", "not-a-workload"),
        by("admin", "uncontest", "team-a/rc"),
    )
    found = rig.guards.recent(NOW - timedelta(hours=1))
    assert [(r.deed, r.workload) for r in found] == [(Deed.UNCONTESTED, RC)]


def test_a_change_and_its_records_are_one_write(rig: Rig) -> None:
    rig.guards.change(lambda memory: memory)  # create the ConfigMap first
    before = rig.writes()
    marks = {RC: Contest(since=NOW, reason="x")}
    undone = replace(started(1), deed=Deed.UNDONE)
    rig.guards.change(lambda memory: replace(memory, contested=marks), records=[undone])
    assert rig.writes() == before + 1
    assert rig.guards.load().contested == marks
    assert rig.guards.recent(NOW - timedelta(hours=1)) == [undone]


def test_an_announcement_is_an_event_on_the_config_map(rig: Rig) -> None:
    rig.guards.announce(reason="MassIdleBreakerOpened", message="stopped")
    [event] = rig.kube.store.list("events", namespace=rig.namespace)
    assert event["involvedObject"]["kind"] == "ConfigMap"
    assert event["involvedObject"]["name"] == NAME
    assert (event["reason"], event["message"]) == ("MassIdleBreakerOpened", "stopped")


def test_a_reset_closes_the_breaker_and_keeps_the_rest(rig: Rig) -> None:
    opened = BreakerState(open=True, since=NOW, reason="r")
    marks = {RC: Contest(since=NOW, reason="x")}
    rig.guards.change(lambda _: GuardMemory(breaker=opened, contested=marks))
    rig.state.change(lambda state: state.breaker_reset())
    assert rig.guards.load() == GuardMemory(breaker=CLOSED, contested=marks)
    rig.state.change(lambda state: state.uncontested(RC))
    assert rig.guards.load() == GuardMemory()


@pytest.mark.parametrize(
    ("outcome", "words"),
    [
        pytest.param(None, "started", id="begun"),
        pytest.param(Outcome.failed("503"), "failed: 503", id="failed"),
        pytest.param(
            Outcome.skipped("retried next cycle: 409"),
            "skipped: retried next cycle: 409",
            id="skipped",
        ),
        pytest.param(Outcome.unknown("answer lost"), "unknown: answer lost", id="lost-answer"),
        pytest.param(
            Outcome.done("confirmed: annotated"), "done: confirmed: annotated", id="confirmed"
        ),
    ],
)
def test_a_deactivations_outcome_is_kept_in_words_and_read_back_typed(
    rig: Rig, outcome: Outcome | None, words: str
) -> None:
    record = replace(started(5), outcome=outcome)
    rig.guards.record(record)
    [written] = rig.state.read().audit
    assert written.outcome == words
    assert rig.guards.recent(NOW - timedelta(hours=1)) == [record]


@pytest.mark.parametrize(
    ("words", "outcome"),
    [
        pytest.param("done", None, id="written-after-the-patch-before-the-guards-existed"),
        pytest.param(
            "skipped, retried next cycle: 409 conflict",
            Outcome.skipped("retried next cycle: 409 conflict"),
            id="skipped-before-typed-outcomes",
        ),
        pytest.param("gave up", Outcome.failed("gave up"), id="any-other-word-was-not-done"),
    ],
)
def test_older_records_still_read(words: str, outcome: Outcome | None) -> None:
    assert outcome_of(Deed.DEACTIVATE, words) == outcome
