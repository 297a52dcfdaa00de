"""Snoozes: granted within the rule's bounds (longest snooze, how many a day), a hand-set
one bounded the same way, and a snooze in the warning stage: it holds the stop, is warned
about before it ends, and consumes the warning it answers, so a replayed link does nothing.

Unless a row says otherwise: `team-a/rc` admitted a day ago, bounds of 24 hours and 3 a day,
asked at `NOW`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from autoscaler.domain import annotations as ann
from autoscaler.domain.exemptions import exempting
from autoscaler.domain.models import Action, Decision, State, WorkloadInfo
from autoscaler.domain.notices.notice import SnoozeBounds
from autoscaler.domain.notices.snoozes import grant_snooze, hand_set_snooze, unsnoozing
from autoscaler.domain.notices.staging import read_notice, stage
from autoscaler.domain.policy.rules import Rule
from tests.support.domain_builders import NOW, WorkloadBuilder, minutes_ago, rfc3339
from tests.support.notice_builders import (
    LEAD,
    a_gpu_workload,
    a_rule,
    idle_for_now,
    snoozed,
    stop_due,
    warned,
)

MIN, HOURS = timedelta(minutes=1), timedelta(hours=1)
BOUNDS = SnoozeBounds(max_duration=24 * HOURS, per_day=3)
WARNING = (ann.WARNED_AT, ann.WARNED_UID, ann.STOP_PLANNED_AT)


def fresh() -> WorkloadBuilder:
    return a_gpu_workload()


def granted_before(*minutes: float) -> WorkloadBuilder:
    """Snoozes were granted this many minutes ago (SNOOZES)."""
    times = ",".join(rfc3339(minutes_ago(m)) for m in minutes)
    return fresh().annotated(ann.SNOOZES, times)


def applied(workload: WorkloadInfo, patch: Mapping[str, str | None]) -> WorkloadInfo:
    """The Workload after a merge patch of its annotations."""
    written = {**workload.annotations, **{k: v for k, v in patch.items() if v is not None}}
    gone = {key for key, value in patch.items() if value is None}
    return replace(workload, annotations={k: v for k, v in written.items() if k not in gone})


GRANT_ROWS = [
    pytest.param(
        fresh(),
        NOW + 4 * HOURS,
        BOUNDS,
        (NOW + 4 * HOURS, None, False),
        id="a-snooze-within-the-bound-is-granted-as-asked",
    ),
    pytest.param(
        fresh(),
        NOW + 48 * HOURS,
        BOUNDS,
        (NOW + 24 * HOURS, NOW + 48 * HOURS, False),
        id="an-over-long-snooze-is-clipped-to-the-rules-longest",
    ),
    pytest.param(
        granted_before(300, 200, 100),
        NOW + HOURS,
        BOUNDS,
        (None, None, True),
        id="a-fourth-snooze-within-24-hours-is-refused",
    ),
    pytest.param(
        granted_before(1500, 200, 100),
        NOW + HOURS,
        BOUNDS,
        (NOW + HOURS, None, False),
        id="a-grant-older-than-24-hours-no-longer-counts",
    ),
    pytest.param(
        fresh().annotated(ann.SNOOZES, ",".join([rfc3339(NOW + HOURS)] * 3 + ["garbage"])),
        NOW + HOURS,
        BOUNDS,
        (NOW + HOURS, None, False),
        id="grant-times-ahead-of-now-or-unreadable-were-not-ours-and-do-not-count",
    ),
    pytest.param(
        fresh(),
        NOW + HOURS,
        SnoozeBounds(per_day=0),
        (None, None, True),
        id="per-day-zero-turns-snoozes-off",
    ),
    pytest.param(
        fresh(),
        minutes_ago(1),
        BOUNDS,
        (None, None, True),
        id="a-snooze-ending-before-now-is-refused",
    ),
]


@pytest.mark.parametrize(("workload", "until", "bounds", "expected"), GRANT_ROWS)
def test_a_snooze_is_granted_within_the_rules_bounds(
    workload: WorkloadBuilder,
    until: datetime,
    bounds: SnoozeBounds,
    expected: tuple[datetime | None, datetime | None, bool],
) -> None:
    grant = grant_snooze(
        workload.build(), until=until, by="alice", reason="demo", bounds=bounds, now=NOW
    )
    assert (grant.until, grant.clipped_from, grant.refused is not None) == expected


def test_a_grant_writes_the_snooze_and_removes_the_warning_it_answers() -> None:
    workload = warned(granted_before(1500, 60), at=minutes_ago(5)).build()
    grant = grant_snooze(
        workload, until=NOW + 30 * HOURS, by="alice", reason="demo", bounds=BOUNDS, now=NOW
    )
    assert grant.patch == {
        ann.SNOOZED_UNTIL: "2025-03-04T12:00:00Z",
        ann.SNOOZE_GRANTED: "2025-03-04T12:00:00Z",
        ann.SNOOZED_BY: "alice",
        ann.SNOOZE_REASON: "demo",
        ann.SNOOZES: "2025-03-03T11:00:00Z,2025-03-03T12:00:00Z",
        ann.SNOOZE_REQUESTED: "2025-03-04T18:00:00Z",
        **dict.fromkeys(WARNING),
    }


def test_a_refused_snooze_writes_nothing_and_says_why() -> None:
    grant = grant_snooze(
        granted_before(30, 20, 10).build(),
        until=NOW + HOURS,
        by="alice",
        reason="demo",
        bounds=BOUNDS,
        now=NOW,
    )
    assert (grant.patch, grant.refused) == (
        {},
        "3 snoozes were already granted in the last 24 hours",
    )


def test_a_replayed_link_finds_no_warning_left_to_answer() -> None:
    """A link names the warning it answers; the first snooze consumed it."""
    workload = warned(fresh(), at=minutes_ago(5), planned=NOW + 10 * MIN).build()
    first = grant_snooze(workload, until=NOW + HOURS, by="a", reason="r", bounds=BOUNDS, now=NOW)
    after = applied(workload, first.patch)
    notice = read_notice(after, rule=a_rule(), now=NOW)
    assert (notice.warned_at, notice.snoozed_until) == (None, NOW + HOURS)


HAND_SET_ROWS = [
    pytest.param(
        snoozed(fresh(), until=NOW + 48 * HOURS, by="bob", granted=False),
        (NOW + 24 * HOURS, NOW + 48 * HOURS, "bob", None),
        id="an-over-long-hand-set-snooze-is-clipped-and-the-clip-kept",
    ),
    pytest.param(
        fresh().annotated(ann.SNOOZED_UNTIL, rfc3339(NOW + 2 * HOURS)),
        (NOW + 2 * HOURS, None, "hand-set annotation", None),
        id="a-hand-set-snooze-naming-nobody-is-from-the-annotation",
    ),
    pytest.param(
        snoozed(granted_before(30, 20, 10), until=NOW + 2 * HOURS, granted=False),
        (None, None, None, "3 snoozes were already granted in the last 24 hours"),
        id="a-hand-set-snooze-past-the-days-count-is-refused-and-removed",
    ),
    pytest.param(
        snoozed(fresh(), until=NOW + 20 * HOURS, granted=True, grants=[minutes_ago(10)]),
        None,
        id="the-services-own-grant-is-not-hand-set",
    ),
    pytest.param(
        snoozed(fresh(), until=NOW + 48 * HOURS, granted=True, grants=[minutes_ago(10)]),
        (NOW + 24 * HOURS, NOW + 48 * HOURS, "alice", None),
        id="both-ends-edited-alike-beyond-the-bound-of-the-recorded-grant-is-hand-set",
    ),
    pytest.param(
        snoozed(fresh(), until=NOW + 2 * HOURS, granted=True),
        (NOW + 2 * HOURS, None, "alice", None),
        id="a-granted-end-with-no-grant-recorded-is-hand-set",
    ),
    pytest.param(
        snoozed(fresh(), until=minutes_ago(5), granted=False),
        None,
        id="a-hand-set-snooze-already-over-is-nothing",
    ),
    pytest.param(fresh(), None, id="no-snooze-is-nothing"),
]


@pytest.mark.parametrize(("workload", "expected"), HAND_SET_ROWS)
def test_a_hand_set_snooze_is_bounded_like_a_request(
    workload: WorkloadBuilder,
    expected: tuple[datetime | None, datetime | None, str | None, str | None] | None,
) -> None:
    grant = hand_set_snooze(workload.build(), bounds=BOUNDS, now=NOW)
    if expected is None:
        assert grant is None
        return
    assert grant is not None
    by = grant.patch.get(ann.SNOOZED_BY) if grant.refused is None else None
    assert (grant.until, grant.clipped_from, by, grant.refused) == expected


def test_a_refused_hand_set_snooze_is_removed_but_the_days_count_kept() -> None:
    workload = snoozed(granted_before(30, 20, 10), until=NOW + 2 * HOURS, granted=False)
    grant = hand_set_snooze(workload.build(), bounds=BOUNDS, now=NOW)
    assert grant is not None and grant.patch == unsnoozing()
    assert ann.SNOOZES not in unsnoozing()


def test_an_over_long_hand_set_snooze_holds_only_as_long_as_the_bound() -> None:
    workload = snoozed(fresh(), until=NOW + 72 * HOURS, granted=False).build()
    notice = read_notice(workload, rule=a_rule(), now=NOW)
    assert notice.snoozed_until == NOW + 24 * HOURS


def test_an_exemption_answers_the_warning_too() -> None:
    patch = exempting(until=NOW + HOURS, by="alice", reason="demo", now=NOW)
    assert all(key in patch and patch[key] is None for key in WARNING)


SNOOZE_ROWS = [
    pytest.param(
        snoozed(fresh(), until=NOW + 120 * MIN, grants=[minutes_ago(1)]),
        stop_due(),
        a_rule(),
        (Action.NONE, State.SNOOZED, None),
        id="a-snooze-in-force-holds-a-due-stop",
    ),
    pytest.param(
        snoozed(fresh(), until=NOW + 60 * MIN, grants=[minutes_ago(1)]),
        idle_for_now(3 * MIN),
        a_rule(),
        (Action.NONE, State.SNOOZED, None),
        id="a-snoozed-idle-workload-shows-snoozed-until-the-warning-is-due",
    ),
    pytest.param(
        snoozed(fresh(), until=NOW + 10 * MIN, grants=[minutes_ago(50)]),
        stop_due(),
        a_rule(),
        (Action.WARN, State.SNOOZED, NOW + LEAD),
        id="a-snooze-ending-within-the-lead-time-is-warned-about-never-less-than-the-lead",
    ),
    pytest.param(
        warned(
            snoozed(fresh(), until=NOW + 10 * MIN, grants=[minutes_ago(50)]),
            at=minutes_ago(5),
            planned=NOW + 10 * MIN,
        ),
        stop_due(),
        a_rule(),
        (Action.NONE, State.SNOOZED, NOW + 10 * MIN),
        id="a-snoozed-workload-warned-again-waits-for-the-snooze-to-end",
    ),
    pytest.param(
        warned(
            snoozed(fresh(), until=minutes_ago(1), grants=[minutes_ago(60)]),
            at=minutes_ago(16),
            planned=minutes_ago(1),
        ),
        stop_due(),
        a_rule(),
        (Action.DEACTIVATE, State.IDLE, minutes_ago(1)),
        id="the-stop-comes-after-the-snooze-ran-out-and-its-warning-was-served",
    ),
    pytest.param(
        snoozed(fresh(), until=NOW + 240 * MIN, by="bob", granted=False),
        stop_due(),
        a_rule(),
        (Action.NONE, State.SNOOZED, None),
        id="a-hand-set-snooze-holds-the-stop-within-its-bound",
    ),
]


def test_a_snoozed_reason_names_until_when_and_who() -> None:
    workload = snoozed(fresh(), until=NOW + 120 * MIN, by="alice", grants=[minutes_ago(1)])
    staged = stage(stop_due(), workload.build(), rule=a_rule(), dry_run=False, now=NOW)
    assert staged.reason.endswith("; snoozed until 2025-03-03T14:00:00Z by alice")
    assert (staged.notice.snoozed_until, staged.notice.snoozed_by) == (NOW + 120 * MIN, "alice")


@pytest.mark.parametrize(("workload", "decision", "rule", "expected"), SNOOZE_ROWS)
def test_a_snooze_holds_the_stop_and_is_warned_about_before_it_ends(
    workload: WorkloadBuilder,
    decision: Decision,
    rule: Rule,
    expected: tuple[Action, State, datetime | None],
) -> None:
    staged = stage(decision, workload.build(), rule=rule, dry_run=False, now=NOW)
    assert (staged.action, staged.state, staged.notice.stop_at) == expected
