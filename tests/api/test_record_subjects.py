"""An audit record's subject (rule, waiter, queues, owner, idle start) in the runtime-state
ConfigMap: written flat beside the record, read back as written, absent from older records."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import timedelta

import pytest
from kubernetes.client import ApiClient

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.state.store import RuntimeStateStore
from autoscaler.domain.audit.records import LOOP_ACTOR, AuditRecord
from autoscaler.domain.audit.subjects import AFTER_KUEUE_PREEMPTION, Subject
from tests.support.domain_builders import NOW
from tests.support.kube_server import KubeServer

NAME, NAMESPACE = "state", "svc"
FULL = Subject(
    rule="gpu-night",
    beneficiary="team-b/waiter",
    queue="gpu-queue",
    cluster_queue="cq-a",
    cohort="lab",
    owner="RayCluster/rc",
    idle_since=NOW - timedelta(hours=2),
)


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
            audit_limit=5,
            attempts=3,
            logger=logging.getLogger("test"),
        )


def deactivation(subject: Subject | None) -> AuditRecord:
    return AuditRecord(
        at=NOW,
        actor=LOOP_ACTOR,
        action="deactivate",
        target="team-a/rc",
        reason="idle",
        outcome="started",
        gpus=4,
        subject=subject,
    )


def stored(kube: KubeServer) -> list[dict[str, object]]:
    config_map = kube.store.get("configmaps", name=NAME, namespace=NAMESPACE)
    return list(json.loads(config_map["data"]["audit"]))


@pytest.mark.parametrize(
    "subject",
    [
        pytest.param(FULL, id="every-field"),
        pytest.param(Subject(rule="default", owner="Job/train"), id="a-stop-with-no-waiter"),
        pytest.param(
            Subject(rule="default", evidence="ray: driver attached (shown, not use)"),
            id="a-stop-with-the-evidence-seen",
        ),
        pytest.param(
            Subject(rule="default", stopped_after=AFTER_KUEUE_PREEMPTION),
            id="the-stop-after-kueues-preemption-of-our-mark",
        ),
        pytest.param(
            Subject(beneficiary="team-b/w", beneficiary_queue="cq-b", beneficiary_gpus=2),
            id="a-waiters-note-with-the-gpus-it-took",
        ),
        pytest.param(None, id="none-a-persons-record"),
    ],
)
def test_a_subject_reads_back_as_written(store: RuntimeStateStore, subject: Subject) -> None:
    store.record(deactivation(subject))

    [kept] = store.read().audit

    assert kept == deactivation(subject)


def test_the_subject_is_spelled_flat_in_camel_case(
    kube: KubeServer, store: RuntimeStateStore
) -> None:
    store.record(deactivation(FULL))

    [raw] = stored(kube)

    assert {
        key: raw[key]
        for key in ("rule", "beneficiary", "queue", "clusterQueue", "cohort", "owner", "idleSince")
    } == {
        "rule": "gpu-night",
        "beneficiary": "team-b/waiter",
        "queue": "gpu-queue",
        "clusterQueue": "cq-a",
        "cohort": "lab",
        "owner": "RayCluster/rc",
        "idleSince": "2025-03-03T10:00:00Z",
    }
    assert "subject" not in raw


def test_a_record_written_before_subjects_reads_with_none(
    kube: KubeServer, store: RuntimeStateStore
) -> None:
    old = {
        "at": "2025-03-03T11:00:00Z",
        "actor": LOOP_ACTOR,
        "action": "deactivate",
        "target": "team-a/rc",
        "reason": "idle",
        "outcome": "started",
        "gpus": 2,
    }
    store.record(deactivation(None))
    config_map = kube.store.get("configmaps", name=NAME, namespace=NAMESPACE)
    config_map["data"]["audit"] = json.dumps([old])
    kube.store.put(config_map)

    [read] = store.read().audit

    assert (read.subject, read.gpus, read.target) == (None, 2, "team-a/rc")
