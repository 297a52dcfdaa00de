"""What the Keep link's pages say, over real HTTP: the owner people know first, the Workload
in small print, times as `<time>` in UTC with how far away they are, only the page's own
style and script allowed (by hash), and on every refusal the next step."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterator
from datetime import timedelta
from html import unescape

import pytest

from autoscaler.api.context import SnoozeNotifications
from autoscaler.api.pages import command, relative
from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import time_text
from autoscaler.domain.audit.stopped import bring_back_command
from autoscaler.domain.models import WorkloadRef
from tests.api.rig import ApiRig
from tests.api.test_links import (
    TTL,
    RecordingSink,
    a_signer,
    link_path,
    linked_rig,
    signed_path,
    tampered,
    warn,
    warned,
    writes,
)
from tests.support.builders import RayClusterBuilder, make_raycluster

ANY_SNOOZE = "idle-gpu-autoscaler snooze NAMESPACE/NAME 4h"
COMMAND = re.compile(r'<p class="command"><code>(.*?)</code></p>')
TOKENS = re.compile(r"<span>[^<>]+</span>(?: <span>[^<>]+</span>)*")


@pytest.fixture
def rig() -> Iterator[ApiRig]:
    """The API with links signed as `test_links` signs them, its notices recorded."""
    with linked_rig(RecordingSink()) as running:
        yield running


def inline(page: str, tag: str) -> str:
    found = re.search(f"<{tag}>(.*?)</{tag}>", page, re.DOTALL)
    assert found is not None, page
    return found.group(1)


def text_of(markup: str) -> str:
    return re.sub(r"<[^>]+>", "", markup)


def commands(page: str) -> list[str]:
    """The page's command blocks as a browser copies them, each checked to hold one span per
    token (the style keeps a span whole on a line) and single spaces between."""
    blocks = COMMAND.findall(page)
    for block in blocks:
        assert TOKENS.fullmatch(block), block
    return [unescape(text_of(block)) for block in blocks]


def sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_the_confirm_page_allows_only_its_own_style_and_script_and_fits_a_phone(
    rig: ApiRig,
) -> None:
    _name, path = warned(rig)
    page = rig.http.get(path)
    policy = page.headers["content-security-policy"]

    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page.text
    assert f"style-src {sha256(inline(page.text, 'style'))};" in policy
    assert f"script-src {sha256(inline(page.text, 'script'))};" in policy
    assert "default-src 'none'" in policy and "unsafe-inline" not in policy
    assert "form-action 'self'" in policy and "http" not in policy  # nothing from outside


def test_the_confirm_page_names_the_owner_and_gives_the_stop_as_a_time(rig: ApiRig) -> None:
    name, path = warned(rig)  # warned 5 minutes ago: the stop is in 10
    stop = rig.now + timedelta(minutes=10)
    page = rig.http.get(path).text

    heading = inline(page, "h1")
    assert text_of(heading) == "Keep RayCluster team-a/alice-rc running?"
    assert '<span class="ns">team-a/</span><wbr>alice-rc' in heading  # wraps after "/" only
    readable = f"{stop.day} {stop:%b %Y, %H:%M} UTC"
    assert f'<time datetime="{time_text(stop)}">{readable}</time> (in 10 min)' in page
    assert f'<p class="detail">Its Kueue Workload: team-a/{name}.</p>' in page
    said = text_of(page)
    assert "If stopped, KubeRay deletes its pods; Kueue keeps it queued for later." in said
    # the button right after the text it answers; the admin's small print below it
    assert page.index("Keeping it snoozes") < page.index("<form") < page.index('"detail"')


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_tampered_link_says_to_copy_it_whole_or_ask_for_a_new_one(
    rig: ApiRig, method: str
) -> None:
    _name, path = warned(rig)
    page = rig.http.request(method, tampered(path))
    assert page.status_code == 403
    assert "ask for a new link" in page.text
    assert "This link cannot be used (tampered: the signature does not match)." in page.text
    assert commands(page.text) == [ANY_SNOOZE]


def test_an_expired_link_names_its_workload_and_the_command_that_keeps_it(rig: ApiRig) -> None:
    name, path = warned(rig)
    rig.clock.advance(TTL + timedelta(minutes=1))
    page = rig.http.get(path)
    assert page.status_code == 403
    assert "expired at <time datetime=" in page.text
    assert "(1 min ago)" in page.text
    assert commands(page.text) == [f"idle-gpu-autoscaler snooze team-a/{name} 4h"]


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_link_to_a_stopped_workload_says_when_and_how_to_bring_it_back(
    rig: ApiRig, method: str
) -> None:
    name, path = warned(rig)
    stopped_at = rig.now - timedelta(minutes=2)
    workload = rig.workload("team-a", name)
    workload["spec"]["active"] = False
    workload["metadata"]["annotations"][keys.DEACTIVATED_AT] = time_text(stopped_at)
    rig.kube.store.put(workload)
    rig.kube.requests.clear()

    page = rig.http.request(method, path)
    assert page.status_code == 409
    assert text_of(inline(page.text, "h1")) == "RayCluster team-a/alice-rc was already stopped"
    assert f'<time datetime="{time_text(stopped_at)}">' in page.text
    said = text_of(page.text)
    assert (
        "(2 min ago). KubeRay deletes its pods; Kueue keeps it queued for later.\n"
        "To bring it back:\n"
    ) in said  # the kind's words as sentences, the act's label ("suspended:") dropped
    assert commands(page.text) == [
        'idle-gpu-autoscaler reactivate -n team-a alice-rc --reason "back to work"'
    ]
    assert "Kueue admits it again when quota is free and KubeRay recreates its pods." in said
    assert writes(rig) == []


def test_a_used_link_says_until_when_it_is_kept_and_how_to_see_it(rig: ApiRig) -> None:
    _name, path = warned(rig)
    assert rig.http.post(path).status_code == 200
    page = rig.http.get(path)
    assert page.status_code == 409
    kept_until = rig.now + timedelta(hours=4)
    assert f'It is kept until <time datetime="{time_text(kept_until)}">' in page.text
    assert commands(page.text) == ["idle-gpu-autoscaler status alice-rc -n team-a"]


def test_a_link_to_a_workload_gone_says_where_to_look(rig: ApiRig) -> None:
    name, path = warned(rig)
    rig.kube.store.delete("workloads.kueue.x-k8s.io", name=name, namespace="team-a")
    page = rig.http.get(path)
    assert page.status_code == 404
    assert commands(page.text) == ["idle-gpu-autoscaler status -n team-a"]


def test_with_links_off_the_page_says_how_to_keep_it_from_a_terminal() -> None:
    with ApiRig() as running:
        name = running.add_raycluster("team-a", "alice-rc")
        warned_at = running.now - timedelta(minutes=5)
        warn(running, name, at=warned_at)
        page = running.http.get(link_path(running, name, warned_at=warned_at))
    assert page.status_code == 404
    assert commands(page.text) == [ANY_SNOOZE]


@pytest.mark.parametrize(
    ("span", "said"),
    [
        (timedelta(hours=3, minutes=20), "in 3 h 20 min"),
        (timedelta(minutes=-15), "15 min ago"),
        (timedelta(days=1, hours=2, minutes=3), "in 1 d 2 h"),
        (timedelta(days=2, minutes=5), "in 2 d"),
        (timedelta(seconds=20), "now"),
        (timedelta(seconds=-40), "1 min ago"),
    ],
)
def test_how_far_a_time_is_is_said_in_its_two_largest_units(span: timedelta, said: str) -> None:
    assert relative(span) == said


def test_a_command_block_copies_as_the_command_the_shell_reads_with_its_markup_escaped() -> None:
    block = command("idle-gpu-autoscaler", "explain", "a<b>", "--reason", "needed again")
    assert commands(block) == ["idle-gpu-autoscaler explain 'a<b>' --reason 'needed again'"]
    assert "<b>" not in block


@pytest.mark.parametrize(
    "builder",
    [
        pytest.param(make_raycluster("team-a", "plain-rc"), id="plain-kuberay"),
        pytest.param(make_raycluster("team-a", "plain-rc").kai_queue("research"), id="kai"),
    ],
)
def test_a_link_to_a_raycluster_suspended_by_the_service_says_already_stopped(
    builder: RayClusterBuilder,
) -> None:
    """A RayCluster no Workload admits, stopped through `spec.suspend`: our annotations are on
    the RayCluster, and the page gives the command `status` gives."""
    stopped_at_text = "2026-01-01T00:00:00Z"
    notices = SnoozeNotifications(links=a_signer())
    with ApiRig(notices=notices, suspending=("kai", "kuberay")) as running:
        stopped_at = running.now - timedelta(minutes=2)
        stopped_at_text = time_text(stopped_at)
        raycluster = builder.head(gpus=1).suspended().annotation(keys.SUSPEND_WAS, "absent")
        raycluster.annotation(keys.DEACTIVATED_AT, stopped_at_text)
        uid = running.kube.store.put(raycluster.build())["metadata"]["uid"]
        ref = WorkloadRef("team-a", "plain-rc")
        row = running.cluster.get_workload(ref)
        assert row is not None and not row.active
        path = signed_path(running, ref, uid=uid, warned_at=stopped_at - timedelta(minutes=15))
        page = running.http.get(path)
        running.cycle()
        status = running.reader.get("/api/v1/workloads/team-a/plain-rc").json()
    assert page.status_code == 409, page.text
    assert text_of(inline(page.text, "h1")) == "RayCluster team-a/plain-rc was already stopped"
    assert f'<time datetime="{stopped_at_text}">' in page.text
    assert commands(page.text) == [bring_back_command(row)]
    assert commands(page.text) == [status["stopped"]["bringBack"]]


@pytest.mark.parametrize("marked", ["workload", "owner"])
def test_a_link_to_a_stopped_kueue_raycluster_gives_the_command_status_gives(
    rig: ApiRig, marked: str
) -> None:
    """Our stop's time on the Workload, or only on its owner's copy: either is the stop."""
    name, path = warned(rig)
    workload = rig.workload("team-a", name)
    workload["spec"]["active"] = False
    stamped = workload if marked == "workload" else rig.owner("team-a", "alice-rc")
    stamped["metadata"].setdefault("annotations", {})[keys.DEACTIVATED_AT] = time_text(rig.now)
    rig.kube.store.put(workload)
    rig.kube.store.put(stamped)
    page = rig.http.get(path)
    rig.cycle()
    status = rig.reader.get("/api/v1/workloads/team-a/alice-rc").json()
    assert page.status_code == 409
    assert text_of(inline(page.text, "h1")) == "RayCluster team-a/alice-rc was already stopped"
    assert commands(page.text) == [status["stopped"]["bringBack"]]
