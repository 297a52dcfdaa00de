"""The guards' settings: documented defaults, YAML spelling, and errors that name the key."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from autoscaler.core.errors import ConfigError
from autoscaler.settings.guards import BreakerSettings, ContestedSettings, GuardSettings
from autoscaler.settings.tree import Settings, load_settings

EXAMPLE = Path(__file__).resolve().parents[2] / "config" / "example.yaml"


def test_the_defaults_are_the_ones_the_issue_names() -> None:
    settings = Settings()
    assert settings.policy.max_deactivations_per_hour == 20
    breaker, contested = settings.guards.breaker, settings.guards.contested
    assert (breaker.min_workloads, breaker.share_percent, breaker.close_after_cycles) == (3, 20, 3)
    assert (contested.undone_within, contested.times, contested.within) == (
        timedelta(minutes=10),
        3,
        timedelta(hours=24),
    )


@pytest.mark.parametrize(
    "section", [GuardSettings, BreakerSettings, ContestedSettings], ids=lambda s: s.__name__
)
def test_every_guard_field_is_documented(section: type[GuardSettings]) -> None:
    for name, field in section.model_fields.items():
        assert field.description, f"{section.__name__}.{name} has no description"


def test_the_example_file_shows_every_guard_key_with_its_default() -> None:
    example = load_settings(EXAMPLE, environ={})
    assert example.guards == GuardSettings()
    assert example.policy.max_deactivations_per_hour == 20
    text = EXAMPLE.read_text(encoding="utf-8")
    for key in ("minWorkloads", "sharePercent", "closeAfterCycles", "undoneWithin", "times"):
        assert f"{key}:" in text


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        pytest.param("guards:\n  breaker: {sharePercent: 120}\n", "guards.breaker.sharePercent"),
        pytest.param("guards:\n  breaker: {closeAfterCycles: 0}\n", "closeAfterCycles"),
        pytest.param("guards:\n  contested: {undoneWithin: 0s}\n", "guards.contested"),
        pytest.param("guards:\n  contested: {tims: 3}\n", "guards.contested.tims: unknown key"),
        pytest.param("policy:\n  maxDeactivationsPerHour: -1\n", "maxDeactivationsPerHour"),
    ],
    ids=["share-over-100", "close-after-zero", "zero-window", "misspelt-key", "negative-cap"],
)
def test_a_bad_guard_setting_is_rejected_naming_it(
    tmp_path: Path, text: str, complaint: str
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(path, environ={})
    assert complaint in str(caught.value)


def test_the_settings_become_the_domains_rules() -> None:
    settings = Settings.model_validate(
        {
            "policy": {"maxDeactivationsPerHour": 7},
            "guards": {"breaker": {"sharePercent": 25}, "contested": {"within": "12h"}},
        }
    )
    rules = settings.guards.rules(max_per_hour=settings.policy.max_deactivations_per_hour)
    assert rules.max_per_hour == 7
    assert (rules.breaker.min_workloads, rules.breaker.share, rules.breaker.close_after) == (
        3,
        0.25,
        3,
    )
    assert (rules.contested.undone_within, rules.contested.times, rules.contested.span) == (
        timedelta(minutes=10),
        3,
        timedelta(hours=12),
    )
