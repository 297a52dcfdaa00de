"""The backtest's owner mapping against a real Prometheus, on backfilled kube-state-metrics
series beside the GPU series (tests/support/owner_histories.py).

With owners: each GPU pod busy until I = end - 2 h, then idle; at the policy's 1 h window each
workload is deactivated at I + 1 h and held to the end, one GPU-hour each. The kinds are the
real table's (`OWNER_KINDS`), found as its rows say, with no podSelector. The StatefulSet pod
no label names is idle too, but its owner cannot be told: listed, never counted. Without
kube_pod_owner: nothing is judged and the report says why, for each pod.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

import pytest

from autoscaler.adapters.prometheus.range import PrometheusRange
from autoscaler.backtest.arguments import add_backtest_arguments
from autoscaler.backtest.command import backtest, options_from
from autoscaler.backtest.report import Report, as_json, table
from autoscaler.settings.rules import build_policy
from autoscaler.settings.tree import PrometheusSettings, Settings
from tests.conftest import PrometheusSession
from tests.support.owner_histories import CHAT_GROUP, UNOWNED_END
from tests.support.prom_histories import Area

pytestmark = pytest.mark.real

H = 3600
# The real table's rows, each enabled: found as the table says, no selector given.
KINDS = ("RayCluster", "JobSet", "Deployment", "Notebook", "LeaderWorkerSet", "StatefulSet")


def run(prometheus_session: PrometheusSession, *, start: int, end: int) -> Report:
    enabled = {kind: {"enabled": True} for kind in KINDS}
    settings = Settings.model_validate({"cluster": {"ownerKinds": enabled}}).model_copy(
        update={"prometheus": PrometheusSettings(url=prometheus_session.server.url)}
    )
    parser = argparse.ArgumentParser()
    add_backtest_arguments(parser)
    # the policy's window charted only: the warm-up (2 h, the longest alternative's window)
    # keeps the reads inside their story's span
    span = ["--start", _stamp(start), "--end", _stamp(end), "--chart-windows", "1h"]
    args = parser.parse_args(span)
    policy = build_policy(settings)
    options = options_from(args, settings=settings, policy=policy, now=datetime.now(UTC))
    source = PrometheusRange(prometheus=settings.prometheus)
    try:
        return backtest(source, options=options, settings=settings, policy=policy)
    finally:
        source.close()


@pytest.fixture(scope="module")
def owned(prometheus_session: PrometheusSession) -> Report:
    end = prometheus_session.anchor(Area.BACKTEST_OWNERS)
    return run(prometheus_session, start=end - 3 * H, end=end)


@pytest.fixture(scope="module")
def unowned(prometheus_session: PrometheusSession) -> Report:
    end = prometheus_session.anchor(Area.BACKTEST_OWNERS) - UNOWNED_END
    return run(prometheus_session, start=end - 2 * H, end=end)


def test_each_gpu_pod_is_mapped_to_its_owner_through_the_intermediate_objects(
    owned: Report,
) -> None:
    found = as_json(owned)
    policy = found["variants"][0]

    deactivated = {
        (
            d["namespace"],
            d.get("ownerKind", "RayCluster"),
            d.get("ownerName", d.get("rayCluster")),
            d["gpuHours"],
        )
        for d in policy["deactivations"]
    }
    assert deactivated == {
        ("training", "JobSet", "train", 1.0),  # pod -> Job -> JobSet
        ("serving", "Deployment", "infer", 1.0),  # pod -> ReplicaSet -> Deployment
        ("lab", "Notebook", "nb", 1.0),  # the StatefulSet's pod, by its notebook-name label
        ("serving", "LeaderWorkerSet", CHAT_GROUP, 1.0),  # by Kueue's pod-group label
        ("ray", "RayCluster", "rc", 1.0),  # owned by the RayCluster itself
    }
    assert found["ownerKinds"] == {
        "Deployment": 1,
        "JobSet": 1,
        "LeaderWorkerSet": 1,
        "Notebook": 1,
        "RayCluster": 1,
    }
    assert found["ownerNote"] == (
        "a TrainJob above a JobSet (kube-state-metrics exports no JobSet owner) cannot be "
        "told: counted as training/JobSet/train"
    )


def test_a_pod_whose_chain_cannot_be_followed_is_named_and_never_counted_idle(
    owned: Report,
) -> None:
    found = as_json(owned)

    assert found["ownerUnknown"] == [
        {
            "namespace": "lab",
            "pod": "lone-0",
            "why": "owner unknown: StatefulSet/lone: kube-state-metrics exports no "
            "kube_statefulset_owner; no label of notebook-name, kueue.x-k8s.io/pod-group-name "
            "in kube_pod_labels (--metric-labels-allowlist)",
        }
    ]
    assert found["skippedPods"] == 1
    assert found["variants"][0]["namespaces"]["lab"]["gpuHours"] == 1.0  # the notebook's only
    lines = table(owned)
    assert lines[0].endswith(
        "5 GPUs in 5 workloads (1 Deployment, 1 JobSet, 1 LeaderWorkerSet, 1 Notebook, "
        "1 RayCluster) (1 other GPU pods skipped)"
    )
    assert "1 GPU pods not judged, their owner unknown (never counted idle):" in lines


def test_without_kube_pod_owner_the_report_says_it_cannot_and_counts_nothing_idle(
    unowned: Report,
) -> None:
    found: dict[str, Any] = as_json(unowned)

    assert found["variants"][0]["total"] == {"deactivations": 0, "gpuHours": 0.0, "regrets": 0}
    assert all(v["total"]["deactivations"] == 0 for v in found["variants"])
    assert [(u["namespace"], u["pod"], u["why"]) for u in found["ownerUnknown"]] == [
        ("lab", "nb-0", "owner unknown: kube_pod_owner not found"),
        ("serving", "infer-7d9f8c6b5-pqrst", "owner unknown: kube_pod_owner not found"),
        ("training", "train-workers-0-0-klmno", "owner unknown: kube_pod_owner not found"),
    ]
    assert found["ownerNote"].startswith(
        "kube_pod_owner not found (kube-state-metrics not scraped?)"
    )
    lines = table(unowned)
    assert any(line.startswith("Owners: kube_pod_owner not found") for line in lines)
    assert "3 GPU pods not judged, their owner unknown (never counted idle):" in lines


def _stamp(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
