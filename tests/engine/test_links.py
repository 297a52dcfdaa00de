"""Signed "keep it" links: a link says which workload, which warning, how long and for whom,
and any change to it, or its age, makes it worthless."""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Callable
from datetime import timedelta

import pytest

from autoscaler.domain.models import WorkloadRef
from autoscaler.domain.notices.notifications import NoticeKind
from autoscaler.engine.notify.links import LINK_PATH, LinkRefused, LinkSigner, SnoozeClaim
from tests.support.domain_builders import NOW
from tests.support.notification_builders import WARNED_AT, a_notification

KEY = b"k" * 32
TTL = timedelta(hours=24)
CHOICES = (timedelta(hours=4), timedelta(hours=8))


def a_signer(*, key: bytes = KEY) -> LinkSigner:
    return LinkSigner(key=key, base_url="https://gpu.example.com/", ttl=TTL, choices=CHOICES)


def token_of(url: str) -> str:
    return url.rsplit("/", 1)[1]


def warning_token(signer: LinkSigner | None = None, **changes: object) -> str:
    links = (signer or a_signer()).links(
        a_notification(NoticeKind.WARNING, **changes), recipient="team-a-slack", now=NOW
    )
    return token_of(links[0].url)


def test_a_warning_carries_one_keep_link_per_choice_under_the_link_path() -> None:
    links = a_signer().links(a_notification(), recipient="team-a-slack", now=NOW)
    assert [(link.label, link.snooze) for link in links] == [
        ("Keep 4h", CHOICES[0]),
        ("Keep 8h", CHOICES[1]),
    ]
    assert all(link.url.startswith("https://gpu.example.com" + LINK_PATH) for link in links)


def test_a_link_verifies_back_to_what_it_claims() -> None:
    claim = a_signer().verify(warning_token(), now=NOW + timedelta(hours=1))
    assert claim == SnoozeClaim(
        workload=WorkloadRef("team-a", "rc"),
        uid="uid-team-a-rc",
        warned_at=WARNED_AT,
        snooze=timedelta(hours=4),
        recipient="team-a-slack",
        expires=NOW + TTL,
    )


@pytest.mark.parametrize(
    "kind",
    [kind for kind in NoticeKind if kind is not NoticeKind.WARNING],
    ids=lambda kind: f"{kind.value}-has-no-links",
)
def test_only_a_warning_has_links(kind: NoticeKind) -> None:
    assert a_signer().links(a_notification(kind), recipient="t", now=NOW) == ()


def test_a_warning_without_its_warned_at_has_no_links() -> None:
    notification = a_notification(NoticeKind.WARNING, warned_at=None)
    assert a_signer().links(notification, recipient="t", now=NOW) == ()


def flip(text: str, index: int) -> str:
    swapped = "B" if text[index] != "B" else "C"
    return text[:index] + swapped + text[index + 1 :]


def with_payload(token: str, payload: bytes) -> str:
    encoded = base64.urlsafe_b64encode(payload).rstrip(b"=").decode()
    return encoded + "." + token.partition(".")[2]


TAMPERED = [
    pytest.param(lambda t: flip(t, 5), id="a-byte-of-the-payload-flipped"),
    pytest.param(lambda t: flip(t, len(t) - 3), id="a-byte-of-the-signature-flipped"),
    pytest.param(lambda t: flip(t, len(t) - 1), id="the-signature's-last-character-changed"),
    pytest.param(lambda t: t.partition(".")[0], id="the-signature-cut-off"),
    pytest.param(lambda t: t + "x", id="a-character-appended"),
    pytest.param(lambda t: "not-base64!." + t.partition(".")[2], id="payload-not-base64"),
    pytest.param(
        lambda t: with_payload(t, b'{"ns":"team-a","name":"other","snooze":86400}'),
        id="payload-rewritten-for-another-workload",
    ),
    pytest.param(lambda t: "", id="empty"),
]


@pytest.mark.parametrize("tamper", TAMPERED)
def test_a_tampered_link_is_refused(tamper: Callable[[str], str]) -> None:
    token = warning_token()
    with pytest.raises(LinkRefused, match="tampered"):
        a_signer().verify(tamper(token), now=NOW)


def test_a_link_signed_with_another_key_is_refused() -> None:
    token = warning_token(a_signer(key=b"x" * 32))
    with pytest.raises(LinkRefused, match="tampered"):
        a_signer().verify(token, now=NOW)


def test_a_link_past_its_ttl_is_refused() -> None:
    token = warning_token()
    assert a_signer().verify(token, now=NOW + TTL - timedelta(seconds=1))
    with pytest.raises(LinkRefused, match="expired"):
        a_signer().verify(token, now=NOW + TTL)


def test_a_link_names_its_own_workload_so_it_cannot_keep_another() -> None:
    signer = a_signer()
    mine = signer.verify(warning_token(signer, name="mine"), now=NOW)
    theirs = signer.verify(warning_token(signer, name="theirs", uid="uid-theirs"), now=NOW)
    assert (mine.workload, mine.uid) == (WorkloadRef("team-a", "mine"), "uid-team-a-mine")
    assert (theirs.workload, theirs.uid) == (WorkloadRef("team-a", "theirs"), "uid-theirs")


def signed(payload: bytes, *, key: bytes = KEY) -> str:
    """A token over any payload, signed with our key: what a bug or a leaked key could mint."""
    encoded = base64.urlsafe_b64encode(payload).rstrip(b"=")
    mac = hmac.new(key, encoded, hashlib.sha256).digest()
    return encoded.decode() + "." + base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(b'{"ns":"team-a"}', id="fields-missing"),
        pytest.param(b"[1, 2]", id="not-an-object"),
        pytest.param(b"\xff\xfe", id="not-utf8"),
        pytest.param(
            b'{"ns":"a","name":"b","uid":"u","warned":"yesterday","snooze":60,"to":"t",'
            b'"exp":"2025-03-04T12:00:00Z"}',
            id="a-time-malformed",
        ),
        pytest.param(
            b'{"ns":"a","name":"b","uid":"u","warned":"2025-03-03T11:59:00Z","snooze":"4h",'
            b'"to":"t","exp":"2025-03-04T12:00:00Z"}',
            id="snooze-not-seconds",
        ),
    ],
)
def test_a_well_signed_but_malformed_payload_is_refused_not_crashed(payload: bytes) -> None:
    with pytest.raises(LinkRefused, match="tampered"):
        a_signer().verify(signed(payload), now=NOW)


def test_our_own_signing_of_a_good_payload_verifies() -> None:
    payload = (
        b'{"ns":"a","name":"b","uid":"u","warned":"2025-03-03T11:59:00Z","snooze":60,'
        b'"to":"t","exp":"2025-03-04T12:00:00Z"}'
    )
    assert a_signer().verify(signed(payload), now=NOW).snooze == timedelta(seconds=60)
