"""The table of evidence signals (`SIGNALS`) holds together: every row has its settings
section, its bar, its PromQL, its words on every surface and its place in the demo, and
docs/SIGNALS.md shows the table as it is. A new row is checked by these without a new test."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.adapters.prometheus.evidence_base import SLOT_PROMQL, slot_promql
from autoscaler.domain.usage.evidence import (
    DEVICE_SIGNALS,
    SIGNALS,
    Sighting,
    Signal,
    SlotForm,
    detail,
    replayed_detail,
)
from autoscaler.settings.evidence import EvidenceSettings
from autoscaler.sim.profiles import Profile
from tests.support import signal_docs

DEFAULTS = EvidenceSettings()
NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


def test_the_table_has_a_row_for_every_signal_and_reads_them_in_its_order() -> None:
    assert list(SIGNALS) == list(Signal)
    assert tuple(s for s in Signal if s.row.form is not None) == DEVICE_SIGNALS
    shipped = (Signal.FRAMEBUFFER, Signal.POWER, Signal.PCIE, Signal.NVLINK)
    assert [s for s in DEVICE_SIGNALS if s in shipped] == list(shipped)  # the queries' order


@pytest.mark.parametrize("signal", list(Signal), ids=str)
@pytest.mark.parametrize("enabled", [True, False])
def test_each_signal_has_a_settings_section_named_as_it(signal: Signal, enabled: bool) -> None:
    settings = EvidenceSettings.model_validate({signal.value: {"enabled": enabled}})
    assert settings.reads(signal) is enabled


@pytest.mark.parametrize("signal", DEVICE_SIGNALS, ids=str)
def test_each_device_signal_names_a_positive_bar_and_a_metric_of_its_section(
    signal: Signal,
) -> None:
    section = getattr(DEFAULTS, signal.value)
    assert signal.row.bar in type(section).model_fields
    assert DEFAULTS.bar(signal) > 0
    assert DEFAULTS.device(signal).metric


@pytest.mark.parametrize("signal", DEVICE_SIGNALS, ids=str)
def test_each_device_signal_has_promql_and_words_on_every_surface(signal: Signal) -> None:
    assert signal.row.form in SLOT_PROMQL
    assert slot_promql(signal, "M", slot=MINUTE).count("M") >= 1
    for words in (detail, replayed_detail):
        assert words(signal, [1e3, 2e9], over=2 * MINUTE, baseline=60.0)


def test_pod_signals_have_no_slot_form_and_no_device_words() -> None:
    assert Signal.RAY.row.form is None
    with pytest.raises(ValueError, match="ray is no device signal"):
        detail(Signal.RAY, [1.0], over=MINUTE)


@pytest.mark.parametrize("signal", list(Signal), ids=str)
def test_a_sighting_is_device_level_exactly_when_its_signal_is(signal: Signal) -> None:
    sighting = Sighting(signal, NOW, NOW, "seen")
    assert sighting.device_level is signal.row.device_level


@pytest.mark.parametrize("signal", DEVICE_SIGNALS, ids=str)
def test_the_demo_derives_each_field_its_row_gives_a_demo_reading_for(signal: Signal) -> None:
    demo = signal.row.demo
    expected = None if demo is None else demo.at(50.0)
    assert Profile.busy(50).reading(signal, 10) == expected


def test_the_forms_are_growth_and_mean() -> None:
    assert set(SLOT_PROMQL) == set(SlotForm)


def test_docs_signals_md_shows_the_table_as_generated() -> None:
    assert signal_docs.committed() == signal_docs.table(), (
        "docs/SIGNALS.md's table is stale: run `python -m tests.support.signal_docs`"
    )
