"""The chart's optional PrometheusRule: off by default, the very rules of the service's
generator (recording_rules.py) for the chart's own signals and slot, accepted by promtool."""

from __future__ import annotations

import json
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler.adapters.prometheus.recording_rules import rule_group
from autoscaler.settings.tree import Settings, SignalSettings
from tests.deploy.tooling import find, render, settings_from, template_result
from tests.support.prom import require_binaries

pytestmark = pytest.mark.real

ON = ("--set", "recordingRules.enabled=true")
SM_ACTIVE = {"metric": "DCGM_FI_PROF_SM_ACTIVE", "scale": 100, "validOnMig": False}


def rendered_groups(*args: str) -> list[dict[str, Any]]:
    [rule] = find(render(*ON, *args), "PrometheusRule")
    groups: list[dict[str, Any]] = rule["spec"]["groups"]
    return groups


def test_no_prometheus_rule_unless_asked_for() -> None:
    assert find(render(), "PrometheusRule") == []


def test_the_default_rules_are_the_generator_s_for_a_thanos_ruler() -> None:
    defaults = Settings()
    expected = rule_group(defaults.prometheus.signals, slot=defaults.policy.slot, thanos=True)
    assert rendered_groups() == [expected]
    assert expected["partial_response_strategy"] == "abort"


def test_a_custom_signal_and_slot_render_as_the_generator_writes_them() -> None:
    groups = rendered_groups(
        "--set-json",
        f"prometheus.signals=[{json.dumps(SM_ACTIVE)}]",
        "--set",
        "config.policy.slot=1m30s",
    )
    signal = SignalSettings.model_validate(SM_ACTIVE)
    expected = rule_group([signal], slot=timedelta(seconds=90), thanos=True)
    assert groups == [expected] and expected["interval"] == "90s"


def test_promtool_accepts_the_rendered_rules(tmp_path: Path) -> None:
    groups = [
        {key: value for key, value in group.items() if key != "partial_response_strategy"}
        for group in rendered_groups("--set", "config.policy.slot=2m")
    ]  # the one Thanos Ruler key, which Prometheus' rule files refuse
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": groups}), encoding="utf-8")
    done = subprocess.run(
        [str(require_binaries().promtool), "check", "rules", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_recorded_series_values_reach_the_service_settings(tmp_path: Path) -> None:
    settings = settings_from(render("--set", "prometheus.recordedSeries.mode=off", *ON), tmp_path)
    assert settings.prometheus.recorded_series.mode == "off"


def test_the_chart_takes_no_query_templates_so_its_rules_follow_the_built_in_slots() -> None:
    # The PrometheusRule writes the built-in SLOTS expression; a custom `queries.slots` (a
    # settings file's, followed by the `recording-rules` command) cannot come through the chart.
    code, _, err = template_result(*ON, "--set", "prometheus.queries.slots=max(x)")
    assert code != 0 and "queries" in err
