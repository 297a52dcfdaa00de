"""The maximum exemption length applied to hand-set annotations (pure, then over HTTP)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import time_text
from autoscaler.domain.exemptions import EXEMPT_UNTIL_REQUESTED, INDEFINITE, cut_to_limit
from autoscaler.domain.policy.rules import ExemptionBounds
from autoscaler.settings.api import ApiSettings
from tests.api.rig import ApiRig
from tests.support.builders import make_raycluster
from tests.support.domain_builders import NOW, a_policy, with_default
from tests.support.ray_rig import put_raycluster

WEEK = timedelta(days=7)
LIMIT = time_text(NOW + WEEK)


@pytest.mark.parametrize(
    ("annotations", "allow_indefinite", "patch"),
    [
        pytest.param(
            {keys.EXEMPT_UNTIL: time_text(NOW + timedelta(days=30))},
            True,
            {keys.EXEMPT_UNTIL: LIMIT, EXEMPT_UNTIL_REQUESTED: time_text(NOW + timedelta(days=30))},
            id="a-month-is-cut-to-a-week",
        ),
        pytest.param(
            {keys.EXEMPT_UNTIL: time_text(NOW + WEEK)}, True, None, id="exactly-the-maximum-stays"
        ),
        pytest.param(
            {keys.EXEMPT_UNTIL: time_text(NOW - timedelta(days=1))}, True, None, id="expired-stays"
        ),
        pytest.param({keys.EXEMPT_UNTIL: "next tuesday"}, True, None, id="unreadable-stays"),
        pytest.param({keys.EXEMPT: "true"}, True, None, id="indefinite-allowed-stays"),
        pytest.param(
            {keys.EXEMPT: "True"},
            False,
            {keys.EXEMPT: None, keys.EXEMPT_UNTIL: LIMIT, EXEMPT_UNTIL_REQUESTED: INDEFINITE},
            id="indefinite-forbidden-becomes-the-maximum",
        ),
        pytest.param({}, False, None, id="nothing-to-cut"),
    ],
)
def test_cut_to_limit(
    annotations: dict[str, str], allow_indefinite: bool, patch: dict[str, str | None] | None
) -> None:
    found = cut_to_limit(annotations, now=NOW, maximum=WEEK, allow_indefinite=allow_indefinite)
    assert found == patch


def test_a_forbidden_indefinite_exemption_on_a_workload_becomes_the_maximum() -> None:
    settings = ApiSettings(host="127.0.0.1", port=0, allow_indefinite_exemption=False)
    a_day = ExemptionBounds(max_duration=timedelta(days=1))  # the default rule's
    policy = with_default(a_policy(dry_run=True), exemptions=a_day)
    with ApiRig(settings=settings, policy=policy) as rig:
        name = rig.add_raycluster("team-a", "alice-rc")
        workload = rig.workload("team-a", name)
        workload["metadata"]["annotations"] = {keys.EXEMPT: "true"}
        rig.kube.store.put(workload)
        rig.cycle()
        annotations = rig.workload("team-a", name)["metadata"]["annotations"]
        assert annotations == {
            keys.EXEMPT_UNTIL: time_text(rig.now + timedelta(days=1)),
            EXEMPT_UNTIL_REQUESTED: INDEFINITE,
        }
        rig.clock.advance(timedelta(days=1, seconds=1))
        assert rig.cycle().workloads[0].decision.state == "idle"


def test_an_over_long_exemption_on_a_raycluster_we_suspend_ourselves_is_cut_once() -> None:
    """Its own annotations are its owner's: one patch and one record, not one per source."""
    with ApiRig(suspending=("kuberay",)) as rig:
        original = time_text(rig.now + timedelta(days=30))
        plain = make_raycluster("team-a", "plain-rc").annotation(keys.EXEMPT_UNTIL, original)
        put_raycluster(rig.kube, plain)
        rig.cycle()
        patches = [r for r in rig.kube.requests.writes() if "rayclusters" in r.path]
        assert [r.body["metadata"]["annotations"] for r in patches] == [
            {keys.EXEMPT_UNTIL: time_text(rig.now + WEEK), EXEMPT_UNTIL_REQUESTED: original}
        ]
        records = rig.reader.get("/api/v1/decisions").json()["items"]
        assert [r["action"] for r in records if r["action"] == "cut-exemption"] == ["cut-exemption"]
