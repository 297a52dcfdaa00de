"""`report` on the command line: a table per owner with the total, escaped like every other
answer, and a bad --since refused before any request."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from autoscaler.domain.audit.records import LOOP_ACTOR, AuditRecord
from autoscaler.domain.audit.subjects import Subject
from tests.api.rig import ApiRig
from tests.api.test_client import cli


def test_report_prints_one_line_per_owner_then_the_total(tmp_path: Path) -> None:
    with ApiRig(dry_run=False) as rig:
        rig.add_raycluster("team-a", "alice-rc", gpus=2)
        rig.cycle()
        rig.clock.advance(timedelta(hours=3))
        code, out, err = cli(rig, "report", "-n", "team-a", "--since", "1d", tmp_path=tmp_path)
        _, raw, _ = cli(rig, "report", "-n", "team-a", "-o", "json", tmp_path=tmp_path)
    assert (code, err) == (0, "")
    period, header, owner, total = out.splitlines()
    assert period.startswith("since ")
    assert header.split()[:4] == ["NAMESPACE", "QUEUE", "OWNER", "IDLE"]
    assert owner.split()[:3] == ["team-a", "user-queue", "RayCluster/alice-rc"]
    assert owner.split()[4:] == ["6.0", "0m", "0", "1", "0", "0"]
    assert total.split()[0] == "TOTAL"
    assert json.loads(raw)["total"]["reclaimedGpuHours"] == 6.0


def test_an_owner_name_with_control_characters_is_printed_escaped(
    rig: ApiRig, tmp_path: Path
) -> None:
    hostile = Subject(queue="q", owner="RayCluster/x\x1b[2Jy")
    rig.shared.store.record(
        AuditRecord(
            at=rig.now,
            actor=LOOP_ACTOR,
            action="deactivate",
            target="team-a/w",
            reason="idle",
            outcome="done",
            gpus=1,
            subject=hostile,
        )
    )
    rig.clock.advance(timedelta(hours=1))

    code, out, _ = cli(rig, "report", "-n", "team-a", tmp_path=tmp_path)

    assert code == 0
    assert "\x1b" not in out
    assert "x\\x1b[2Jy" in out


def test_a_bad_since_is_a_usage_error_before_any_request(rig: ApiRig, tmp_path: Path) -> None:
    code, out, err = cli(rig, "report", "--since", "soon", tmp_path=tmp_path, user=None)

    assert (code, out) == (2, "")
    assert err.startswith("error: --since:")
