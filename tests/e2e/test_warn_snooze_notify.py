"""End to end, "no stop without notice" where the parts meet: the real `serve` process on the
test API server and the live Prometheus, real webhook receivers on loopback, and the signed
links followed over HTTP as a person's browser (and a link scanner) would.

One namespace names three targets in its `notify` annotation (no default targets, no rule
`notify`: only the annotation routes): `team-hook` answers and verifies our HMAC header,
`slow-hook` hangs past its timeout, `broken-hook` answers 500 (tests/support/notice_rig.py).
Two RayClusters go idle:
- `keep` is warned; its Keep link is fetched (GET: nothing changes), posted (a snooze clipped
  to the rule's bound, audited as `link:team-hook`), posted again (refused, nothing written);
  it is warned again before the snooze ends and stopped once the snooze is over, on time,
  though two of the three receivers never answered well;
- `clear` is warned, gets busy again, and is told the all-clear; it is never stopped.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import parse_time
from tests.conftest import LiveMetrics
from tests.support.kube_server import KubeServer
from tests.support.notice_rig import (
    LINK_SNOOZE_S,
    MAX_SNOOZE_S,
    TARGETS,
    WARN_BEFORE_S,
    Metrics,
    NoticeRig,
    failures,
    poll,
    retries,
)
from tests.support.webhook_receiver import Received

pytestmark = pytest.mark.slow

READER = "notice-reader"  # a bearer token that may read Workloads, so the audit trail
IN_TIME_S = 4.0  # a due stop happens within a loop interval, a cycle and a request or two
WARNING_ANNOTATIONS = (keys.WARNED_AT, keys.WARNED_UID, keys.STOP_PLANNED_AT)


@pytest.fixture(scope="module")
def rig(
    kube_server: KubeServer, live_metrics: LiveMetrics, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[NoticeRig]:
    kube_server.reviews.add_token(READER, username=READER)
    kube_server.reviews.allow(
        user=READER, verb="list", group="kueue.x-k8s.io", resource="workloads"
    )
    files = tmp_path_factory.mktemp("warn-snooze")
    with NoticeRig.running(kube_server, live_metrics, files=files) as rig:
        yield rig


@dataclass
class Story:
    """What was seen, step by step (each test checks one part of it)."""

    namespace: dict[str, Any]
    warning: Received  # keep's first warning, as team-hook received it
    warned: dict[str, str]  # keep's annotations then
    confirm: httpx.Response  # GET of its Keep link
    after_get: dict[str, str]
    active_after_get: bool
    posted_at: datetime
    kept: httpx.Response  # POST of the link
    snoozed: dict[str, str]
    replay: httpx.Response  # the same POST again
    after_replay: dict[str, str]
    audit: list[dict[str, Any]]
    clear_warning: Received
    all_clear: Received
    clear_after: dict[str, str]
    rewarning: Received  # keep's warning ahead of its snooze's end
    stopped_at: datetime
    deactivated: Received
    cycles: tuple[int, int]  # logged by the service when keep was warned, and once it stopped
    seconds: float  # between those two moments
    clear_active: bool
    metrics: Metrics


@pytest.fixture(scope="module")
def story(rig: NoticeRig) -> Story:
    warning = rig.wait_told("keep", "warning", within=30)
    began, cycles_then = time.monotonic(), rig.cycles()
    clear_warning = rig.wait_told("clear", "warning", within=10)
    rig.busy("clear")
    warned = rig.annotations("keep")
    link = warning.json()["links"][0]["url"]
    confirm = httpx.get(link, timeout=5)  # a link scanner, or a chat unfurling it
    after_get, active_after_get = rig.annotations("keep"), rig.active("keep")
    posted_at = datetime.now(UTC)
    kept = httpx.post(link, timeout=5)
    snoozed = rig.annotations("keep")
    replay = httpx.post(link, timeout=5)
    after_replay = rig.annotations("keep")
    audit = httpx.get(
        f"{rig.api}/api/v1/decisions",
        params={"namespace": rig.namespace},
        headers={"Authorization": f"Bearer {READER}"},
        timeout=5,
    )
    assert audit.status_code == 200, audit.text
    all_clear = rig.wait_told("clear", "all-clear", within=10)
    clear_after = rig.annotations("clear")
    rewarning = rig.wait_told("keep", "warning", count=2, within=MAX_SNOOZE_S + 5)
    poll(lambda: "keep" in rig.stops.at, within=MAX_SNOOZE_S + 10, what="keep stopped")
    cycles_now, seconds = rig.cycles(), time.monotonic() - began
    deactivated = rig.wait_told("keep", "deactivated", within=5)
    return Story(
        namespace=rig.server.store.get("namespaces", name=rig.namespace),
        warning=warning,
        warned=warned,
        confirm=confirm,
        after_get=after_get,
        active_after_get=active_after_get,
        posted_at=posted_at,
        kept=kept,
        snoozed=snoozed,
        replay=replay,
        after_replay=after_replay,
        audit=audit.json()["items"],
        clear_warning=clear_warning,
        all_clear=all_clear,
        clear_after=clear_after,
        rewarning=rewarning,
        stopped_at=rig.stops.at["keep"],
        deactivated=deactivated,
        cycles=(cycles_then, cycles_now),
        seconds=seconds,
        clear_active=rig.active("clear"),
        metrics=poll(lambda: _failures_counted(rig), within=10, what="failures counted"),
    )


def _failures_counted(rig: NoticeRig) -> Metrics | None:
    """The metrics once both bad receivers' first warnings have used up their retries."""
    metrics = rig.metrics()
    failed = [failures(metrics, target) for target in ("slow-hook", "broken-hook")]
    return metrics if all(failed) else None


def at(text: str | None) -> datetime:
    parsed = parse_time(text or "")
    assert parsed is not None, f"not a time: {text!r}"
    return parsed


def test_the_namespace_annotation_alone_routes_the_warning_to_its_three_targets(
    rig: NoticeRig, story: Story
) -> None:
    assert story.namespace["metadata"]["annotations"][keys.NOTIFY] == ",".join(TARGETS)
    for target in TARGETS:  # no default targets, no rule's notify: only the annotation names them
        assert rig.told("keep", "warning", target=target), f"{target} heard nothing of it"
        unsigned = [r for r in rig.hooks[target].received if r.verified is not True]
        assert unsigned == [], f"{target} could not verify {len(unsigned)} requests"


def test_the_warning_arrives_signed_with_a_stop_ahead_and_a_keep_link(story: Story) -> None:
    payload = story.warning.json()
    assert story.warning.verified is True  # the receiver recomputed our HMAC header
    assert payload["kind"] == "warning"
    assert at(payload["stopAt"]) >= at(payload["warnedAt"]) + timedelta(seconds=WARN_BEFORE_S)
    assert at(payload["stopAt"]) > story.posted_at  # still ahead when the link was followed
    [link] = payload["links"]
    assert "/v1/links/snooze/" in link["url"]
    assert link["snoozeSeconds"] == LINK_SNOOZE_S
    assert at(story.warned[keys.WARNED_AT]) == at(payload["warnedAt"])
    assert at(story.warned[keys.STOP_PLANNED_AT]) == at(payload["stopAt"])


def test_fetching_the_link_shows_a_confirm_page_and_changes_nothing(story: Story) -> None:
    assert story.confirm.status_code == 200, story.confirm.text
    assert story.confirm.headers["content-type"].startswith("text/html")
    assert "<form" in story.confirm.text
    assert story.after_get == story.warned
    assert story.active_after_get is True


def test_posting_the_link_snoozes_clipped_to_the_rules_bound_past_the_warned_stop(
    story: Story,
) -> None:
    assert story.kept.status_code == 200, story.kept.text
    assert "longest snooze its rule allows" in story.kept.text
    until = at(story.snoozed[keys.SNOOZED_UNTIL])
    bound = timedelta(seconds=MAX_SNOOZE_S)
    assert story.posted_at + bound - timedelta(seconds=1) <= until
    assert until <= story.posted_at + bound + timedelta(seconds=1)
    asked = at(story.snoozed[keys.SNOOZE_REQUESTED]) - story.posted_at
    assert asked >= timedelta(seconds=LINK_SNOOZE_S - 1)  # what the link asked, kept
    assert until > at(story.warning.json()["stopAt"])  # the deadline moved back
    assert story.snoozed[keys.SNOOZED_BY] == "link:team-hook"
    assert not set(WARNING_ANNOTATIONS) & set(story.snoozed)  # the warning is answered


def test_the_snooze_is_audited_with_the_links_recipient_as_the_actor(
    rig: NoticeRig, story: Story
) -> None:
    by_link = [record for record in story.audit if record["actor"] == "link:team-hook"]
    assert len(by_link) == 1, story.audit
    assert by_link[0]["namespace"] == rig.namespace


def test_the_same_link_posted_again_is_refused_and_writes_nothing(story: Story) -> None:
    assert story.replay.status_code == 409, story.replay.text
    assert story.after_replay == story.snoozed


def test_the_stop_comes_after_the_snooze_and_after_a_fresh_warning(story: Story) -> None:
    until = at(story.snoozed[keys.SNOOZED_UNTIL])
    rewarning = story.rewarning.json()
    assert story.rewarning.verified is True
    assert at(rewarning["warnedAt"]) >= story.posted_at.replace(microsecond=0)
    assert at(rewarning["stopAt"]) >= until
    assert story.stopped_at >= until
    assert story.stopped_at >= at(rewarning["stopAt"])
    assert story.deactivated.json()["kind"] == "deactivated"
    assert story.deactivated.verified is True


def test_receivers_that_hang_or_fail_never_hold_up_the_loop(story: Story) -> None:
    planned = at(story.rewarning.json()["stopAt"])
    late = (story.stopped_at - planned).total_seconds()
    assert late <= IN_TIME_S, f"stopped {late:.1f}s after the planned time"
    ran = story.cycles[1] - story.cycles[0]
    assert ran >= story.seconds / 2, f"{ran} cycles in {story.seconds:.0f}s (interval 1s)"
    for target in ("slow-hook", "broken-hook"):
        assert retries(story.metrics, target) > 0, target
        assert failures(story.metrics, target) > 0, target
    assert failures(story.metrics, "team-hook") == 0


def test_a_workload_busy_again_after_its_warning_is_told_all_clear_and_not_stopped(
    rig: NoticeRig, story: Story
) -> None:
    assert story.clear_warning.verified is True
    assert story.all_clear.verified is True
    assert story.all_clear.json()["kind"] == "all-clear"
    assert not set(WARNING_ANNOTATIONS) & set(story.clear_after)
    assert story.clear_active is True
    assert "clear" not in rig.stops.at
