"""`snooze NAMESPACE/NAME 4h` (or `NAME -n NAMESPACE --for 4h`) and `unsnooze` from the
command line, end to end against a running service, and how status and explain show a
workload's planned stop and snooze."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from autoscaler.client import AutoscalerClient
from autoscaler.client.workload_views import workload, workloads
from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import time_text
from tests.api.rig import TOKENS, ApiRig
from tests.api.test_client import cli


def test_snooze_and_unsnooze_from_the_command_line(rig: ApiRig, tmp_path: Path) -> None:
    name = rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    code, out, err = cli(
        rig, "snooze", "team-a/alice-rc", "4h", "--reason", "still debugging", tmp_path=tmp_path
    )
    assert (code, err) == (0, "")
    until = time_text(rig.now + timedelta(hours=4))
    assert out.strip() == f"team-a/{name} kept until {until}"
    written = rig.workload("team-a", name)["metadata"]["annotations"]
    assert (written[keys.SNOOZED_BY], written[keys.SNOOZE_REASON]) == ("alice", "still debugging")
    code, out, _ = cli(rig, "unsnooze", "alice-rc", "-n", "team-a", tmp_path=tmp_path)
    assert code == 0
    assert out.startswith(f"snooze of team-a/{name} removed")


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(("alice-rc", "-n", "team-a", "--for", "90m"), id="name-n-namespace-for"),
        pytest.param(("team-a/alice-rc", "--for", "90m"), id="namespace-slash-name-for"),
        pytest.param(("team-a/alice-rc", "90m"), id="namespace-slash-name-duration"),
        pytest.param(("alice-rc", "-n", "team-a", "90m"), id="name-n-namespace-duration"),
    ],
)
def test_snooze_takes_its_length_as_for_like_exempt_or_after_the_name(
    rig: ApiRig, tmp_path: Path, argv: tuple[str, ...]
) -> None:
    name = rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    code, out, err = cli(rig, "snooze", *argv, tmp_path=tmp_path)
    assert (code, err) == (0, "")
    assert out.strip() == f"team-a/{name} kept until {time_text(rig.now + timedelta(minutes=90))}"


def test_a_clipped_snooze_says_what_was_asked_and_json_carries_the_answer(
    rig: ApiRig, tmp_path: Path
) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    code, out, _ = cli(rig, "snooze", "team-a/alice-rc", "2d", tmp_path=tmp_path)
    assert code == 0
    assert f"(asked until {time_text(rig.now + timedelta(days=2))}; rule default's" in out
    code, out, _ = cli(rig, "snooze", "team-a/alice-rc", "1h", "-o", "json", tmp_path=tmp_path)
    assert json.loads(out)["reason"] == "snoozed with the CLI"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(("snooze", "alice-rc", "4h"), "needs NAMESPACE/NAME", id="no-namespace"),
        pytest.param(
            ("snooze", "team-a/alice-rc", "-n", "team-b", "4h"),
            "names namespace team-a, -n says team-b",
            id="two-namespaces",
        ),
        pytest.param(("snooze", "team-a/alice-rc", "soon"), "DURATION:", id="bad-duration"),
        pytest.param(("snooze", "team-a/alice-rc", "0s"), "longer than zero", id="zero"),
        pytest.param(
            ("snooze", "team-a/alice-rc", "--for", "-1h"), "--for: '-1h' is negative", id="for-neg"
        ),
        pytest.param(("snooze", "team-a/alice-rc", "4h", "--for", "2h"), "once", id="both"),
        pytest.param(
            ("snooze", "team-a/alice-rc", "--for", "99999999h"),
            "--for: '99999999h' is too long to be a duration: at most 36500d",
            id="for-past-a-century",
        ),
        pytest.param(("snooze", "team-a/alice-rc"), "DURATION or --for", id="no-length"),
    ],
)
def test_a_snooze_the_cli_cannot_send_is_a_usage_error(
    shared: ApiRig, tmp_path: Path, argv: tuple[str, ...], expected: str
) -> None:
    code, _out, err = cli(shared, *argv, tmp_path=tmp_path)
    assert code == 2
    assert expected in err


def test_a_snooze_refused_by_the_rule_is_reported_with_its_reason(
    rig: ApiRig, tmp_path: Path
) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    with AutoscalerClient(rig.url, token=TOKENS["alice"]) as client:
        for _ in range(3):
            client.snooze("team-a", "alice-rc", duration=timedelta(hours=1), reason="again")
    code, _out, err = cli(rig, "snooze", "team-a/alice-rc", "1h", tmp_path=tmp_path)
    assert code == 1
    assert "409 Conflict" in err and "already granted" in err


NOTICE = {
    "warnedAt": "2030-01-01T10:00:00Z",
    "stopAt": "2030-01-01T10:15:00Z",
    "snoozedUntil": None,
}


def test_status_shows_the_planned_stop_in_a_column_and_explain_shows_each_time() -> None:
    row = {"namespace": "team-a", "name": "w", "state": "idle", "notice": NOTICE}
    header, line = workloads({"items": [row], "snapshot": {}}).splitlines()
    assert "STOP-AT" in header.split()
    assert "2030-01-01T10:15:00Z" in line.split()
    shown = workload({**row, "notice": {**NOTICE, "snoozedBy": "link:chat"}})
    assert "Warned at:        2030-01-01T10:00:00Z" in shown
    assert "Stop planned at:  2030-01-01T10:15:00Z" in shown
    assert "Snoozed until" not in shown
    snoozed = workload(
        {**row, "notice": {"snoozedUntil": "2030-01-01T14:00:00Z", "snoozedBy": "bob"}}
    )
    assert "Snoozed until:    2030-01-01T14:00:00Z (by bob)" in snoozed


def test_a_stopped_workloads_stop_at_says_when_it_stopped_not_its_past_plan() -> None:
    stopped = {"byThisService": True, "at": "2030-01-01T10:16:00Z", "by": "rule default"}
    row = {"namespace": "team-a", "name": "w", "state": "deactivated", "notice": NOTICE}
    _, line = workloads({"items": [{**row, "stopped": stopped}], "snapshot": {}}).splitlines()
    assert "stopped 2030-01-01T10:16:00Z" in line
    assert "2030-01-01T10:15:00Z" not in line
    deleting = {**row, "stopped": stopped, "notice": {"deleteAt": "2030-01-02T10:16:00Z"}}
    _, line = workloads({"items": [deleting], "snapshot": {}}).splitlines()
    assert "delete 2030-01-02T10:16:00Z" in line
