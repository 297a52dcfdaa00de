"""`backtest` against a real Prometheus, on backfilled history whose right answer is known.

Samples every 60 s at 7 s past the minute, backfilled into the session's Prometheus
(`backtest_stories` in tests/support/prom_histories.py). Each namespace tells one story, with
the policy's defaults (5%, 60-minute window, 15-minute grace, 80% coverage); I, R, S are known
times:
- idle:   a RayCluster (GPU head + worker) busy until I = end - 4 h, then idle to the end;
- regret: two GPUs of a headless worker busy until R = end - 5 h, idle for 90 minutes, busy again;
- sparse: busy until S = end - 5 h, then idle with a 30-minute telemetry gap at S + 10 min;
- gap:    busy throughout, but no telemetry for 2.5 hours: a gap is never idle;
- other:  an idle pod that is not a Ray pod: skipped.
The last busy sample (at X - 53 s) lies in the slot ending at X, so the window is counted from X.
"""

from __future__ import annotations

import argparse
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from autoscaler.adapters.prometheus.range import PrometheusRange
from autoscaler.adapters.prometheus.range_semantics import PROBE
from autoscaler.backtest.arguments import add_backtest_arguments
from autoscaler.backtest.command import run_backtest
from autoscaler.settings.rules import build_policy
from autoscaler.settings.tree import PrometheusSettings, Settings
from tests.backtest.pages import svgs
from tests.conftest import PrometheusSession
from tests.support.prom import AuthProxy, PrometheusServer, make_tls_files, ranges_in
from tests.support.prom_histories import Area

pytestmark = pytest.mark.real

H, M = 3600, 60
TOKEN = "backtest-token"


@dataclass(frozen=True)
class History:
    prom: PrometheusServer
    proxy: AuthProxy
    end: int


@pytest.fixture(scope="module")
def history(
    prometheus_session: PrometheusSession, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[History]:
    prom = prometheus_session.server
    tls = make_tls_files(tmp_path_factory.mktemp("backtest") / "tls")
    with AuthProxy(upstream=prom.url, tls=tls, token=TOKEN) as proxy:
        yield History(prom, proxy, prometheus_session.anchor(Area.BACKTEST))


def backtest(
    history: History,
    *argv: str,
    prometheus: PrometheusSettings | None = None,
    rules: list[dict[str, Any]] | None = None,
) -> tuple[int, str]:
    settings = Settings.model_validate({"rules": rules or []}).model_copy(
        update={"prometheus": prometheus or PrometheusSettings(url=history.prom.url)}
    )
    parser = argparse.ArgumentParser()
    add_backtest_arguments(parser)
    span = ["--start", _stamp(history.end - 6 * H), "--end", _stamp(history.end)]
    args = parser.parse_args([*span, "--chart-windows", "30m,1h,2h", *argv])
    source = PrometheusRange(prometheus=settings.prometheus)
    out = io.StringIO()
    try:
        code = run_backtest(
            args, settings=settings, policy=build_policy(settings), source=source, out=out
        )
    finally:
        source.close()
    return code, out.getvalue()


@pytest.fixture(scope="module")
def result(history: History) -> dict[str, Any]:
    code, printed = backtest(history, "--output", "json")
    assert code == 0, printed
    found: dict[str, Any] = json.loads(printed)
    return found


def variant(result: dict[str, Any], window: str, threshold: float = 5.0) -> dict[str, Any]:
    (found,) = [
        v
        for v in result["variants"]
        if v["window"] == window and v["thresholdPercent"] == threshold
    ]
    return found


def figures(found: dict[str, Any], namespace: str) -> tuple[int, float, int]:
    numbers = found["namespaces"].get(namespace, {"deactivations": 0, "gpuHours": 0, "regrets": 0})
    return numbers["deactivations"], numbers["gpuHours"], numbers["regrets"]


@pytest.mark.parametrize(
    ("window", "namespace", "expected"),
    [
        # deactivated I + window, held until the end: 2 GPUs x (4 h - window)
        pytest.param("1h", "idle", (1, 6.0, 0), id="idle-stretch-at-the-policy-window"),
        pytest.param("30m", "idle", (1, 7.0, 0), id="idle-stretch-at-half-the-window"),
        pytest.param("2h", "idle", (1, 4.0, 0), id="idle-stretch-at-double-the-window"),
        # back in the slot ending R + 91 min: 2 GPUs x (91 min - window), a regret
        pytest.param("1h", "regret", (1, 1.033, 1), id="regret-at-the-policy-window"),
        pytest.param("30m", "regret", (1, 2.033, 1), id="regret-at-half-the-window"),
        pytest.param("2h", "regret", (0, 0.0, 0), id="no-regret-when-the-window-outlasts-it"),
        # coverage reaches 80% only once the window holds no more than 12 dark slots of 60
        pytest.param("1h", "sparse", (1, 3.533, 0), id="gap-delays-to-S-plus-88-min"),
        pytest.param("30m", "sparse", (1, 3.933, 0), id="gap-delays-to-S-plus-64-min"),
        pytest.param("2h", "sparse", (1, 2.733, 0), id="gap-delays-to-S-plus-136-min"),
        pytest.param("1h", "gap", (0, 0.0, 0), id="a-telemetry-gap-is-never-idle"),
    ],
)
def test_each_story_gives_exactly_its_known_figures(
    result: dict[str, Any], window: str, namespace: str, expected: tuple[int, float, int]
) -> None:
    assert figures(variant(result, window), namespace) == expected


def test_the_policy_comes_first_with_its_totals_and_each_deactivation(
    result: dict[str, Any], history: History
) -> None:
    policy = result["variants"][0]

    assert (policy["window"], policy["thresholdPercent"], policy["policy"]) == ("1h", 5.0, True)
    assert policy["total"] == {"deactivations": 3, "gpuHours": 10.567, "regrets": 1}
    regret = next(d for d in policy["deactivations"] if d["namespace"] == "regret")
    assert regret == {
        "namespace": "regret",
        "rayCluster": "back-rc-small-group",
        "nameFromWorker": True,
        "gpus": 2,
        "at": _stamp(history.end - 4 * H),
        "until": _stamp(history.end - 5 * H + 91 * M),
        "gpuHours": 1.033,
        "rule": "default",
        "cameBack": True,
        "regret": True,
    }


def test_each_namespace_is_judged_under_its_own_rules_window_from_the_same_queries(
    history: History,
) -> None:
    rules = [
        {"name": "quick", "match": {"namespaces": ["idle"]}, "idleWindow": "30m"},
        {"name": "patient", "match": {"namespaces": ["regret"]}, "idleWindow": "2h"},
    ]

    code, printed = backtest(history, "--output", "json", rules=rules)

    assert code == 0, printed
    found = json.loads(printed)
    policy = found["variants"][0]
    assert policy["byRule"] and policy["policy"]
    # each namespace as the uniform variant of its rule's window shows it (the table above)
    assert figures(policy, "idle") == (1, 7.0, 0)
    assert figures(policy, "regret") == (0, 0.0, 0)
    assert figures(policy, "sparse") == (1, 3.533, 0)
    by_rule = {r["rule"]: (r["rayClusters"], r["deactivations"]) for r in found["rules"]}
    assert by_rule == {"quick": (1, 1), "patient": (1, 0), "default": (2, 1)}


def test_the_alternatives_default_to_half_and_double_the_window_and_double_the_threshold(
    result: dict[str, Any],
) -> None:
    shown = [(v["window"], v["thresholdPercent"]) for v in result["variants"]]

    assert shown == [("1h", 5.0), ("30m", 5.0), ("2h", 5.0), ("1h", 10.0)]
    assert variant(result, "1h", 10.0)["total"] == variant(result, "1h")["total"]


def test_identity_comes_from_labels_and_other_pods_are_skipped(result: dict[str, Any]) -> None:
    names = {d["rayCluster"] for d in variant(result, "1h")["deactivations"]}

    assert names == {"idle-rc", "back-rc-small-group", "sparse-rc"}
    assert (result["gpus"], result["rayClusters"], result["skippedPods"]) == (6, 4, 1)


def test_the_table_shows_each_namespace_and_the_total_side_by_side(history: History) -> None:
    code, printed = backtest(history)

    lines = printed.splitlines()
    assert code == 0
    assert lines[3].split() == [
        "NAMESPACE",
        "1h",
        "@",
        "5%",
        "(policy)",
        "30m",
        "@",
        "5%",
        "2h",
        "@",
        "5%",
        "1h",
        "@",
        "10%",
    ]
    total = next(line for line in lines if line.startswith("TOTAL"))
    assert lines[-1] == "no queue data: when-contended not compared"  # no Kueue metrics here
    assert re.split(r"\s{2,}", total) == [
        "TOTAL",
        "3 / 10.6 / 1",
        "3 / 13.0 / 1",
        "2 / 6.7 / 0",
        "3 / 10.6 / 1",
    ]


def test_the_chart_is_a_self_contained_html_page_with_one_bar_per_window(
    history: History, tmp_path: Path
) -> None:
    chart = tmp_path / "chart.html"

    code, _ = backtest(history, "--chart", str(chart))

    page = chart.read_text(encoding="utf-8")
    assert code == 0 and page.startswith("<!DOCTYPE html>")
    checker = _Checker()
    checker.feed(page)
    checker.close()
    assert checker.open == [] and "script" not in checker.seen and "link" not in checker.seen
    svg = svgs(page)["GPU-hours by window"]
    bars = [e for e in svg if e.tag.endswith("rect")]
    assert [b.findtext("{http://www.w3.org/2000/svg}title", "").split(":")[0] for b in bars] == [
        "30m",
        "1h",
        "2h",
    ]


def test_the_same_connection_settings_as_serve_reach_prometheus_through_a_token_proxy(
    history: History, tmp_path: Path
) -> None:
    token = tmp_path / "token"
    token.write_text(TOKEN, encoding="utf-8")
    prometheus = PrometheusSettings(
        url=history.proxy.url, ca_file=history.proxy.ca_bundle, bearer_token_file=token
    )

    code, printed = backtest(history, "--output", "json", prometheus=prometheus)

    assert code == 0, printed
    assert json.loads(printed)["variants"][0]["total"]["gpuHours"] == 10.567
    [probe, *ranges] = history.proxy.queries()
    # Once, first: whether the server's ranges are left-open (range_semantics.py).
    assert (probe.path, probe.params["query"], probe.token) == ("/api/v1/query", [PROBE], TOKEN)
    assert ranges and all(r.path == "/api/v1/query_range" and r.token == TOKEN for r in ranges)


@pytest.fixture
def through_proxy(history: History, tmp_path: Path) -> Iterator[PrometheusSettings]:
    """The proxy's connection settings; its faults and request log are cleared after."""
    token = tmp_path / "token"
    token.write_text(TOKEN, encoding="utf-8")
    history.proxy.reset()
    yield PrometheusSettings(
        url=history.proxy.url, ca_file=history.proxy.ca_bundle, bearer_token_file=token
    )
    history.proxy.reset()


@pytest.mark.parametrize(
    ("semantics", "one_slot"), [("left-open", ("60", "s")), ("left-closed", ("59999", "ms"))]
)
def test_range_semantics_set_sends_no_probe_and_writes_the_ranges_for_that_server(
    history: History, through_proxy: PrometheusSettings, semantics: str, one_slot: tuple[str, str]
) -> None:
    prometheus = through_proxy.model_copy(update={"range_semantics": semantics})

    code, printed = backtest(history, "--output", "json", prometheus=prometheus)

    assert code == 0, printed
    assert json.loads(printed)["variants"][0]["total"]["gpuHours"] == 10.567
    sent = history.proxy.queries()
    assert sent and all(r.path == "/api/v1/query_range" for r in sent), "no probe"
    ranges = ranges_in(sent)
    assert one_slot in ranges
    shortened = {(amount, unit) for amount, unit in ranges if amount.endswith("999")}
    assert shortened == (ranges if semantics == "left-closed" else set()), ranges


def test_a_probe_answered_by_another_engine_fails_naming_the_setting(
    history: History, through_proxy: PrometheusSettings
) -> None:
    history.proxy.serve_value(5)

    code, printed = backtest(history, prometheus=through_proxy)

    assert code == 1
    assert printed.startswith("error: cannot tell whether Prometheus keeps a sample")
    assert "set prometheus.rangeSemantics to left-open (Prometheus 3) or left-closed" in printed
    assert [r.query for r in history.proxy.queries()] == [PROBE]


def test_an_unreachable_prometheus_fails_with_a_reason(history: History) -> None:
    code, printed = backtest(history, prometheus=PrometheusSettings(url="http://127.0.0.1:9"))

    assert code == 1
    assert printed.startswith("error: cannot connect to Prometheus")


class _Checker(HTMLParser):
    """Checks that every element opened is closed and records the tags seen."""

    VOID = frozenset({"meta", "line", "rect", "br", "link", "img"})

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.seen: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen.add(tag)
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen.add(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID:
            return
        assert self.open and self.open[-1] == tag, (self.open, tag)
        self.open.pop()


def _stamp(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
