"""The signed "keep it" links of a warning, over real HTTP on loopback with no bearer token:
GET shows a confirm page and changes nothing (scanners and unfurlers fetch GETs); POST
snoozes once, audited as `link:<recipient>`; a replayed, tampered, expired or re-aimed link
does nothing."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from autoscaler.api.context import SnoozeNotifications
from autoscaler.compose.api import snooze_notifications
from autoscaler.compose.notify import build_notifications
from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import time_text
from autoscaler.domain.models import WorkloadInfo, WorkloadRef
from autoscaler.domain.notices.notifications import NoticeKind, Notification
from autoscaler.domain.notices.routing import targets_for
from autoscaler.domain.policy.rules import Rule
from autoscaler.engine.notify.links import LinkSigner
from autoscaler.engine.notify.notices import NoticeTeller
from autoscaler.settings.tree import Settings
from tests.api.rig import ApiRig
from tests.support.decision_builders import a_decision, with_decision
from tests.support.webhook_receiver import WEBHOOK_SECRET, WebhookReceiver

KEY = b"a-test-signing-key-of-32-bytes!!"
RECIPIENT = "team-a-chat"
TTL = timedelta(hours=24)


@dataclass
class RecordingSink:
    """The NotificationSink port: what the API handed over, and to whom."""

    sent: list[tuple[Notification, tuple[str, ...]]] = field(default_factory=list)

    def submit(self, notification: Notification, *, targets: Sequence[str]) -> None:
        self.sent.append((notification, tuple(targets)))


def a_signer() -> LinkSigner:
    return LinkSigner(
        key=KEY, base_url="https://idle-gpu.example.com", ttl=TTL, choices=[timedelta(hours=4)]
    )


@pytest.fixture
def sink() -> RecordingSink:
    return RecordingSink()


@contextmanager
def linked_rig(sink: RecordingSink) -> Iterator[ApiRig]:
    """The API with links signed by `a_signer`, its notices handed to `sink`; the test API
    server saw no error."""

    def route(workload: WorkloadInfo, rule: Rule) -> tuple[str, ...]:
        return targets_for(workload, rule=rule, defaults=(RECIPIENT,))

    notices = SnoozeNotifications(links=a_signer(), loop=NoticeTeller(sink=sink, route=route))
    with ApiRig(notices=notices) as running:
        yield running
    assert running.kube.errors == []


@pytest.fixture
def rig(sink: RecordingSink) -> Iterator[ApiRig]:
    with linked_rig(sink) as running:
        yield running


def warn(rig: ApiRig, name: str, *, at: datetime) -> None:
    """The warning as the loop writes it on the Workload."""
    workload = rig.workload("team-a", name)
    workload["metadata"].setdefault("annotations", {}).update(
        {
            keys.WARNED_AT: time_text(at),
            keys.WARNED_UID: workload["metadata"]["uid"],
            keys.STOP_PLANNED_AT: time_text(at + timedelta(minutes=15)),
        }
    )
    rig.kube.store.put(workload)


def link_path(rig: ApiRig, name: str, *, warned_at: datetime) -> str:
    """The path of the Keep 4h link the warning's notification carried."""
    uid = rig.workload("team-a", name)["metadata"]["uid"]
    return signed_path(rig, WorkloadRef("team-a", name), uid=uid, warned_at=warned_at)


def signed_path(rig: ApiRig, ref: WorkloadRef, *, uid: str, warned_at: datetime) -> str:
    """The path of the Keep 4h link a warning of `ref` (its UID `uid`) carried."""
    warning = Notification(
        kind=NoticeKind.WARNING,
        workload=ref,
        uid=uid,
        owner=None,
        rule="default",
        reason="idle",
        at=warned_at,
        warned_at=warned_at,
    )
    [link] = a_signer().links(warning, recipient=RECIPIENT, now=rig.now)
    return link.url.removeprefix("https://idle-gpu.example.com")


def warned(rig: ApiRig, owner: str = "alice-rc") -> tuple[str, str]:
    """A warned RayCluster's Workload name, and its link's path."""
    name = rig.add_raycluster("team-a", owner)
    warned_at = rig.now - timedelta(minutes=5)
    warn(rig, name, at=warned_at)
    return name, link_path(rig, name, warned_at=warned_at)


def annotations_of(obj: dict[str, Any]) -> dict[str, str]:
    return dict(obj["metadata"].get("annotations") or {})


def writes(rig: ApiRig) -> list[str]:
    return [f"{r.method} {r.path}" for r in rig.kube.requests.writes()]


def test_opening_a_link_shows_a_confirm_page_and_changes_nothing(rig: ApiRig) -> None:
    name, path = warned(rig)
    before = annotations_of(rig.workload("team-a", name))
    rig.kube.requests.clear()
    for _ in range(2):  # an unfurler's fetch, then the person's: both see the same page
        page = rig.http.get(path)
        assert page.status_code == 200, page.text
        assert f"team-a/{name}" in page.text
        assert "<title>Keep RayCluster team-a/alice-rc running?</title>" in page.text
        assert "If stopped, KubeRay deletes its pods; Kueue keeps it queued" in page.text
        assert time_text(rig.now + timedelta(minutes=10)) in page.text  # the planned stop
        assert '<form method="post"><button type="submit">Keep it for 4h</button>' in page.text
    assert page.headers["cache-control"] == "no-store"
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert writes(rig) == []
    assert annotations_of(rig.workload("team-a", name)) == before


def test_pressing_the_button_snoozes_audited_with_the_links_recipient_and_told(
    rig: ApiRig, sink: RecordingSink
) -> None:
    name, path = warned(rig)
    rig.http.get(path)  # prefetched first: the POST still works
    kept = rig.http.post(path)
    assert kept.status_code == 200, kept.text
    until = time_text(rig.now + timedelta(hours=4))
    assert until in kept.text
    written = annotations_of(rig.workload("team-a", name))
    assert written[keys.SNOOZED_UNTIL] == until
    assert written[keys.SNOOZED_BY] == f"link:{RECIPIENT}"
    assert keys.WARNED_AT not in written
    records = rig.reader.get("/api/v1/decisions").json()["items"]
    [record] = [r for r in records if r["action"] == "snooze"]
    assert record["actor"] == f"link:{RECIPIENT}"
    [(told, targets)] = sink.sent
    assert (told.kind, told.snoozed_until, targets) == (
        NoticeKind.SNOOZED,
        rig.now + timedelta(hours=4),
        (RECIPIENT,),
    )


def test_a_replayed_link_is_409_and_writes_nothing(rig: ApiRig, sink: RecordingSink) -> None:
    name, path = warned(rig)
    assert rig.http.post(path).status_code == 200
    after_first = annotations_of(rig.workload("team-a", name))
    rig.kube.requests.clear()
    replay = rig.http.post(path)
    assert replay.status_code == 409
    assert "already used" in replay.text
    assert writes(rig) == []
    assert annotations_of(rig.workload("team-a", name)) == after_first
    assert rig.http.get(path).status_code == 409  # the page says so too
    assert len(sink.sent) == 1


def test_a_click_that_loses_the_race_to_another_is_409_already_used_and_writes_nothing(
    rig: ApiRig, sink: RecordingSink
) -> None:
    name, path = warned(rig)
    # Another click landed between this one's read and its patch: the patch's
    # resourceVersion no longer matches.
    rig.kube.faults.fail_next("PATCH", "/apis/kueue.x-k8s.io", status=409)
    raced = rig.http.post(path)
    assert raced.status_code == 409
    assert "already used" in raced.text
    assert keys.SNOOZED_UNTIL not in annotations_of(rig.workload("team-a", name))
    assert [
        r for r in rig.reader.get("/api/v1/decisions").json()["items"] if r["action"] == "snooze"
    ] == []
    assert sink.sent == []


def test_a_link_to_an_earlier_warning_does_nothing_once_a_new_one_was_given(
    rig: ApiRig,
) -> None:
    name, path = warned(rig)
    warn(rig, name, at=rig.now - timedelta(minutes=1))  # a later warning, a later link
    rig.kube.requests.clear()
    assert rig.http.post(path).status_code == 409
    assert writes(rig) == []


def tampered(path: str) -> str:
    """The signature's last character changed."""
    last = path[-1]
    return path[:-1] + ("A" if last != "A" else "B")


def aimed_at(path: str, other: str) -> str:
    """The payload rewritten to name another Workload, the signature kept."""
    prefix, token = path.rsplit("/", 1)
    payload, mac = token.split(".")
    fields = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    fields["name"] = other
    raw = base64.urlsafe_b64encode(json.dumps(fields).encode()).rstrip(b"=").decode()
    return f"{prefix}/{raw}.{mac}"


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_tampered_link_is_refused_with_403(rig: ApiRig, method: str) -> None:
    _name, path = warned(rig)
    rig.kube.requests.clear()
    refused = rig.http.request(method, tampered(path))
    assert refused.status_code == 403
    assert "tampered" in refused.text
    assert writes(rig) == []


def test_an_expired_link_is_refused_with_403(rig: ApiRig) -> None:
    _name, path = warned(rig)
    rig.clock.advance(TTL + timedelta(minutes=1))
    refused = rig.http.post(path)
    assert refused.status_code == 403
    assert "expired" in refused.text


def test_a_link_for_one_workload_cannot_snooze_another(rig: ApiRig) -> None:
    _name, path = warned(rig, "alice-rc")
    other, _other_path = warned(rig, "other-rc")
    before = annotations_of(rig.workload("team-a", other))
    refused = rig.http.post(aimed_at(path, other))
    assert refused.status_code == 403
    assert annotations_of(rig.workload("team-a", other)) == before


def test_links_need_no_bearer_token_but_nothing_beside_them_is_opened(rig: ApiRig) -> None:
    _name, path = warned(rig)
    assert rig.http.post(path + "/more").status_code == 401
    assert rig.http.post("/v1/links/snooze/").status_code == 401
    assert rig.http.post("/api/v1/workloads/team-a/alice-rc/snooze", json={}).status_code == 401


WORKLOADS = "/apis/kueue.x-k8s.io"


@pytest.mark.parametrize(
    ("method", "failing"),
    [
        pytest.param("GET", "GET", id="confirm-page-cannot-read-the-workload"),
        pytest.param("POST", "GET", id="button-cannot-read-the-workload"),
        pytest.param("POST", "PATCH", id="button-cannot-write-the-snooze"),
    ],
)
def test_a_failing_kubernetes_api_is_a_503_page_not_json(
    rig: ApiRig, sink: RecordingSink, method: str, failing: str
) -> None:
    name, path = warned(rig)
    before = annotations_of(rig.workload("team-a", name))
    rig.kube.faults.fail_next(failing, WORKLOADS, status=503)
    refused = rig.http.request(method, path)
    assert refused.status_code == 503
    assert refused.headers["content-type"].startswith("text/html")
    assert "Not available now" in refused.text
    assert annotations_of(rig.workload("team-a", name)) == before
    assert sink.sent == []
    assert rig.http.post(path).status_code == 200  # the same link works once the API is back


def test_with_links_off_the_link_routes_answer_404() -> None:
    with ApiRig() as rig:
        _name, path = warned(rig)
        assert rig.http.get(path).status_code == 404
        assert rig.http.post(path).status_code == 404


def test_the_warnings_webhook_carries_a_link_that_snoozes_and_the_snooze_is_told_too(
    tmp_path: Path, webhook_receiver: WebhookReceiver
) -> None:
    """The composed chain: `build_notifications` → `snooze_notifications` → the API; the
    warning goes signed to a real receiver on loopback, its Keep link is followed, and the
    SNOOZED notification reaches the same receiver."""
    (tmp_path / "key").write_bytes(KEY)
    (tmp_path / "hmac").write_bytes(WEBHOOK_SECRET)
    section = {
        "targets": {
            "team-hook": {
                "type": "webhook",
                "url": webhook_receiver.url,
                "secretFile": str(tmp_path / "hmac"),
            }
        },
        "defaultTargets": ["team-hook"],
        "links": {"baseUrl": "https://gpu.example.com", "signingKeyFile": str(tmp_path / "key")},
    }
    settings = Settings.model_validate({"notifications": section})
    rig = ApiRig()
    built = build_notifications(
        settings, registry=CollectorRegistry(), clock=rig.clock, logger=rig.logger
    )
    rig.notices = snooze_notifications(built)
    built.dispatcher.start()
    try:
        with rig:
            name = rig.add_raycluster("team-a", "alice-rc")
            warned_at = rig.now - timedelta(minutes=5)
            warn(rig, name, at=warned_at)
            uid = rig.workload("team-a", name)["metadata"]["uid"]
            warning = Notification(
                kind=NoticeKind.WARNING,
                workload=WorkloadRef("team-a", name),
                uid=uid,
                owner=None,
                rule="default",
                reason="idle",
                at=warned_at,
                warned_at=warned_at,
                stop_at=warned_at + timedelta(minutes=15),
            )
            built.dispatcher.submit(warning, targets=["team-hook"])
            [delivered] = webhook_receiver.wait_for(1)
            assert delivered.verified
            keep = delivered.json()["links"][0]
            path = keep["url"].removeprefix("https://gpu.example.com")
            assert rig.http.post(path).status_code == 200
            snoozed = annotations_of(rig.workload("team-a", name))[keys.SNOOZED_UNTIL]
            assert snoozed > time_text(warned_at + timedelta(minutes=15))
            told = webhook_receiver.wait_for(2)[1].json()
            assert told["kind"] == "snoozed"
    finally:
        built.dispatcher.stop()


def signed(fields: dict[str, Any]) -> str:
    """A link's path whose payload says anything at all, signed with the service's key (as a
    key shared by mistake with another tool would sign it)."""
    payload = base64.urlsafe_b64encode(json.dumps(fields).encode()).rstrip(b"=").decode()
    mac = hmac.new(KEY, payload.encode(), hashlib.sha256).digest()
    return f"/v1/links/snooze/{payload}.{base64.urlsafe_b64encode(mac).rstrip(b'=').decode()}"


def payload_of(path: str) -> dict[str, Any]:
    payload = path.rsplit("/", 1)[1].split(".", maxsplit=1)[0]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


@pytest.mark.parametrize(
    "snooze",
    [
        pytest.param(10**12, id="a-length-that-overflows-now-plus-it"),
        pytest.param(10**400, id="a-length-past-a-timedelta"),
        pytest.param(-3600, id="negative"),
        pytest.param(0, id="zero"),
        pytest.param(True, id="a-boolean"),
        pytest.param("4h", id="text"),
    ],
)
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_signed_link_with_an_absurd_length_is_refused_with_the_page(
    rig: ApiRig, method: str, snooze: object
) -> None:
    _name, path = warned(rig)
    rig.kube.requests.clear()
    refused = rig.http.request(method, signed({**payload_of(path), "snooze": snooze}))
    assert refused.status_code == 403
    assert refused.headers["content-type"].startswith("text/html")
    assert "tampered: a field is malformed" in refused.text
    assert writes(rig) == []


@pytest.mark.parametrize(
    ("field", "value"),
    [
        pytest.param("warned", 5, id="a-time-as-a-number"),
        pytest.param("exp", ["2030-01-01T00:00:00Z"], id="a-time-as-a-list"),
    ],
)
def test_a_signed_link_with_a_field_of_another_type_is_refused_with_the_page(
    rig: ApiRig, field: str, value: object
) -> None:
    _name, path = warned(rig)
    refused = rig.http.post(signed({**payload_of(path), field: value}))
    assert refused.status_code == 403
    assert refused.headers["content-type"].startswith("text/html")


@pytest.mark.parametrize(
    "token",
    [
        pytest.param("A" * 5000 + ".B", id="longer-than-any-token"),
        pytest.param("no-dot-at-all", id="no-signature"),
        pytest.param("a.b.c", id="two-dots"),
        pytest.param("%E2%80%AE.abc", id="outside-base64url"),
    ],
)
def test_a_token_that_is_not_a_links_shape_is_refused_with_the_page(
    rig: ApiRig, token: str
) -> None:
    refused = rig.http.get(f"/v1/links/snooze/{token}")
    assert refused.status_code == 403
    assert refused.headers["content-type"].startswith("text/html")
    assert "not a link&#x27;s token" in refused.text


def test_the_pages_of_a_workload_the_snapshot_lacks_never_match_it_by_owner_name(
    rig: ApiRig,
) -> None:
    """The pages say how the latest cycle saw the linked Workload hold its GPUs: that Workload
    exactly. Its name may be an owner's too (here `shared`, owning two Workloads): matching
    by owner would be another workload's words, or a 409 after the snooze was written."""
    first = rig.add_raycluster("team-a", "shared")
    again = rig.workload("team-a", first)
    kept = {k: v for k, v in again["metadata"].items() if k not in ("name", "uid")}
    again["metadata"] = {"name": f"{first}-again", "uid": "again-uid", **kept}
    rig.kube.store.put(again)
    rig.cycle()  # the snapshot: two Workloads owned by `shared`, none named so
    late = rig.workload("team-a", rig.add_raycluster("team-a", "alice-rc"))
    rig.kube.store.delete(
        "workloads.kueue.x-k8s.io", name=late["metadata"]["name"], namespace="team-a"
    )
    late["metadata"] = {**late["metadata"], "name": "shared"}
    rig.kube.store.put(late)
    warned_at = rig.now - timedelta(minutes=5)
    warn(rig, "shared", at=warned_at)
    path = link_path(rig, "shared", warned_at=warned_at)

    page = rig.http.get(path)
    kept_page = rig.http.post(path)

    assert page.status_code == 200, page.text
    assert "Keep RayCluster team-a/alice-rc running?" in page.text
    assert "Its Kueue Workload: team-a/shared." in page.text
    assert kept_page.status_code == 200, kept_page.text
    assert kept_page.headers["content-type"].startswith("text/html")
    written = annotations_of(rig.workload("team-a", "shared"))
    assert written[keys.SNOOZED_UNTIL] == time_text(rig.now + timedelta(hours=4))


def test_the_pages_of_a_workload_held_not_running_say_how_its_gpus_are_held(
    rig: ApiRig,
) -> None:
    """The keep-it pages speak of the class the latest cycle gave the workload: quota held
    while its GPU pods never run is not called idle."""
    name, path = warned(rig)
    snapshot = rig.cycle()
    stuck = a_decision("team-a", name).not_running().holding(2).build()
    rows = tuple(
        with_decision(row, stuck) if row.ref.name == name else row for row in snapshot.workloads
    )
    rig.store.publish(replace(snapshot, workloads=rows))

    confirm = rig.http.get(path)
    kept = rig.http.post(path)

    assert confirm.status_code == 200, confirm.text
    assert "Keep the GPUs of RayCluster team-a/alice-rc?" in confirm.text
    assert f"Its Kueue Workload: team-a/{name}." in confirm.text
    assert "because it holds GPUs while none of its GPU pods runs" in confirm.text
    assert "idle" not in confirm.text
    assert kept.status_code == 200, kept.text
    assert "If it is still not running then" in kept.text
