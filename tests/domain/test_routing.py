"""Where a workload's notifications go, as a decision table: the namespace's annotation over
its label, over the rule's `notify`, over the settings' defaults; `none` means Events only.

Unless a row says otherwise the rule notifies `rule-team`, the defaults are `ops`, and the
namespace carries neither annotation nor label.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from autoscaler.domain.annotations import NOTIFY
from autoscaler.domain.notices.notice import NoticeRules
from autoscaler.domain.notices.routing import targets_for
from autoscaler.domain.policy.rules import Rule
from autoscaler.domain.usage.idleness import UsageRules
from tests.support.domain_builders import HOUR, THRESHOLD, a_workload

USAGE = UsageRules(
    threshold=THRESHOLD,
    window=HOUR,
    slot=timedelta(minutes=1),
    min_coverage=0.8,
    stale_after=timedelta(minutes=3),
)
RULE = Rule("gpu", usage=USAGE, grace_period=HOUR, notice=NoticeRules(notify=("rule-team",)))
SILENT_RULE = replace(RULE, notice=NoticeRules())
DEFAULTS = ("ops",)


def routed(
    *,
    annotation: str | None = None,
    label: str | None = None,
    rule: Rule = RULE,
    defaults: tuple[str, ...] = DEFAULTS,
) -> tuple[str, ...]:
    workload = replace(
        a_workload("team-a", "rc").build(),
        namespace_annotations=None if annotation is None else {NOTIFY: annotation},
        namespace_labels=None if label is None else {NOTIFY: label},
    )
    return targets_for(workload, rule=rule, defaults=defaults)


ROWS = [
    pytest.param({"annotation": "team-a-slack"}, ("team-a-slack",), id="annotation-names-one"),
    pytest.param(
        {"annotation": " slack , pager,slack "},
        ("slack", "pager"),
        id="annotation-list-is-trimmed-deduplicated-and-kept-in-order",
    ),
    pytest.param(
        {"annotation": "slack", "label": "pager"}, ("slack",), id="annotation-wins-over-label"
    ),
    pytest.param({"label": "pager"}, ("pager",), id="label-when-no-annotation"),
    pytest.param({}, ("rule-team",), id="rule-when-namespace-names-none"),
    pytest.param({"rule": SILENT_RULE}, ("ops",), id="defaults-when-rule-names-none"),
    pytest.param({"rule": SILENT_RULE, "defaults": ()}, (), id="nothing-named-events-only"),
    pytest.param({"annotation": "none"}, (), id="annotation-none-means-events-only"),
    pytest.param({"annotation": "None"}, (), id="none-is-read-in-any-case"),
    pytest.param({"label": "none"}, (), id="label-none-means-events-only"),
    pytest.param(
        {"annotation": "none", "label": "pager"}, (), id="annotation-none-wins-over-label"
    ),
    pytest.param({"annotation": " , "}, ("rule-team",), id="empty-annotation-falls-through"),
    pytest.param(
        {"annotation": "no-such-target"},
        ("no-such-target",),
        id="unknown-name-is-kept-for-the-dispatcher-to-report",
    ),
]


@pytest.mark.parametrize(("where", "expected"), ROWS)
def test_notifications_go_to_the_targets_named_nearest_the_workload(
    where: dict[str, Any], expected: tuple[str, ...]
) -> None:
    assert routed(**where) == expected


def test_an_unreadable_namespace_falls_back_to_the_rule() -> None:
    workload = a_workload("team-a", "rc").build()  # namespace facts None: not read
    assert targets_for(workload, rule=RULE, defaults=DEFAULTS) == ("rule-team",)
