"""The backtest's chart, drawn from `backtest --demo`: a time axis of GPUs held, held idle and
reclaimed next to the per-window bars, axes fitted to the data, and the regrets explained."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from autoscaler.backtest.axes import time_label, time_ticks, value_ticks
from autoscaler.backtest.over_time import LEFT, PLOT_H, PLOT_W, TOP
from autoscaler.cli import main
from tests.backtest.pages import SVG, svgs


def chart(tmp_path: Path, *config: str) -> str:
    """`idle-gpu-autoscaler backtest --demo --chart`, with nothing else running."""
    path = tmp_path / "out.html"
    assert main(["backtest", "--demo", *config, "--chart", str(path)]) == 0
    return path.read_text(encoding="utf-8")


def texts(svg: ET.Element, css_class: str) -> list[str]:
    return [e.text or "" for e in svg.iter() if e.get("class") == css_class]


def titles(svg: ET.Element, tag: str) -> list[str]:
    return [e.findtext(f"{SVG}title", "") for e in svg.iter(f"{SVG}{tag}")]


def points(polygon: ET.Element) -> list[tuple[float, float]]:
    pairs = (p.split(",") for p in polygon.attrib["points"].split())
    return [(float(x), float(y)) for x, y in pairs]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> str:
    return chart(tmp_path_factory.mktemp("chart"))


def test_the_time_axis_pictures_gpus_held_held_idle_and_reclaimed_over_the_day(page: str) -> None:
    over_time = svgs(page)["GPUs over time"]
    areas = {
        title.split(" (")[0]: polygon
        for polygon, title in zip(
            over_time.iter(f"{SVG}polygon"), titles(over_time, "polygon"), strict=True
        )
    }

    assert texts(over_time, "time-tick") == ["10:00", "12:00", "14:00", "16:00", "18:00", "20:00"]
    assert list(areas) == ["GPUs held", "GPUs held idle", "GPUs reclaimed"]
    for polygon in areas.values():  # drawn inside the plot, from the left edge to the right
        xs, ys = zip(*points(polygon), strict=True)
        assert (min(xs), max(xs)) == (LEFT, LEFT + PLOT_W)
        assert min(ys) >= TOP and max(ys) == TOP + PLOT_H
    assert "GPUs held (at most 50)" in titles(over_time, "polygon")
    # the lab's three idle clusters from 13:10, kai's notebook from 15:10, and rd's bob and
    # carol from 19:20
    assert "GPUs reclaimed (at most 26)" in titles(over_time, "polygon")


def test_the_axes_are_fitted_to_the_data(page: str) -> None:
    found = svgs(page)
    gpu_axis = [t.text for t in found["GPUs over time"].iter(f"{SVG}text") if t.text]
    hours_axis = [t.text for t in found["GPU-hours by window"].iter(f"{SVG}text") if t.text]

    assert "50" in gpu_axis and "60" not in gpu_axis  # 50 GPUs at most
    assert "200" in hours_axis and "250" not in hours_axis  # 171.8 GPU-hours at most


def test_the_bars_stand_next_to_the_time_axis_one_per_window(page: str) -> None:
    bars = svgs(page)["GPU-hours by window"]
    windows = [title.split(":")[0] for title in titles(bars, "rect")]
    policy_bar = next(
        r for r in bars.iter(f"{SVG}rect") if r.findtext(f"{SVG}title", "")[:3] == "1h:"
    )

    assert windows == ["15m", "30m", "1h", "2h", "4h", "8h"]
    assert "142.3 GPU-hours, 8 deactivations, 0 regrets" in policy_bar.findtext(f"{SVG}title", "")
    assert page.index('aria-label="GPUs over time"') < page.index(
        'aria-label="GPU-hours by window"'
    )


def test_the_regrets_are_explained_and_traced_to_the_clusters_behind_them(page: str) -> None:
    assert "A <strong>regret</strong> is a would-be deactivation after which" in page
    assert (
        "<li>30m: 2 regrets, research/slow-loader-gpu-group stopped at 09:31, busy again " in page
    )
    assert "research/weight-loader-gpu-group stopped at 09:31, busy again 35 min later" in page
    assert "<li>15m: 28 regrets, " in page and "and 25 more</li>" in page


def test_the_policy_itself_regrets_nothing(page: str) -> None:
    over_time = svgs(page)["GPUs over time"]
    assert "no regret: after none of the policy's 8 stops" in "".join(over_time.itertext())


def test_a_policy_that_regrets_marks_each_regret_on_the_time_axis(tmp_path: Path) -> None:
    config = tmp_path / "short-window.yaml"
    config.write_text("policy:\n  idleWindow: 15m\n", encoding="utf-8")

    page = chart(tmp_path, "--config", str(config))

    marks = titles(svgs(page)["GPUs over time"], "path")
    assert len(marks) == 28 and all(m.startswith("regret: research/") for m in marks)
    assert (
        "regret: research/slow-loader-gpu-group stopped at 09:16, its GPUs busy again" in marks[0]
    )


@pytest.mark.parametrize(
    ("highest", "ticks"),
    [
        pytest.param(22, [0, 5, 10, 15, 20, 25], id="gpus"),
        pytest.param(63.5, [0, 20, 40, 60, 80], id="gpu-hours"),
        pytest.param(3, [0, 1, 2, 3], id="few-gpus-in-whole-steps"),
        pytest.param(0, [0, 1], id="nothing-still-draws-an-axis"),
    ],
)
def test_value_ticks_end_at_or_just_above_the_highest_value(
    highest: float, ticks: list[float]
) -> None:
    assert value_ticks(highest) == ticks


def test_a_week_is_marked_by_day_and_a_day_by_hours() -> None:
    monday = datetime(2026, 3, 2, tzinfo=UTC)
    week = time_ticks(monday, monday + timedelta(days=7))
    day = time_ticks(monday + timedelta(hours=9), monday + timedelta(hours=20, minutes=15))

    assert [time_label(t, span=timedelta(days=7)) for t in week][:2] == ["Mar 02", "Mar 03"]
    assert time_label(day[0], span=timedelta(hours=11)) == "10:00"
    assert len(week) <= 8 and len(day) <= 8
