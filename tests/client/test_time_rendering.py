"""Every time the CLI prints reads the same way, whatever spelling the API's JSON gave it:
RFC 3339 in UTC to the second (`2026-03-02T11:35:00Z`), as the annotations write it and the
tables show it. A stopped workload's `Stopped at` is one of them."""

from __future__ import annotations

import pytest

from autoscaler.client.render import audit, decisions, moment, terminal_safe
from autoscaler.client.workload_views import workload
from tests.client.test_class_rendering import answer, field

SHOWN = "2026-03-02T11:35:00Z"
SPELLINGS = [
    pytest.param("2026-03-02T11:35:00Z", id="as-annotations-write-it"),
    pytest.param("2026-03-02T11:35:00.250000Z", id="with-a-fraction"),
    pytest.param("2026-03-02T11:35:00+00:00", id="with-an-offset"),
    pytest.param("2026-03-02T12:35:00.9+01:00", id="another-zone"),
]
STOPPED = {"byThisService": True, "by": "rule default", "bringBack": "idle-gpu-autoscaler ..."}


@pytest.mark.parametrize("at", SPELLINGS)
def test_stopped_at_reads_like_every_other_time(at: str) -> None:
    shown = terminal_safe(workload(answer("stopped", stopped={**STOPPED, "at": at})))

    assert field(shown, "Stopped at") == SHOWN


@pytest.mark.parametrize("at", SPELLINGS)
def test_the_notice_and_the_tables_use_the_same_time(at: str) -> None:
    notice = {"warnedAt": at, "stopAt": at}
    shown = terminal_safe(workload(answer("idle", notice=notice, idleSince=at)))
    page = {"items": [{"at": at, "actor": "loop", "action": "deactivate", "target": "t/x"}]}

    assert field(shown, "Warned at") == field(shown, "Stop planned at") == SHOWN
    assert field(shown, "Idle since") == SHOWN
    for table in (audit(page), decisions(page)):
        [_, row, _] = terminal_safe(table).splitlines()
        assert row.split()[0] == SHOWN


@pytest.mark.parametrize("value", ["", "soon", "2026-03-02T11:35:00"])
def test_a_value_that_is_not_a_zoned_time_is_shown_as_it_came(value: str) -> None:
    assert moment(value) == value
