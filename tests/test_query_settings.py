"""`prometheus.queries`: the templates of the three queries of a fleet read, and the keys of
the four queries a read had before issue 14."""

from __future__ import annotations

from pathlib import Path

import pytest

from autoscaler.adapters.prometheus.promql import SLOTS, QueryTemplates
from autoscaler.compose.serve import query_templates
from autoscaler.core.errors import ConfigError
from autoscaler.settings.tree import load_settings


def settings_file(tmp_path: Path, queries: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(f"prometheus:\n  queries: {queries}\n", encoding="utf-8")
    return path


def test_a_template_set_for_a_query_replaces_that_query_only(tmp_path: Path) -> None:
    busy = "max_over_time({selector}[{coarse}]) > {threshold}"
    settings = load_settings(settings_file(tmp_path, f"{{busy: '{busy}'}}"))
    assert query_templates(settings.prometheus.queries) == QueryTemplates(busy=busy)
    assert query_templates(settings.prometheus.queries).slots == SLOTS


def test_the_old_keys_left_null_as_the_old_example_wrote_them_are_accepted(
    tmp_path: Path,
) -> None:
    old = "{peak: null, coverage: null, lastBusy: null, newest: null}"
    settings = load_settings(settings_file(tmp_path, old))
    assert query_templates(settings.prometheus.queries) == QueryTemplates()


@pytest.mark.parametrize("key", ["peak", "coverage", "lastBusy"])
def test_a_template_set_for_a_query_that_no_longer_exists_is_refused_naming_the_new_keys(
    tmp_path: Path, key: str
) -> None:
    with pytest.raises(ConfigError, match="replaced by slots, busy and newest") as caught:
        load_settings(settings_file(tmp_path, f"{{{key}: 'max_over_time(x[5m])'}}"))
    assert key in str(caught.value) and "prometheus.queries" in str(caught.value)
