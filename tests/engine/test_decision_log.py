"""Each decision line names the workload's class and what the evidence signals saw (ISSUE
16), in the message a person greps and in the structured fields a collector keeps."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from autoscaler.core.logs import JsonFormatter, TextFormatter
from autoscaler.domain.models import Action, WorkloadStatus
from autoscaler.engine.cycle.decision_log import log_decision
from tests.support.decision_builders import (
    DRIVER_ATTACHED,
    FB_CLIMBING,
    NEIGHBOUR_LOADS,
    a_decision,
)
from tests.support.domain_builders import NOW


class Lines:
    """A logger of its own with one handler, so each test reads only its own lines."""

    def __init__(self, formatter: logging.Formatter) -> None:
        self.stream = io.StringIO()
        self.handler = logging.StreamHandler(self.stream)
        self.handler.setFormatter(formatter)
        self.logger = logging.getLogger(f"tests.decision_log.{id(self)}")
        self.logger.addHandler(self.handler)
        self.logger.setLevel(logging.INFO)
        self.logger.propagate = False

    def log(self, row: WorkloadStatus) -> str:
        log_decision(self.logger, row.info, row.decision, now=NOW)
        [line] = self.stream.getvalue().splitlines()
        return line

    def close(self) -> None:
        self.logger.removeHandler(self.handler)


@pytest.fixture
def text() -> Iterator[Lines]:
    lines = Lines(TextFormatter())
    yield lines
    lines.close()


@pytest.fixture
def structured() -> Iterator[Lines]:
    lines = Lines(JsonFormatter())
    yield lines
    lines.close()


@pytest.mark.parametrize(
    ("row", "said"),
    [
        pytest.param(
            a_decision("team-a", "loader").loading().seen(FB_CLIMBING).holding(4).row(),
            f"none team-a/loader, loading: loading for 20 min at near-zero compute; "
            f"evidence: {FB_CLIMBING} (rule default)",
            id="loading-fb-climbing-at-near-zero-compute",
        ),
        pytest.param(
            a_decision("team-a", "half").idle_held(2, of=4).row(),
            "none team-a/half, idle-held (2 of 4 GPUs idle): 2 of 4 GPUs busy, 2 idle for the "
            "whole window; evidence: - (rule default)",
            id="idle-held-2-of-4-gpus-at-zero",
        ),
        pytest.param(
            a_decision("team-a", "notebook")
            .idle()
            .seen(DRIVER_ATTACHED)
            .deciding(Action.DEACTIVATE)
            .row(),
            "deactivate team-a/notebook, idle: every GPU at or below 5% for the whole window; "
            f"evidence: {DRIVER_ATTACHED} (rule default)",
            id="idle-notebook-with-a-driver-attached-is-stopped-and-says-so",
        ),
        pytest.param(
            a_decision("team-a", "holder").idle().row(),
            "none team-a/holder, idle: every GPU at or below 5% for the whole window; "
            "evidence: - (rule default)",
            id="gpu-holding-60-gib-flat-at-zero-has-no-evidence",
        ),
        pytest.param(
            a_decision("team-a", "mig").idle().seen(NEIGHBOUR_LOADS).row(),
            "none team-a/mig, idle: every GPU at or below 5% for the whole window; "
            f"evidence: {NEIGHBOUR_LOADS} (rule default)",
            id="mig-instance-whose-neighbour-loads",
        ),
        pytest.param(
            a_decision("team-a", "sharer").unknown("framebuffer query failed: timeout").row(),
            "none team-a/sharer, unknown: framebuffer query failed: timeout; evidence: - "
            "(rule default)",
            id="a-failed-evidence-query-is-unknown",
        ),
    ],
)
def test_the_line_names_the_class_and_the_evidence(
    text: Lines, row: WorkloadStatus, said: str
) -> None:
    assert text.log(row).endswith(f": {said}")


def test_the_structured_fields_carry_the_class_the_evidence_and_the_idle_held_count(
    structured: Lines,
) -> None:
    row = a_decision("team-a", "half").idle_held(2, of=4).seen(FB_CLIMBING, "pcie").row()

    fields = json.loads(structured.log(row))

    assert fields["state"] == "idle-held"
    assert fields["evidence"] == [FB_CLIMBING, "pcie"]
    assert fields["idle_held_gpus"] == 2
    assert (fields["namespace"], fields["workload"]) == ("team-a", "half")


def test_evidence_text_from_a_metric_label_is_escaped_in_the_text_line(text: Lines) -> None:
    row = a_decision("team-a", "rc").idle().seen("driver of \x1b[2Jmallory").row()

    line = text.log(row)

    assert "\x1b" not in line and "driver of \\x1b[2Jmallory" in line
