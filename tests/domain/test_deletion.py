"""The opt-in last rung: the RayCluster of a Workload we deactivated is deleted once it stayed
inactive for `deleteAfter`, after its own warning, and only under a rule whose action is
`delete`; the inactive period counts only when it began with our own deactivation.

Unless a row says otherwise: `team-a/rc`, a RayCluster's Workload created three days ago that
we deactivated 25 hours ago (Kueue's eviction done: not admitted, no pods), under a `delete`
rule with `deleteAfter` 24 hours and a 15-minute lead; judged at `NOW`, dry run off.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from autoscaler.domain import annotations as ann
from autoscaler.domain.models import Action, Pauses, State
from autoscaler.domain.notices.deletion import delete_stage
from autoscaler.domain.policy.decisions import Policy
from autoscaler.domain.policy.rules import Rule, RuleAction
from tests.support.domain_builders import NOW, WorkloadBuilder, a_policy, minutes_ago, rfc3339
from tests.support.notice_builders import (
    LEAD,
    a_decision,
    a_gpu_workload,
    a_rule,
    deactivated_by_us,
    snoozed,
)

MIN, HOURS = timedelta(minutes=1), timedelta(hours=1)
DAY = 24 * HOURS
DELETE = a_rule(action=RuleAction.DELETE, delete_after=DAY)
ACTING, NO_PAUSES = a_policy(), Pauses()


def stopped(hours_ago: float = 25) -> WorkloadBuilder:
    """Created three days ago; we deactivated it `hours_ago`."""
    created = a_gpu_workload().created_at(NOW - 72 * HOURS)
    return deactivated_by_us(created, at=NOW - timedelta(hours=hours_ago))


def delete_warned(builder: WorkloadBuilder, *, at: datetime, planned: datetime) -> WorkloadBuilder:
    builder.annotated(ann.DELETE_WARNED_AT, rfc3339(at))
    return builder.annotated(ann.DELETE_PLANNED_AT, rfc3339(planned))


ROWS = [
    pytest.param(
        stopped(),
        DELETE,
        (Action.WARN_DELETE, NOW + LEAD),
        id="inactive-past-delete-after-without-a-warning-is-warned-first",
    ),
    pytest.param(
        stopped(hours_ago=23 + 50 / 60),
        DELETE,
        (Action.WARN_DELETE, NOW + LEAD),
        id="a-deletion-due-within-the-lead-time-is-warned-with-the-full-lead",
    ),
    pytest.param(
        stopped(hours_ago=20),
        DELETE,
        (Action.NONE, NOW + 4 * HOURS),
        id="a-deletion-further-off-is-shown-not-warned",
    ),
    pytest.param(
        delete_warned(stopped(), at=minutes_ago(20), planned=minutes_ago(5)),
        DELETE,
        (Action.DELETE, minutes_ago(5)),
        id="a-deletion-warned-longer-ago-than-the-lead-goes-ahead",
    ),
    pytest.param(
        delete_warned(stopped(), at=minutes_ago(10), planned=NOW + 5 * MIN),
        DELETE,
        (Action.NONE, NOW + 5 * MIN),
        id="a-deletion-warned-lately-waits-for-its-promised-time",
    ),
    pytest.param(
        delete_warned(stopped(), at=NOW - 26 * HOURS, planned=NOW - 25 * HOURS),
        DELETE,
        (Action.WARN_DELETE, NOW + LEAD),
        id="a-delete-warning-from-before-the-deactivation-is-void",
    ),
    pytest.param(
        stopped(),
        a_rule(action=RuleAction.DEACTIVATE, delete_after=DAY),
        (Action.NONE, None),
        id="delete-after-counts-only-when-the-rules-action-is-delete",
    ),
    pytest.param(
        stopped(),
        a_rule(action=RuleAction.DELETE),
        (Action.NONE, None),
        id="a-delete-rule-without-delete-after-deletes-nothing",
    ),
    pytest.param(
        stopped().owned_by("RayJob"),
        DELETE,
        (Action.NONE, None),
        id="only-a-raycluster-is-deleted",
    ),
    pytest.param(
        stopped().reactivated(at=NOW - 10 * HOURS),
        DELETE,
        (Action.NONE, None),
        id="inactive-again-after-a-reactivation-did-not-begin-with-our-deactivation",
    ),
    pytest.param(
        stopped().created_at(NOW - 2 * HOURS),
        DELETE,
        (Action.NONE, None),
        id="an-object-re-created-with-our-old-annotation-was-not-deactivated-by-us",
    ),
    pytest.param(
        stopped().admitted(at=NOW - 10 * HOURS),
        DELETE,
        (Action.NONE, None),
        id="admitted-again-after-our-deactivation-it-lived-again",
    ),
    pytest.param(
        stopped().admitted(at=NOW - 30 * HOURS),
        DELETE,
        (Action.WARN_DELETE, NOW + LEAD),
        id="still-admitted-from-before-our-deactivation-its-eviction-is-pending-and-counts",
    ),
    pytest.param(
        stopped().gpu_pod("w-9", created=NOW - 10 * HOURS),
        DELETE,
        (Action.NONE, None),
        id="a-pod-started-after-our-deactivation-means-it-ran-again",
    ),
    pytest.param(
        stopped().evicted("Deactivated", at=NOW - 10 * HOURS),
        DELETE,
        (Action.NONE, None),
        id="evicted-again-after-our-deactivation-the-inactive-period-is-someone-elses",
    ),
    pytest.param(
        stopped().evicted("Deactivated", at=NOW - 25 * HOURS + MIN),
        DELETE,
        (Action.WARN_DELETE, NOW + LEAD),
        id="kueues-eviction-right-after-our-patch-is-our-own-deactivation",
    ),
    pytest.param(
        a_gpu_workload().inactive().not_admitted(),
        DELETE,
        (Action.NONE, None),
        id="a-workload-someone-else-deactivated-is-never-deleted",
    ),
    pytest.param(
        stopped().exempt(on_owner=True),
        DELETE,
        (Action.NONE, NOW - HOURS),
        id="an-exemption-holds-the-deletion",
    ),
    pytest.param(
        snoozed(stopped(), until=NOW + 2 * HOURS, grants=[minutes_ago(1)]),
        DELETE,
        (Action.NONE, NOW - HOURS),
        id="a-snooze-holds-the-deletion",
    ),
    pytest.param(
        snoozed(
            delete_warned(stopped(), at=minutes_ago(20), planned=minutes_ago(5)),
            until=minutes_ago(1),
            grants=[minutes_ago(10)],
        ),
        DELETE,
        (Action.WARN_DELETE, NOW + LEAD),
        id="a-snooze-granted-after-the-delete-warning-voids-it-so-a-fresh-one-is-given",
    ),
    pytest.param(
        snoozed(
            delete_warned(stopped(), at=minutes_ago(20), planned=minutes_ago(5)),
            until=minutes_ago(25),
            grants=[minutes_ago(30)],
        ),
        DELETE,
        (Action.DELETE, minutes_ago(5)),
        id="a-snooze-that-ended-before-the-delete-warning-leaves-it-standing",
    ),
    pytest.param(
        delete_warned(stopped(), at=minutes_ago(20), planned=minutes_ago(5)).exempt_until(
            minutes_ago(1), on_owner=True
        ),
        DELETE,
        (Action.WARN_DELETE, NOW + LEAD),
        id="an-exemption-in-force-after-the-delete-warning-voids-it",
    ),
    pytest.param(
        stopped(),
        a_rule(action=RuleAction.DELETE, delete_after=DAY, warn_before=timedelta(0)),
        (Action.DELETE, NOW - HOURS),
        id="without-a-lead-time-the-deletion-goes-ahead-when-due",
    ),
    pytest.param(
        stopped(hours_ago=20),
        a_rule(action=RuleAction.DELETE, delete_after=DAY, warn_before=timedelta(0)),
        (Action.NONE, NOW + 4 * HOURS),
        id="without-a-lead-time-nothing-happens-before-it-is-due",
    ),
]


@pytest.mark.parametrize(("workload", "rule", "expected"), ROWS)
def test_the_owner_is_deleted_only_after_our_deactivation_delete_after_and_a_warning(
    workload: WorkloadBuilder, rule: Rule, expected: tuple[Action, datetime | None]
) -> None:
    decision = a_decision(State.DEACTIVATED, reason="spec.active is false")
    staged = delete_stage(
        decision, workload.build(), rule=rule, policy=ACTING, pauses=NO_PAUSES, now=NOW
    )
    assert (staged.action, staged.notice.delete_at) == expected


def served(builder: WorkloadBuilder) -> WorkloadBuilder:
    """Its delete warning given 20 minutes ago, promising 5 minutes ago: the delete is due."""
    return delete_warned(builder, at=minutes_ago(20), planned=minutes_ago(5))


HELD = [
    pytest.param(
        stopped(),
        ACTING,
        Pauses(everything=True),
        "paused (service)",
        id="a-service-pause-holds-the-deletion-warning",
    ),
    pytest.param(
        served(stopped()),
        ACTING,
        Pauses(namespaces=frozenset({"team-a"})),
        "paused (namespace team-a)",
        id="a-namespace-pause-holds-a-served-deletion",
    ),
    pytest.param(
        served(stopped()),
        a_policy(exclude=["team-a"]),
        NO_PAUSES,
        "namespace team-a is excluded",
        id="an-excluded-namespace-is-never-deleted-in",
    ),
    pytest.param(
        stopped(),
        a_policy(include=["team-b"]),
        NO_PAUSES,
        "namespace team-a is not in the included namespaces",
        id="a-namespace-not-included-is-never-deleted-in",
    ),
    pytest.param(
        served(stopped().priority("prod")),
        a_policy(protected_classes=["prod"]),
        NO_PAUSES,
        "priority class prod is protected",
        id="a-protected-priority-class-is-never-deleted",
    ),
    pytest.param(
        served(stopped()),
        a_policy(kinds=["RayJob"]),
        NO_PAUSES,
        "kind RayCluster not enabled (cluster.ownerKinds.RayCluster.enabled)",
        id="an-owner-kind-no-longer-enabled-is-never-deleted",
    ),
    pytest.param(
        served(stopped().keda()),
        ACTING,
        NO_PAUSES,
        "a KEDA ScaledObject uses our signal",
        id="a-keda-managed-workload-is-never-deleted",
    ),
]


@pytest.mark.parametrize(("workload", "policy", "pauses", "why"), HELD)
def test_what_the_policy_protects_or_a_pause_holds_is_neither_deleted_nor_warned(
    workload: WorkloadBuilder, policy: Policy, pauses: Pauses, why: str
) -> None:
    decision = a_decision(State.DEACTIVATED, reason="spec.active is false")
    staged = delete_stage(
        decision, workload.build(), rule=DELETE, policy=policy, pauses=pauses, now=NOW
    )
    assert staged.action is Action.NONE
    assert staged.reason.endswith(f"deletion held: {why}")


@pytest.mark.parametrize(
    ("hours_ago", "expected"),
    [
        pytest.param(25, Action.WOULD_DELETE, id="dry-run-reports-a-due-deletion-writes-nothing"),
        pytest.param(23.9, Action.NONE, id="dry-run-gives-no-deletion-warning"),
    ],
)
def test_dry_run_only_says_what_it_would_delete(hours_ago: float, expected: Action) -> None:
    decision = a_decision(State.DEACTIVATED, reason="spec.active is false")
    workload = stopped(hours_ago=hours_ago).build()
    staged = delete_stage(
        decision, workload, rule=DELETE, policy=a_policy(dry_run=True), pauses=NO_PAUSES, now=NOW
    )
    assert staged.action is expected


def test_a_row_not_deactivated_is_left_to_the_warning_stage() -> None:
    decision = a_decision(State.IDLE, Action.DEACTIVATE)
    staged = delete_stage(
        decision, stopped().build(), rule=DELETE, policy=ACTING, pauses=NO_PAUSES, now=NOW
    )
    assert staged == decision


def test_the_reason_says_why_an_inactive_workload_is_not_deleted() -> None:
    decision = a_decision(State.DEACTIVATED, reason="spec.active is false")
    workload = stopped().reactivated(at=NOW - 10 * HOURS).build()
    staged = delete_stage(decision, workload, rule=DELETE, policy=ACTING, pauses=NO_PAUSES, now=NOW)
    assert staged.reason.endswith("did not begin with our deactivation")
