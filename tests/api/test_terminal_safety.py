"""No terminal injection: free text with control or bidi characters is refused at the API,
and text that bypassed it (annotations set with kubectl) is printed escaped by the CLI, the
log formatters and Events."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from autoscaler.core.logs import JsonFormatter, TextFormatter
from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import time_text
from autoscaler.domain.text import escape
from tests.api.rig import ApiRig
from tests.api.test_client import cli

HOSTILE = "demo\x1b[2J\x1b]0;owned\x07 done\rfake line \u202eexe.txt"
RAW = ("\x1b", "\r", "\x07", "\u202e")
EXEMPTION = "/api/v1/workloads/team-a/alice-rc/exemption"


@pytest.mark.parametrize(
    "reason",
    [
        pytest.param("clear\x1b[2J", id="escape-sequence"),
        pytest.param("line\rover", id="carriage-return"),
        pytest.param("two\nlines", id="line-feed"),
        pytest.param("del\x7f", id="delete"),
        pytest.param("c1\x9b31m", id="c1-control"),
        pytest.param("abc\u202edcba", id="right-to-left-override"),
        pytest.param("abc\u2066isolate\u2069", id="bidi-isolate"),
    ],
)
def test_a_reason_with_a_control_or_bidi_character_is_a_422_naming_the_field(
    rig: ApiRig, reason: str
) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    body = {"duration": "1h", "reason": reason}
    response = rig.http.put(EXEMPTION, json=body, headers=rig.as_user("alice"))
    assert response.status_code == 422
    [field] = response.json()["fields"]
    assert field["field"] == "body.reason"
    assert "control or bidi" in field["message"]


def test_a_reason_with_accents_and_emoji_is_accepted(rig: ApiRig) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    body = {"duration": "1h", "reason": "démo à 15 h 🎉"}
    response = rig.http.put(EXEMPTION, json=body, headers=rig.as_user("alice"))
    assert response.status_code == 200


@pytest.fixture
def hand_exempted(rig: ApiRig) -> Iterator[ApiRig]:
    """alice-rc exempted with kubectl: no API between the person and the annotations."""
    rig.add_raycluster(
        "team-a",
        "alice-rc",
        annotations={
            keys.EXEMPT_UNTIL: time_text(rig.now + timedelta(hours=2)),
            keys.EXEMPT_BY: "mallory\x1b[31m",
            keys.EXEMPT_REASON: HOSTILE,
        },
    )
    yield rig


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(("status", "alice-rc", "-n", "team-a"), id="one-workload-table"),
        pytest.param(("status", "-n", "team-a", "-o", "yaml"), id="yaml"),
        pytest.param(("status", "-n", "team-a", "-o", "json"), id="json"),
    ],
)
def test_a_reason_set_with_kubectl_is_printed_escaped_by_the_cli(
    hand_exempted: ApiRig, argv: tuple[str, ...], tmp_path: Path
) -> None:
    hand_exempted.cycle()
    code, out, err = cli(hand_exempted, *argv, tmp_path=tmp_path)
    assert code == 0, err
    assert not any(char in out for char in RAW)
    assert "owned" in out  # the reason is shown, escaped


def test_the_table_shows_the_escaped_reason_in_full(hand_exempted: ApiRig, tmp_path: Path) -> None:
    hand_exempted.cycle()
    _code, out, _err = cli(hand_exempted, "status", "alice-rc", "-n", "team-a", tmp_path=tmp_path)
    assert escape(HOSTILE) in out
    assert "mallory\\x1b[31m" in out


@pytest.mark.parametrize(
    "formatter",
    [pytest.param(TextFormatter(), id="text"), pytest.param(JsonFormatter(), id="json")],
)
def test_a_reason_set_with_kubectl_is_logged_escaped(
    hand_exempted: ApiRig, formatter: logging.Formatter
) -> None:
    lines = io.StringIO()
    handler = logging.StreamHandler(lines)
    handler.setFormatter(formatter)
    hand_exempted.logger.addHandler(handler)
    hand_exempted.logger.setLevel(logging.INFO)
    try:
        hand_exempted.cycle()
    finally:
        hand_exempted.logger.removeHandler(handler)
    [line] = [
        line for line in lines.getvalue().splitlines() if "alice-rc" in line and "exempt" in line
    ]
    assert not any(char in line for char in RAW)
    shown = json.loads(line)["message"] if isinstance(formatter, JsonFormatter) else line
    assert HOSTILE in shown or escape(HOSTILE) in shown


def test_an_event_carrying_a_reason_set_with_kubectl_is_written_escaped(
    hand_exempted: ApiRig,
) -> None:
    [row] = hand_exempted.cycle().workloads
    reason = row.info.owner_annotations[keys.EXEMPT_REASON]
    hand_exempted.actuator.announce(row.info, reason="IdleGPUReactivated", message=reason)
    messages = [e["message"] for e in hand_exempted.kube.store.list("events", namespace="team-a")]
    assert messages
    assert all(message == escape(HOSTILE) for message in messages)
    assert not any(char in message for message in messages for char in RAW)


# Characters that do not show, or that break a line where no line ends: a reader cannot see
# them, so they are refused at the API and spelled out wherever kubectl let them through.
INVISIBLE = {
    "line-separator": "\u2028",
    "paragraph-separator": "\u2029",
    "zero-width-space": "\u200b",
    "zero-width-joiner": "\u200d",
    "right-to-left-mark": "\u200f",
    "arabic-letter-mark": "\u061c",
    "word-joiner": "\u2060",
    "byte-order-mark": "\ufeff",
    "tag-character": "\U000e0041",
}
HIDDEN = "ok" + "".join(INVISIBLE.values()) + "done"


@pytest.mark.parametrize("char", [pytest.param(c, id=name) for name, c in INVISIBLE.items()])
def test_a_reason_with_an_invisible_or_line_breaking_character_is_a_422_naming_the_field(
    rig: ApiRig, char: str
) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    body = {"duration": "1h", "reason": f"looks{char}harmless"}
    response = rig.http.put(EXEMPTION, json=body, headers=rig.as_user("alice"))
    assert response.status_code == 422
    [field] = response.json()["fields"]
    assert field["field"] == "body.reason"
    assert escape(char) in field["message"]  # named, escaped: the answer shows what it refused


@pytest.fixture
def hidden_reason(rig: ApiRig) -> Iterator[ApiRig]:
    """alice-rc exempted with kubectl, its reason full of characters nobody sees."""
    rig.add_raycluster(
        "team-a",
        "alice-rc",
        annotations={
            keys.EXEMPT_UNTIL: time_text(rig.now + timedelta(hours=2)),
            keys.EXEMPT_BY: "mallory\u200b",
            keys.EXEMPT_REASON: HIDDEN,
        },
    )
    yield rig


def test_invisible_characters_set_with_kubectl_are_shown_escaped_by_the_cli(
    hidden_reason: ApiRig, tmp_path: Path
) -> None:
    hidden_reason.cycle()
    code, out, err = cli(hidden_reason, "status", "alice-rc", "-n", "team-a", tmp_path=tmp_path)
    assert code == 0, err
    assert not any(char in out for char in INVISIBLE.values())
    assert escape(HIDDEN) in out
    assert "\\u2028" in out and "\\U000e0041" in out and "mallory\\u200b" in out


def test_an_event_carrying_invisible_characters_is_written_escaped(hidden_reason: ApiRig) -> None:
    [row] = hidden_reason.cycle().workloads
    reason = row.info.owner_annotations[keys.EXEMPT_REASON]
    hidden_reason.actuator.announce(row.info, reason="IdleGPUReactivated", message=reason)
    messages = [e["message"] for e in hidden_reason.kube.store.list("events", namespace="team-a")]
    assert messages == [escape(HIDDEN)] * len(messages) and messages
    assert not any(char in message for message in messages for char in INVISIBLE.values())
