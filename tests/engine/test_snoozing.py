"""The snooze act sequence: one patch on the Workload (the truth), the owner shows the end,
an Event; a refused snooze writes nothing; the owner failing does not undo the snooze."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from datetime import timedelta

from autoscaler.core.errors import ClusterUnavailable
from autoscaler.domain import annotations as keys
from autoscaler.domain.audit.records import Annotated
from autoscaler.domain.models import WorkloadInfo
from autoscaler.domain.notices.notice import NoticeRules, SnoozeBounds
from autoscaler.domain.policy.rules import Rule
from autoscaler.engine.acting.snooze import snooze, unsnooze
from tests.support.domain_builders import NOW, a_policy, a_workload, rfc3339
from tests.support.fakes import FakeCluster

LOG = logging.getLogger("tests.snoozing")


def a_rule(*, longest: timedelta = timedelta(hours=8), per_day: int = 3) -> Rule:
    bounds = SnoozeBounds(max_duration=longest, per_day=per_day)
    return replace(a_policy().default_rule, notice=NoticeRules(snooze=bounds))


def warned() -> WorkloadInfo:
    return (
        a_workload("team-a", "rc")
        .gpu_pod("rc-head-0")
        .annotated(keys.WARNED_AT, rfc3339(NOW - timedelta(minutes=5)))
        .annotated(keys.WARNED_UID, "uid-team-a-rc")
        .annotated(keys.STOP_PLANNED_AT, rfc3339(NOW + timedelta(minutes=10)))
        .build()
    )


def test_a_snooze_writes_the_workload_then_the_owner_shows_its_end_not_the_stop_then_an_event() -> (
    None
):
    workload = warned()
    cluster = FakeCluster([workload])
    grant = snooze(
        cluster,
        workload,
        until=NOW + timedelta(hours=4),
        by="alice",
        reason="still debugging",
        rule=a_rule(),
        now=NOW,
        logger=LOG,
    )
    assert grant.until == NOW + timedelta(hours=4)
    assert [name for name, _ in cluster.calls] == [
        "annotate_workload",
        "annotate_owner",
        "announce",
    ]
    [stored] = cluster.workloads
    assert stored.annotations[keys.SNOOZED_UNTIL] == rfc3339(NOW + timedelta(hours=4))
    assert cluster.owner_patches == [
        (
            workload.ref,
            {keys.SNOOZED_UNTIL: rfc3339(NOW + timedelta(hours=4)), keys.STOP_PLANNED_AT: None},
        )
    ], "the owner no longer shows the stop the snooze put off"
    assert stored.annotations[keys.SNOOZED_BY] == "alice"
    assert keys.WARNED_AT not in stored.annotations, "the warning is answered: a link is spent"


def test_a_snooze_longer_than_the_rule_allows_is_clipped_and_says_what_was_asked() -> None:
    workload = warned()
    cluster = FakeCluster([workload])
    grant = snooze(
        cluster,
        workload,
        until=NOW + timedelta(days=2),
        by="alice",
        reason="weekend",
        rule=a_rule(longest=timedelta(hours=8)),
        now=NOW,
        logger=LOG,
    )
    assert (grant.until, grant.clipped_from) == (NOW + timedelta(hours=8), NOW + timedelta(days=2))
    assert cluster.workloads[0].annotations[keys.SNOOZE_REQUESTED] == rfc3339(grant.clipped_from)


def test_a_refused_snooze_writes_nothing() -> None:
    workload = replace(warned(), annotations={**warned().annotations, keys.SNOOZES: rfc3339(NOW)})
    cluster = FakeCluster([workload])
    grant = snooze(
        cluster,
        workload,
        until=NOW + timedelta(hours=1),
        by="alice",
        reason="again",
        rule=a_rule(per_day=1),
        now=NOW,
        logger=LOG,
    )
    assert grant.refused is not None
    assert cluster.calls == []


class OwnerRefuses(FakeCluster):
    def annotate_owner(
        self, workload: WorkloadInfo, annotations: Mapping[str, str | None]
    ) -> Annotated:
        raise ClusterUnavailable("owner patch timed out")


def test_an_owner_that_cannot_be_annotated_leaves_the_snooze_standing() -> None:
    workload = warned()
    cluster = OwnerRefuses([workload])
    grant = snooze(
        cluster,
        workload,
        until=NOW + timedelta(hours=1),
        by="alice",
        reason="x",
        rule=a_rule(),
        now=NOW,
        logger=LOG,
    )
    assert grant.until == NOW + timedelta(hours=1)
    assert keys.SNOOZED_UNTIL in cluster.workloads[0].annotations
    assert cluster.calls[-1][0] == "announce"


def test_unsnoozing_removes_the_snooze_but_keeps_the_days_count() -> None:
    workload = warned()
    cluster = FakeCluster([workload])
    snooze(
        cluster,
        workload,
        until=NOW + timedelta(hours=1),
        by="alice",
        reason="x",
        rule=a_rule(),
        now=NOW,
        logger=LOG,
    )
    unsnooze(cluster, cluster.workloads[0], by="alice", logger=LOG)
    kept = cluster.workloads[0].annotations
    assert keys.SNOOZED_UNTIL not in kept
    assert kept[keys.SNOOZES] == rfc3339(NOW)
