"""The runtime-state ConfigMap: its format, its bounds, and read-modify-write under races."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import timedelta

import pytest
from kubernetes.client import ApiClient

from autoscaler.adapters.kubernetes import objects as kube_objects
from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.state.store import RuntimeStateStore
from autoscaler.core.errors import ClusterUnavailable, Conflict
from autoscaler.domain.audit.records import (
    EVERYTHING,
    LOOP_ACTOR,
    AuditRecord,
    PauseNote,
    RecordKey,
)
from autoscaler.domain.models import Pauses
from tests.support.domain_builders import NOW
from tests.support.kube_server import KubeServer

NAME, NAMESPACE = "state", "svc"
PUTS = f"/api/v1/namespaces/{NAMESPACE}/configmaps/{NAME}"


@pytest.fixture
def kube() -> Iterator[KubeServer]:
    with KubeServer() as server:
        yield server
    assert server.errors == []


@pytest.fixture
def store(kube: KubeServer) -> Iterator[RuntimeStateStore]:
    with ApiClient(kube.configuration()) as api_client:
        client = KubeClient(api_client, timeout=timedelta(seconds=5))
        yield RuntimeStateStore(
            client=client,
            name=NAME,
            namespace=NAMESPACE,
            audit_limit=3,
            attempts=3,
            logger=logging.getLogger("test"),
        )


def record(number: int) -> AuditRecord:
    return AuditRecord(
        at=NOW + timedelta(minutes=number),
        actor="alice",
        action="pause",
        target="service",
        reason=f"r{number}",
    )


def data(kube: KubeServer) -> dict[str, str]:
    return dict(kube.store.get("configmaps", name=NAME, namespace=NAMESPACE)["data"])


def test_a_missing_config_map_reads_as_nothing_paused_and_is_created_on_first_change(
    kube: KubeServer, store: RuntimeStateStore
) -> None:
    assert store.read().pauses == Pauses()
    note = PauseNote(by="alice", reason="why", at=NOW)
    store.change(lambda state: state.paused("team-a", note))
    assert kube_objects.pauses_from_data(data(kube)) == Pauses(namespaces=frozenset({"team-a"}))
    assert store.read().notes == {"team-a": note}


def test_the_pauses_key_is_the_format_the_loops_adapter_reads(
    kube: KubeServer, store: RuntimeStateStore
) -> None:
    note = PauseNote(by="admin", reason="incident", at=NOW)
    store.change(lambda state: state.paused(EVERYTHING, note).paused("team-b", note))
    assert json.loads(data(kube)["pauses"]) == {"everything": True, "namespaces": ["team-b"]}


def test_other_keys_in_the_config_map_are_kept(kube: KubeServer, store: RuntimeStateStore) -> None:
    kube.store.put(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": NAME, "namespace": NAMESPACE},
            "data": {"leader-notes": "keep me"},
        }
    )
    store.record(record(1))
    assert data(kube)["leader-notes"] == "keep me"


def test_audit_records_are_kept_newest_first_and_bounded(store: RuntimeStateStore) -> None:
    store.record(record(1), record(3))
    store.record(record(2))
    store.record(record(4))
    assert [r.reason for r in store.read().audit] == ["r4", "r2", "r3"]


def test_a_conflicting_write_is_retried_on_fresh_state(
    kube: KubeServer, store: RuntimeStateStore
) -> None:
    store.record(record(1))
    kube.faults.fail_next("PUT", PUTS, status=409, times=2)
    store.record(record(2))
    assert [r.reason for r in store.read().audit] == ["r2", "r1"]


def test_a_write_that_keeps_conflicting_gives_up_with_conflict(
    kube: KubeServer, store: RuntimeStateStore
) -> None:
    store.record(record(1))
    kube.faults.fail_next("PUT", PUTS, status=409, times=3)
    with pytest.raises(Conflict):
        store.record(record(2))


def test_two_replicas_creating_the_config_map_at_once_both_land(
    kube: KubeServer, store: RuntimeStateStore
) -> None:
    kube.faults.fail_next("POST", f"/api/v1/namespaces/{NAMESPACE}/configmaps", status=409)
    store.record(record(1))
    assert [r.reason for r in store.read().audit] == ["r1"]


def test_an_unreachable_api_is_reported_not_swallowed(
    kube: KubeServer, store: RuntimeStateStore
) -> None:
    kube.faults.fail_next("GET", PUTS, status=503, times=5)
    with pytest.raises(ClusterUnavailable):
        store.read()


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("garbled", "expected_pauses", "expected_audit"),
    [
        pytest.param({"pauses": "{not json"}, Pauses(everything=True), 1, id="garbled-pauses"),
        pytest.param({"audit": "[1, 2"}, Pauses(), 0, id="garbled-audit"),
        pytest.param(
            {"audit": json.dumps([{"at": "yesterday"}, {"x": 1}])},
            Pauses(),
            0,
            id="garbled-records",
        ),
        pytest.param({"pause-details": "[]"}, Pauses(), 1, id="garbled-details"),
        # nested past the decoder's recursion: refused as garbled, never a RecursionError
        pytest.param({"pauses": DEEP}, Pauses(everything=True), 1, id="deep-pauses"),
        pytest.param({"audit": DEEP}, Pauses(), 0, id="deep-audit"),
        pytest.param({"pause-details": '{"x": ' + DEEP + "}"}, Pauses(), 1, id="deep-details"),
    ],
)
def test_a_hand_garbled_config_map_is_read_safely(
    kube: KubeServer,
    store: RuntimeStateStore,
    garbled: dict[str, str],
    expected_pauses: Pauses,
    expected_audit: int,
) -> None:
    good = {
        "audit": json.dumps(
            [
                {
                    "at": "2025-03-03T12:00:00Z",
                    "actor": "a",
                    "action": "pause",
                    "target": "service",
                    "reason": "x",
                }
            ]
        )
    }
    kube.store.put(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": NAME, "namespace": NAMESPACE},
            "data": {**good, **garbled},
        }
    )
    state = store.read()
    assert state.pauses == expected_pauses
    assert len(state.audit) == expected_audit


def keyed(minute: int) -> AuditRecord:
    return AuditRecord(
        at=NOW + timedelta(minutes=minute),
        actor=LOOP_ACTOR,
        action="would-deactivate",
        target="team-a/rc",
        reason="idle",
        key=RecordKey("4f1c-uid", episode=NOW - timedelta(hours=1)),
    )


def test_a_keyed_record_already_kept_is_neither_added_nor_written_again(
    kube: KubeServer, store: RuntimeStateStore
) -> None:
    store.record(keyed(1))
    kube.requests.clear()

    store.record(keyed(2))  # another replica, or this one after a restart

    [kept] = store.read().audit
    assert kept == keyed(1)  # the key read back as written
    assert kube.requests.writes() == []


def test_records_written_before_keys_existed_still_read_and_are_never_taken_for_repeats(
    kube: KubeServer, store: RuntimeStateStore
) -> None:
    old = {
        "at": "2026-03-01T11:00:00Z",
        "actor": LOOP_ACTOR,
        "action": "would-deactivate",
        "target": "team-a/rc",
        "reason": "idle",
        "outcome": "dry-run: not patched",
    }
    store.record(record(0))
    config_map = kube.store.get("configmaps", name=NAME, namespace=NAMESPACE)
    config_map["data"]["audit"] = json.dumps([old])
    kube.store.put(config_map)

    store.record(keyed(1))

    assert [r.key for r in store.read().audit] == [keyed(1).key, None]
