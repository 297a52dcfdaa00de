"""How an idle workload's reason reads before its window completes: how long so far and what
the window needs, never "28m of 60m" beside a busy peak that reads as a contradiction."""

from __future__ import annotations

from datetime import timedelta

import pytest

from autoscaler.domain.usage.assessment import Compute, UsageRules
from autoscaler.domain.usage.attribution import Attributed
from autoscaler.domain.usage.loading import idle
from tests.support.domain_builders import NOW

RULES = UsageRules(
    threshold=0.05,
    window=timedelta(minutes=60),
    slot=timedelta(minutes=1),
    min_coverage=0.8,
    stale_after=timedelta(minutes=5),
)


@pytest.mark.parametrize(
    ("recently_busy", "said"),
    [
        pytest.param(
            True, "idle for 28m so far, since last above 5%; needs 60m", id="busy-earlier-in-window"
        ),
        pytest.param(
            False,
            "idle for 28m so far; needs 60m (counting from admission, pod start or last activity)",
            id="idle-since-it-started",
        ),
    ],
)
def test_an_idle_stretch_short_of_the_window_says_so_far_and_what_it_needs(
    recently_busy: bool, said: str
) -> None:
    since = NOW - timedelta(minutes=28)
    compute = Compute(peak=0.85, coverage=1.0, since=since, recently_busy=recently_busy)

    verdict = idle(compute, Attributed(gpus=()), since=since, rules=RULES, now=NOW)

    assert verdict.reason == said
    assert "85%" not in verdict.reason, "the busy stretch's peak explains nothing of idle"


def test_the_whole_window_keeps_its_peak_and_coverage() -> None:
    since = NOW - timedelta(minutes=75)
    compute = Compute(peak=0.01, coverage=0.95, since=since, recently_busy=False)

    verdict = idle(compute, Attributed(gpus=()), since=since, rules=RULES, now=NOW)

    assert verdict.reason == (
        "idle for the whole window: every GPU at or below 5% for 60m (peak 1%, coverage 95%)"
    )
