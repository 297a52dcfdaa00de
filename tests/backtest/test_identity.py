"""Workload identity from labels alone: KubeRay pod names, or a configured label."""

from __future__ import annotations

import pytest

from autoscaler.backtest.identity import Resolver, WorkloadKey


@pytest.mark.parametrize(
    ("heads", "pod", "expected"),
    [
        pytest.param([], "rc-head-abcde", WorkloadKey("ns", "rc"), id="a-head-names-its-cluster"),
        pytest.param(
            ["my-rc-head-vwxyz"],
            "my-rc-small-group-worker-abcde",
            WorkloadKey("ns", "my-rc"),
            id="a-worker-joins-the-head-its-name-starts-with",
        ),
        pytest.param(
            ["a-head-aaaaa", "a-b-head-bbbbb"],
            "a-b-gpu-worker-abcde",
            WorkloadKey("ns", "a-b"),
            id="the-longest-matching-head-wins",
        ),
        pytest.param(
            [],
            "rc-small-group-worker-abcde",
            WorkloadKey("ns", "rc-small-group", exact=False),
            id="without-a-head-the-worker-group-is-the-unit",
        ),
        pytest.param([], "notebook-0", None, id="a-pod-that-is-not-a-ray-pod-is-not-ours"),
        pytest.param([], "rc-head-toolong", None, id="a-suffix-that-is-not-five-characters"),
    ],
)
def test_a_pod_is_given_to_its_raycluster(
    heads: list[str], pod: str, expected: WorkloadKey | None
) -> None:
    resolver = Resolver()
    for head in heads:
        resolver.learn("ns", head)

    assert resolver.resolve("ns", pod, {}) == expected


def test_a_configured_label_wins_over_the_pod_name() -> None:
    resolver = Resolver(label="ray_io_cluster")

    found = resolver.resolve("ns", "anything-0", {"ray_io_cluster": "training"})

    assert found == WorkloadKey("ns", "training")


def test_heads_only_count_in_their_own_namespace() -> None:
    resolver = Resolver()
    resolver.learn("other", "rc-head-abcde")

    assert resolver.resolve("ns", "rc-g-worker-abcde", {}) == WorkloadKey("ns", "rc-g", exact=False)


def test_a_pod_keeps_the_identity_it_first_got() -> None:
    resolver = Resolver()
    first = resolver.resolve("ns", "rc-g-worker-abcde", {})
    resolver.learn("ns", "rc-head-fghij")

    assert resolver.resolve("ns", "rc-g-worker-abcde", {}) == first
