"""The workload listing is rendered once per snapshot and filter (issue 18), and a kept
rendering never answers for something it does not show: a newer cycle, another filter, or an
exemption that has run out since."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from autoscaler.domain.annotations import EXEMPT_UNTIL, time_text
from tests.api.rig import ApiRig


def listing(rig: ApiRig, **query: str) -> dict[str, Any]:
    answer = rig.reader.get("/api/v1/workloads", params=query)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/json"
    body: dict[str, Any] = answer.json()
    return body


def owners(body: dict[str, Any]) -> set[str]:
    return {item["owner"]["name"] for item in body["items"]}


def test_each_cycle_is_listed_as_soon_as_it_is_published(rig: ApiRig) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    assert (listing(rig)["snapshot"]["cycle"], owners(listing(rig))) == (1, {"alice-rc"})
    rig.add_raycluster("team-b", "bob-rc")
    rig.cycle()
    assert (listing(rig)["snapshot"]["cycle"], owners(listing(rig))) == (2, {"alice-rc", "bob-rc"})


def test_each_filter_is_answered_for_itself_in_any_order(rig: ApiRig) -> None:
    rig.add_raycluster("team-a", "alice-rc", peak=0.01)
    rig.add_raycluster("team-b", "bob-rc", peak=0.9)
    rig.cycle()
    for _ in range(2):
        assert owners(listing(rig)) == {"alice-rc", "bob-rc"}
        assert owners(listing(rig, namespace="team-a")) == {"alice-rc"}
        assert owners(listing(rig, state="busy")) == {"bob-rc"}
        assert owners(listing(rig, namespace="team-a", state="busy")) == set()


def test_an_exemption_that_runs_out_between_cycles_leaves_the_listing_at_once(
    rig: ApiRig,
) -> None:
    until = rig.now + timedelta(minutes=10)
    rig.add_raycluster("team-a", "alice-rc", annotations={EXEMPT_UNTIL: time_text(until)})
    rig.add_raycluster("team-b", "bob-rc")
    rig.cycle()
    [alice] = [i for i in listing(rig)["items"] if i["owner"]["name"] == "alice-rc"]
    assert alice["exemption"]["onOwner"] is True
    rig.clock.advance(timedelta(minutes=11))  # no cycle runs
    body = listing(rig)
    assert body["snapshot"]["cycle"] == 1
    assert [i["exemption"] for i in body["items"]] == [None, None]


def test_before_the_first_cycle_the_listing_is_empty_and_then_fills(rig: ApiRig) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    assert listing(rig) == {"snapshot": None, "items": []}
    rig.cycle()
    assert owners(listing(rig)) == {"alice-rc"}
