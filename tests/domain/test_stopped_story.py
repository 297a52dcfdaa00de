"""A stopped workload's story (`domain/audit/stopped.py`), read back from the annotations the
stop patch wrote (`DeactivationAudit.annotations`), never from memory: when, by which rule or
person, for which waiter, on what evidence, and what brings it back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import timedelta

import pytest

from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import DeactivationAudit
from autoscaler.domain.audit.stopped import stopped_of
from autoscaler.domain.models import WorkloadInfo
from tests.support.domain_builders import NOW, WorkloadBuilder, a_workload

WAITER = "team-b/train"
CONTENDED = (
    "idle for the whole window: every GPU at or below 5% for 60m (peak 1%, coverage 95%); "
    f"frees quota for {WAITER}, which waits"
)
LOOP_STOP = DeactivationAudit(
    at=NOW,
    reason=CONTENDED,
    peak=0.01,
    threshold=0.05,
    policy="rule nights: threshold 5%, window 1:00:00, min coverage 80%, grace 0:15:00",
    beneficiary=WAITER,
    beneficiary_queue="team-b-cq",
    rule="nights",
    coverage=0.95,
    idle_since=NOW - timedelta(minutes=110),
)


def stopped_by(audit: DeactivationAudit, workload: WorkloadBuilder | None = None) -> WorkloadInfo:
    return stopped_with(audit.annotations(), workload or a_workload("team-a", "rc"))


def stopped_with(
    notes: Mapping[str, str], workload: WorkloadBuilder, *, on_owner: bool = False
) -> WorkloadInfo:
    """Inactive, carrying `notes` (on its owner instead: the owner's copy)."""
    built = workload.inactive()
    for key, value in notes.items():
        built = built.annotated(key, value, on_owner=on_owner)
    return built.build()


def test_the_loops_stop_says_when_which_rule_for_whom_on_what_and_the_command() -> None:
    story = stopped_of(stopped_by(LOOP_STOP))

    assert story is not None and story.ours
    assert (story.at, story.rule, story.stopper) == (NOW, "nights", "rule nights")
    assert story.waiter is not None and (str(story.waiter.ref), story.waiter.cluster_queue) == (
        WAITER,
        "team-b-cq",
    )
    assert story.evidence() == "idle 1h50m, peak 1% (threshold 5%), coverage 95%"
    assert story.bring_back == 'idle-gpu-autoscaler reactivate -n team-a rc --reason "back to work"'
    assert story.summary(now=NOW) == "stopped at 12:00 by rule nights (spec.active is false)"


def test_the_waiter_is_told_only_to_a_reader_of_its_namespace() -> None:
    story = stopped_of(stopped_by(LOOP_STOP))
    assert story is not None

    def team_a_only(namespace: str) -> bool:
        return namespace == "team-a"

    assert story.waiter_told(may_read=team_a_only) == "a Workload in ClusterQueue team-b-cq"
    told = story.reason_told(may_read=team_a_only)
    assert told is not None and WAITER not in told and "team-b-cq" in told
    assert story.waiter_told(may_read=lambda _: True) == WAITER


def test_a_person_who_stopped_it_is_named_and_no_rule() -> None:
    by_hand = DeactivationAudit(
        at=NOW,
        reason="deactivated now by alice: maintenance",
        peak=None,
        threshold=float("nan"),
        policy="deactivated by an admin through the API",
        by="alice",
    )
    story = stopped_of(stopped_by(by_hand))

    assert story is not None
    assert (story.rule, story.stopper, story.threshold, story.evidence()) == (
        None,
        "alice",
        None,
        None,
    )


def test_a_stop_of_an_older_service_names_the_rule_its_policy_line_names() -> None:
    older = {
        key: value
        for key, value in LOOP_STOP.annotations().items()
        if key
        not in (keys.DEACTIVATED_RULE, keys.DEACTIVATED_COVERAGE, keys.DEACTIVATED_IDLE_SINCE)
    }
    story = stopped_of(stopped_with(older, a_workload("team-a", "rc")))

    assert story is not None and story.rule == "nights"
    assert story.evidence() == "peak 1% (threshold 5%)"


def test_an_earlier_stops_waiter_never_passes_for_this_ones() -> None:
    # reactivated, then stopped again by the idle rule with nobody waiting: its reason names
    # no waiter, and the stop writes no `deactivated-for` of its own
    again = stopped_by(
        DeactivationAudit(
            at=NOW,
            reason="idle for the whole window",
            peak=0.0,
            threshold=0.05,
            policy="rule default: ...",
            rule="default",
        ),
        a_workload("team-a", "rc").annotated(keys.DEACTIVATED_FOR, WAITER),
    )
    story = stopped_of(again)

    assert story is not None and story.waiter is None


def test_the_owners_copy_tells_it_when_the_workload_carries_none() -> None:
    owners_copy = LOOP_STOP.annotations()
    story = stopped_of(stopped_with(owners_copy, a_workload("team-a", "rc"), on_owner=True))

    assert story is not None and (story.ours, story.rule) == (True, "nights")


@pytest.mark.parametrize("kind", ["Deployment", "Pod"])
def test_a_requeue_says_it_comes_back_by_itself_with_no_command(kind: str) -> None:
    story = stopped_of(stopped_by(LOOP_STOP, a_workload("team-a", "rc").owned_by(kind)))

    assert story is not None and not story.lasts
    assert story.bring_back.startswith("it yields its GPUs to the queue; it comes back when")
    assert "reactivate" not in story.bring_back


def test_a_workload_stopped_by_someone_else_says_so_and_an_active_one_says_nothing() -> None:
    story = stopped_of(a_workload("team-a", "rc").inactive().build())

    assert story is not None and not story.ours
    assert story.summary(now=NOW) == "spec.active is false: not stopped by this service"
    assert story.stopper == "not this service"
    assert stopped_of(a_workload("team-a", "rc").build()) is None


@pytest.mark.parametrize("on_owner", [False, True])
def test_a_stop_after_our_reactivation_is_not_ours(on_owner: bool) -> None:
    """We stopped it, it was reactivated (which keeps our deactivated-at), then someone else
    (Kueue's backoff, an admin) stopped it: not our old stop."""
    ours = replace(LOOP_STOP, at=NOW - timedelta(hours=2)).annotations()
    workload = a_workload("team-a", "rc").annotated(
        keys.REACTIVATED_AT, keys.time_text(NOW - timedelta(hours=1)), on_owner=on_owner
    )
    story = stopped_of(stopped_with(ours, workload))

    assert story is not None and not story.ours
    assert story.summary(now=NOW) == "spec.active is false: not stopped by this service"


def test_a_reactivation_before_our_stop_leaves_it_ours() -> None:
    ours = replace(LOOP_STOP, at=NOW - timedelta(hours=1)).annotations()
    workload = a_workload("team-a", "rc").annotated(
        keys.REACTIVATED_AT, keys.time_text(NOW - timedelta(hours=2))
    )
    story = stopped_of(stopped_with(ours, workload))

    assert story is not None and story.ours and story.at == NOW - timedelta(hours=1)
