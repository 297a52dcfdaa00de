"""Which of the loop's audit records are the same record again (`RecordKey`), and the trail
that keeps each only once (`RuntimeState.recorded`), while a deactivation's own records are
always kept: the hourly cap counts them."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from autoscaler.domain.audit.records import LOOP_ACTOR, AuditRecord, RecordKey, RuntimeState
from tests.support.domain_builders import NOW

UID = "4f1c-uid"
EPISODE = NOW - timedelta(hours=2)
RECORDED_AT = NOW - timedelta(hours=1)  # the first record: an hour into the episode


def would(
    *, at: datetime = NOW, key: RecordKey | None, action: str = "would-deactivate"
) -> AuditRecord:
    return AuditRecord(
        at=at, actor=LOOP_ACTOR, action=action, target="team-a/rc", reason="idle", key=key
    )


@pytest.mark.parametrize(
    ("again", "repeats"),
    [
        pytest.param(RecordKey(UID, EPISODE), True, id="same-workload-same-episode"),
        pytest.param(
            RecordKey(UID, EPISODE + timedelta(minutes=5)),
            True,
            id="idle-since-rounded-later-within-the-episode",
        ),
        pytest.param(
            RecordKey(UID, EPISODE - timedelta(hours=3)),
            True,
            id="idle-since-moved-back-to-admission",
        ),
        pytest.param(
            RecordKey(UID, RECORDED_AT + timedelta(minutes=1)),
            False,
            id="an-episode-that-began-after-the-record-is-new",
        ),
        pytest.param(RecordKey("another-uid", EPISODE), False, id="another-workload"),
        pytest.param(RecordKey(UID, EPISODE, detail="failed: 500"), False, id="another-outcome"),
    ],
)
def test_a_decision_record_repeats_one_made_during_the_same_idle_episode(
    again: RecordKey, repeats: bool
) -> None:
    earlier = RecordKey(UID, EPISODE)
    assert again.covers(earlier, recorded_at=RECORDED_AT) is repeats


@pytest.mark.parametrize(
    ("requested", "repeats"),
    [
        pytest.param("2026-04-01T00:00:00Z", True, id="the-same-request-cut-again"),
        pytest.param("2026-05-01T00:00:00Z", False, id="a-new-request"),
    ],
)
def test_a_cut_repeats_one_of_the_same_request_on_the_same_object(
    requested: str, repeats: bool
) -> None:
    earlier = RecordKey(UID, detail="RayCluster team-a/rc requested 2026-04-01T00:00:00Z")
    again = RecordKey(UID, detail=f"RayCluster team-a/rc requested {requested}")
    assert again.covers(earlier, recorded_at=RECORDED_AT) is repeats


def test_the_trail_keeps_a_keyed_record_once_even_within_one_batch() -> None:
    key = RecordKey(UID, EPISODE)
    state = RuntimeState().recorded((would(at=RECORDED_AT, key=key),), limit=10)

    again = state.recorded((would(key=key), would(key=key)), limit=10)

    assert again == state


def test_another_action_of_the_same_episode_is_its_own_record() -> None:
    key = RecordKey(UID, EPISODE)
    state = RuntimeState().recorded((would(at=RECORDED_AT, key=key),), limit=10)

    state = state.recorded((would(key=key, action="deactivate"),), limit=10)

    assert [r.action for r in state.audit] == ["deactivate", "would-deactivate"]


def test_unkeyed_records_are_always_kept_so_each_deactivation_counts() -> None:
    started = AuditRecord(
        at=NOW,
        actor=LOOP_ACTOR,
        action="deactivate",
        target="team-a/rc",
        reason="idle",
        outcome="started",
    )

    state = RuntimeState().recorded((started,), limit=10).recorded((started,), limit=10)

    assert len(state.audit) == 2
