"""`status` shows the usage class (ISSUE 16): idle-held with its count ("2 of 4 GPUs idle"),
loading, and what the evidence signals saw, in the one-workload view (every line) and as a
short column in the list; evidence text stays escaped like every other value."""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler.client.render import terminal_safe
from autoscaler.client.workload_views import WORKLOAD_COLUMNS, explanation, workload, workloads
from tests.support.decision_builders import DRIVER_ATTACHED, FB_CLIMBING, NEIGHBOUR_LOADS

Json = dict[str, Any]


def answer(state: str, *, gpus: int = 4, evidence: list[str] | None = None, **more: Any) -> Json:
    """A workload as the REST answer carries it (camelCase), with only what the view needs."""
    return {
        "namespace": "team-a",
        "name": "raycluster-rc-1a2b3",
        "owner": {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "rc"},
        "queue": "user-queue",
        "gpus": gpus,
        "state": state,
        "action": "none",
        "reason": "as the classifier said",
        "evidence": evidence or [],
        "idleHeldGpus": 0,
        "peakUtilization": 0.01,
        "coverage": 1.0,
        "timeLeftSeconds": None,
        **more,
    }


def field(text: str, name: str) -> str:
    [line] = [line for line in text.splitlines() if line.startswith(f"{name}:")]
    return line.split(":", 1)[1].strip()


CASES = [
    pytest.param(
        answer("loading", evidence=[FB_CLIMBING]),
        "loading",
        FB_CLIMBING,
        id="loading-fb-climbing-at-0-2-percent-for-20-min",
    ),
    pytest.param(
        answer("idle-held", idleHeldGpus=2),
        "idle-held (2 of 4 GPUs idle)",
        "-",
        id="idle-held-2-of-4-gpus-at-0-percent",
    ),
    pytest.param(
        answer("idle", evidence=[DRIVER_ATTACHED]),
        "idle",
        DRIVER_ATTACHED,
        id="idle-notebook-with-a-driver-attached",
    ),
    pytest.param(answer("idle"), "idle", "-", id="gpu-holding-60-gib-flat-at-0-percent"),
    pytest.param(
        answer("idle", gpus=1, evidence=[NEIGHBOUR_LOADS]),
        "idle",
        NEIGHBOUR_LOADS,
        id="mig-instance-whose-neighbour-loads",
    ),
    pytest.param(
        answer("busy", gpus=1, peakUtilization=0.9),
        "busy",
        "-",
        id="shared-uuid-busy-while-another-sharer-computes",
    ),
]


@pytest.mark.parametrize(("body", "state", "evidence"), CASES)
def test_one_workload_shows_its_class_and_evidence(body: Json, state: str, evidence: str) -> None:
    shown = terminal_safe(workload(body))

    assert field(shown, "State") == state
    assert field(shown, "Evidence") == evidence


@pytest.mark.parametrize(("body", "state", "evidence"), CASES)
def test_the_list_shows_the_class_and_a_short_evidence_column(
    body: Json, state: str, evidence: str
) -> None:
    header, line = terminal_safe(workloads({"snapshot": {}, "items": [body]})).splitlines()
    cells = dict(zip(WORKLOAD_COLUMNS, _cells(header, line), strict=True))

    assert cells["STATE"] == state
    assert evidence.startswith(cells["EVIDENCE"].rstrip("…"))
    assert len(cells["EVIDENCE"]) <= 40


def test_every_evidence_line_gets_its_own_line_in_the_one_workload_view() -> None:
    body = answer("loading", evidence=[FB_CLIMBING, "pcie receiving 2.1 GB/s"])

    lines = workload(body).splitlines()
    at = lines.index(f"{'Evidence:':<18}{FB_CLIMBING}")

    assert lines[at + 1] == f"{'':<18}pcie receiving 2.1 GB/s"


def test_the_explanation_ends_with_the_workload_s_class() -> None:
    body = {"rule": "default", "matched": True, "misses": [], "workload": answer("idle-held")}
    body["workload"]["idleHeldGpus"] = 3

    assert field(explanation(body), "State") == "idle-held (3 of 4 GPUs idle)"


def test_evidence_from_a_metric_label_is_escaped_in_the_one_workload_views() -> None:
    body = answer("idle", evidence=["ray: driver attached by \x1b[31mmallory\u202e"])
    explained = {"rule": "default", "matched": True, "misses": [], "workload": body}

    for shown in (workload(body), explanation(explained)):
        assert "\x1b" not in shown and "\u202e" not in shown
        assert "\\x1b[31mmallory\\u202e" in shown


def test_the_list_escapes_evidence_too() -> None:
    body = answer("idle", evidence=["\x1b]0;pwned\x07"])

    shown = workloads({"snapshot": {}, "items": [body]})

    assert "\x1b" not in shown and "\\x1b]0;pwned\\x07" in shown


def _cells(header: str, line: str) -> list[str]:
    """Cut `line` at the header's column starts (cells may hold single spaces)."""
    starts = [header.index(name) for name in WORKLOAD_COLUMNS]
    ends = [*starts[1:], None]
    return [line[start:end].strip() for start, end in zip(starts, ends, strict=True)]
