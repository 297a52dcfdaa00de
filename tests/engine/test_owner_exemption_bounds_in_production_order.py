"""An over-long exemption a person set by hand on an owner the service never writes (a Job;
likewise a StatefulSet, a Deployment, a pod), in production order: the service built by
`build_service` from `Settings` over fakes of the ports, a fake clock moved one loop interval
per cycle (tests/engine/test_policy_in_production_order.py).

docs/API.md "Exemptions": an `exempt-until` set by hand beyond now + maximum is rewritten once
to now + maximum, with one audit record; docs/WORKLOADS.md: a Job is never written, its
Workload carries our annotations. So the bound goes on the Workload, once, and holds: the
owner's unchanged value is not bounded again each cycle (which moved the end a cycle further
every cycle, with a write and a record each time).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest

from autoscaler.domain import annotations as keys
from autoscaler.domain.exemptions import EXEMPT_REPLACES, EXEMPT_UNTIL_REQUESTED, active_exemption
from autoscaler.domain.models import State, WorkloadRef
from autoscaler.settings.tree import Settings
from tests.support.domain_builders import NOW, a_workload, usage
from tests.support.fakes import FakeClock, FakeCluster, FakeMetrics
from tests.support.loop_builders import a_service

LOG = logging.getLogger("test.owner-exemption-bounds")
SHIPPED = Settings()
INTERVAL, WINDOW = SHIPPED.loop.interval, SHIPPED.policy.idle_window
MAXIMUM = timedelta(days=7)  # the default rule's exemptions.maxDuration (docs/RULES.md)
NS, NAME = "team-a", "train"
REF = WorkloadRef(NS, NAME)
# Acting (not the shipped dry run), with Jobs enabled (they are opt-in: docs/WORKLOADS.md).
ACTING_ON_JOBS: dict[str, Any] = {
    "policy": {"dryRun": False},
    "cluster": {"ownerKinds": {"Job": {"enabled": True}}},
}


class JobFleet:
    """One idle one-GPU Workload owned by a batch Job carrying `owner_annotations`."""

    def __init__(self, owner_annotations: dict[str, str]) -> None:
        self.clock = FakeClock(NOW)
        builder = a_workload(NS, NAME).owned_by("Job").gpu_pod(f"{NAME}-0")
        for key, value in owner_annotations.items():
            builder.annotated(key, value, on_owner=True)
        self.cluster = FakeCluster([builder.build()])
        self.metrics = FakeMetrics(self._usage())
        settings = Settings.model_validate(ACTING_ON_JOBS)
        self.service = a_service(
            settings, cluster=self.cluster, metrics=self.metrics, clock=self.clock, logger=LOG
        )

    def _usage(self) -> Any:
        now = self.clock.now()
        fleet = usage().gpu(NS, f"{NAME}-0", peak=0.01, last_sample=now, last_busy=NOW - 3 * WINDOW)
        return fleet.build(window=WINDOW, evaluated_at=now)

    def cycles(self, count: int) -> State:
        """`count` cycles one interval apart; the state of the last."""
        state = State.UNKNOWN
        for _ in range(count):
            self.metrics.usage = self._usage()
            [row] = self.service.reconciler.run_once().workloads
            state = row.decision.state
            self.clock.advance(INTERVAL)
        return state

    def kubectl_annotate_owner(self, annotations: dict[str, str]) -> None:
        """A person edits the Job's annotations (the service never does)."""
        [workload] = self.cluster.workloads
        self.cluster.workloads = [replace(workload, owner_annotations=annotations)]

    def workload_annotations(self) -> dict[str, str]:
        [workload] = self.cluster.workloads
        return dict(workload.annotations)

    def writes(self) -> list[str]:
        return [c for c, ref in self.cluster.calls if ref == REF and c.startswith("annotate")]

    def cut_records(self) -> list[str]:
        audit = self.service.shared.store.read().audit
        return [r.reason for r in audit if r.action == "cut-exemption"]


def test_a_hand_set_over_long_exemption_on_a_job_is_bounded_once_and_the_bound_holds() -> None:
    asked = keys.time_text(NOW + timedelta(days=30))
    fleet = JobFleet({keys.EXEMPT_UNTIL: asked, keys.EXEMPT_BY: "alice"})

    assert fleet.cycles(10) is State.EXEMPT

    bound = keys.time_text(NOW + MAXIMUM)  # cut in the first cycle, at NOW
    written = fleet.workload_annotations()
    assert written[keys.EXEMPT_UNTIL] == bound, "the end stays put, not one limit from now"
    assert (written[EXEMPT_UNTIL_REQUESTED], written[EXEMPT_REPLACES]) == (asked, asked)
    assert written[keys.EXEMPT_BY] == "alice"  # who set it comes along
    assert fleet.writes() == ["annotate_workload"], "one write in ten cycles"
    [record] = fleet.cut_records()
    assert f"Job {NS}/{NAME} (kept there" in record and f"requested {asked}" in record
    assert fleet.cluster.owner_patches == [], "the Job is never written"

    # The bound ends while the Job still says a month: the owner's value counts no more.
    fleet.clock.advance(NOW + MAXIMUM - fleet.clock.now())
    assert fleet.cycles(3) is State.IDLE
    assert keys.WARNED_AT in fleet.workload_annotations()  # warned, as any idle workload
    assert len(fleet.cut_records()) == 1
    assert fleet.workload_annotations()[keys.EXEMPT_UNTIL] == bound


def test_a_person_changing_the_jobs_value_is_bounded_afresh_once() -> None:
    fleet = JobFleet({keys.EXEMPT_UNTIL: keys.time_text(NOW + timedelta(days=30))})
    fleet.cycles(3)
    changed_at = fleet.clock.now()
    asked_again = keys.time_text(NOW + timedelta(days=60))
    fleet.kubectl_annotate_owner({keys.EXEMPT_UNTIL: asked_again})

    assert fleet.cycles(5) is State.EXEMPT

    written = fleet.workload_annotations()
    assert written[keys.EXEMPT_UNTIL] == keys.time_text(changed_at + MAXIMUM)
    assert written[EXEMPT_REPLACES] == asked_again
    assert fleet.writes() == ["annotate_workload", "annotate_workload"]
    assert len(fleet.cut_records()) == 2


def test_a_person_removing_the_jobs_exemption_ends_its_bounded_copy() -> None:
    fleet = JobFleet({keys.EXEMPT_UNTIL: keys.time_text(NOW + timedelta(days=30))})
    assert fleet.cycles(2) is State.EXEMPT

    fleet.kubectl_annotate_owner({})

    assert fleet.cycles(2) is not State.EXEMPT
    assert len(fleet.cut_records()) == 1


SOON = NOW + timedelta(days=2)
LATER = NOW + timedelta(days=30)


# The Workload's copy stands for the owner's value it names, and only while the owner says it.
@pytest.mark.parametrize(
    ("own", "owner", "until"),
    [
        pytest.param({}, {keys.EXEMPT_UNTIL: keys.time_text(LATER)}, LATER, id="owner-alone"),
        pytest.param(
            {keys.EXEMPT_UNTIL: keys.time_text(SOON), EXEMPT_REPLACES: keys.time_text(LATER)},
            {keys.EXEMPT_UNTIL: keys.time_text(LATER)},
            SOON,
            id="replaced-owner-value-not-read",
        ),
        pytest.param(
            {keys.EXEMPT_UNTIL: keys.time_text(NOW), EXEMPT_REPLACES: keys.time_text(LATER)},
            {keys.EXEMPT_UNTIL: keys.time_text(LATER)},
            None,
            id="an-ended-bound-does-not-revive-the-owner-value",
        ),
        pytest.param(
            {keys.EXEMPT_UNTIL: keys.time_text(SOON), EXEMPT_REPLACES: "indefinite"},
            {keys.EXEMPT: "true"},
            SOON,
            id="replaced-indefinite",
        ),
        pytest.param(
            {keys.EXEMPT_UNTIL: keys.time_text(LATER), EXEMPT_REPLACES: keys.time_text(LATER)},
            {keys.EXEMPT_UNTIL: keys.time_text(SOON)},
            SOON,
            id="owner-changed-since-its-value-is-read",
        ),
        pytest.param(
            {keys.EXEMPT_UNTIL: keys.time_text(SOON), EXEMPT_REPLACES: keys.time_text(LATER)},
            {},
            None,
            id="owner-value-removed-the-copy-is-stale",
        ),
    ],
)
def test_the_exemption_in_force_honours_a_replaced_owner_value(
    own: dict[str, str], owner: dict[str, str], until: datetime | None
) -> None:
    found = active_exemption(own, owner, now=NOW + INTERVAL)
    assert (found.until if found is not None else None) == until
