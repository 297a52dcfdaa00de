"""The guards' values (`config.guards`, `config.policy.maxDeactivationsPerHour`) reach the
service's settings as given, and a wrong one fails the install naming it."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from tests.deploy.tooling import notes, render, settings_from, template_result

CHANGED = (
    "--set",
    "config.policy.maxDeactivationsPerHour=8",
    "--set",
    "config.guards.breaker.minWorkloads=10",
    "--set",
    "config.guards.breaker.sharePercent=35",
    "--set",
    "config.guards.breaker.closeAfterCycles=5",
    "--set",
    "config.guards.contested.undoneWithin=30m",
    "--set",
    "config.guards.contested.times=2",
    "--set",
    "config.guards.contested.within=12h",
)


@pytest.mark.real
def test_set_guard_values_reach_the_service(tmp_path: Path) -> None:
    settings = settings_from(render(*CHANGED), tmp_path)
    assert settings.policy.max_deactivations_per_hour == 8
    breaker, contested = settings.guards.breaker, settings.guards.contested
    assert (breaker.min_workloads, breaker.share_percent, breaker.close_after_cycles) == (10, 35, 5)
    assert contested.undone_within == timedelta(minutes=30)
    assert (contested.times, contested.within) == (2, timedelta(hours=12))


@pytest.mark.real
def test_notes_name_both_caps_once_acting_and_where_the_breaker_shows() -> None:
    text = notes("--set", "dryRun=false", "--set", "config.policy.maxDeactivationsPerHour=8")
    assert "at most 5 per cycle and 8 per hour" in text
    assert "/api/v1/breaker" in text


@pytest.mark.real
@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        pytest.param(
            ("--set", "config.policy.maxDeactivationsPerHour=-1"),
            "/config/policy/maxDeactivationsPerHour",
            id="negative-hourly-cap",
        ),
        pytest.param(
            ("--set", "config.guards.breaker.sharePercent=120"),
            "/config/guards/breaker/sharePercent",
            id="share-above-100-percent",
        ),
        pytest.param(
            ("--set", "config.guards.breaker.closeAfterCycles=0"),
            "/config/guards/breaker/closeAfterCycles",
            id="breaker-that-never-closes",
        ),
        pytest.param(
            ("--set", "config.guards.contested.times=0"),
            "/config/guards/contested/times",
            id="contested-after-zero-undos",
        ),
        pytest.param(
            ("--set", "config.guards.contested.within=0s"),
            "/config/guards/contested/within",
            id="zero-contested-span",
        ),
        pytest.param(
            ("--set", "config.guards.breaker.minWorkload=3"),
            "additional properties 'minWorkload' not allowed",
            id="misspelt-breaker-key",
        ),
        pytest.param(
            ("--set", "config.guards.fresh.enabled=false"),
            "additional properties 'fresh' not allowed",
            id="unknown-guard-section",
        ),
    ],
)
def test_schema_rejects_a_bad_guard_value(args: tuple[str, ...], complaint: str) -> None:
    code, _, err = template_result(*args)
    assert code != 0
    assert complaint in err, err
