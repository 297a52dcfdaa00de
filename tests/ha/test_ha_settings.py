"""The leaderElection and watchCache sections: defaults, camelCase keys, rejected values."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from autoscaler.settings.ha import LeaderElectionSettings, WatchCacheSettings


def test_leader_election_is_off_by_default_with_controller_runtimes_timings() -> None:
    settings = LeaderElectionSettings()

    assert not settings.enabled
    assert (settings.lease_duration, settings.renew_deadline, settings.retry_period) == (
        timedelta(seconds=15),
        timedelta(seconds=10),
        timedelta(seconds=2),
    )


def test_sections_read_camel_case_keys_and_durations() -> None:
    election = LeaderElectionSettings.model_validate(
        {"enabled": True, "leaseName": "iga", "leaseDuration": "30s", "renewDeadline": "20s"}
    )
    cache = WatchCacheSettings.model_validate({"watchTimeout": "5m", "backoffMax": "1m"})

    assert (election.lease_name, election.lease_duration) == ("iga", timedelta(seconds=30))
    assert (cache.watch_timeout, cache.backoff_max) == (timedelta(minutes=5), timedelta(minutes=1))


@pytest.mark.parametrize(
    ("raw", "complaint"),
    [
        pytest.param({"renewDeadline": "15s"}, "retryPeriod < renewDeadline", id="deadline-at-ttl"),
        pytest.param({"retryPeriod": "10s"}, "retryPeriod < renewDeadline", id="retry-at-deadline"),
        pytest.param({"leaseDuration": "15.5s"}, "whole number", id="fractional-lease"),
        pytest.param({"leaseName": "Not_A_Name"}, "DNS subdomain", id="bad-lease-name"),
        pytest.param({"leaseTime": "15s"}, "Extra inputs", id="unknown-key"),
    ],
)
def test_leader_election_rejects_timings_that_could_let_two_replicas_act(
    raw: dict[str, Any], complaint: str
) -> None:
    with pytest.raises(ValidationError, match=complaint):
        LeaderElectionSettings.model_validate(raw)


@pytest.mark.parametrize(
    ("raw", "complaint"),
    [
        pytest.param({"watchTimeout": "500ms"}, "at least 1s", id="sub-second-watch"),
        pytest.param(
            {"backoffInitial": "1m"}, "backoffInitial <= backoffMax", id="initial-past-max"
        ),
        pytest.param({"backoffInitial": "0s"}, "0 < backoffInitial", id="no-backoff"),
        pytest.param({"syncTimeout": "0s"}, "positive", id="no-sync-wait"),
    ],
)
def test_watch_cache_settings_reject_unusable_values(raw: dict[str, Any], complaint: str) -> None:
    with pytest.raises(ValidationError, match=complaint):
        WatchCacheSettings.model_validate(raw)
