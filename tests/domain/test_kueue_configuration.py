"""Kueue's Configuration as Kueue itself reads it. Each row's expected answer is the one
Kueue's own defaulting gives (kubernetes-sigs/kueue apis/config/v1beta2/defaults_test.go and
apis/config/v1beta1/defaults_test.go, case named in the row's id; the defaults are
defaults.go's), not our own reading of it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from autoscaler.domain.kueue_config import (
    V1BETA1,
    V1BETA2,
    KueueConfiguration,
    RequeuingStrategy,
    interpret,
    unreadable,
)

SOURCE = "kueue-system/kueue-manager-config"
MIN = timedelta(minutes=1)


def read(document: object) -> KueueConfiguration:
    return interpret(document, source=SOURCE)


@pytest.mark.parametrize(
    ("document", "enabled", "timeout", "recovery"),
    [
        # v1beta2 "defaulting namespace" (any case without waitForPodsReady): on, 30m
        pytest.param({"apiVersion": V1BETA2}, True, 30 * MIN, 30 * MIN, id="v1beta2-absent-on"),
        # v1beta2 "defaulting waitForPodsReady values": an empty one is on with 30m
        pytest.param(
            {"apiVersion": V1BETA2, "waitForPodsReady": {}},
            True,
            30 * MIN,
            30 * MIN,
            id="v1beta2-defaulting-waitForPodsReady-values",
        ),
        # v1beta2 "defaulting waitForPodsReady recoveryTimeout to timeout" (customTimeout 5m)
        pytest.param(
            {"apiVersion": V1BETA2, "waitForPodsReady": {"timeout": "5m"}},
            True,
            5 * MIN,
            5 * MIN,
            id="v1beta2-defaulting-recoveryTimeout-to-timeout",
        ),
        # v1beta2 "disabling waitForPodsReady recoveryTimeout with zero value"
        pytest.param(
            {"apiVersion": V1BETA2, "waitForPodsReady": {"timeout": "5m", "recoveryTimeout": "0s"}},
            True,
            5 * MIN,
            timedelta(0),
            id="v1beta2-disabling-recoveryTimeout-with-zero",
        ),
        # v1beta1: `enable` false unless set (defaults.go `Enable: false`)
        pytest.param({"apiVersion": V1BETA1}, False, None, None, id="v1beta1-absent-off"),
        # v1beta1 "defaulting waitForPodsReady values": enable true, timeout 5m
        pytest.param(
            {"apiVersion": V1BETA1, "waitForPodsReady": {"enable": True}},
            True,
            5 * MIN,
            5 * MIN,
            id="v1beta1-defaulting-waitForPodsReady-values",
        ),
        pytest.param(
            {"apiVersion": V1BETA1, "waitForPodsReady": {"enable": True, "timeout": "10m0s"}},
            True,
            10 * MIN,
            10 * MIN,
            id="v1beta1-go-spelled-timeout",
        ),
    ],
)
def test_wait_for_pods_ready_as_kueue_defaults_it(
    document: object, enabled: bool, timeout: timedelta | None, recovery: timedelta | None
) -> None:
    config = read(document)

    ready = config.wait_for_pods_ready
    assert ready is not None and config.readable and config.unknown == ()
    assert (ready.enabled, ready.timeout, ready.recovery_timeout) == (enabled, timeout, recovery)


def test_the_requeuing_strategy_given_is_kept_and_the_rest_defaulted() -> None:
    """v1beta2 "respecting provided waitForPodsReady values"; defaults 60 s / 3600 s."""
    given = read(
        {
            "apiVersion": V1BETA2,
            "waitForPodsReady": {
                "timeout": "1m",
                "requeuingStrategy": {
                    "timestamp": "Creation",
                    "backoffBaseSeconds": 63,
                    "backoffMaxSeconds": 1800,
                },
            },
        }
    ).wait_for_pods_ready
    defaulted = read({"apiVersion": V1BETA2}).wait_for_pods_ready

    assert given is not None and defaulted is not None
    assert given.requeuing == RequeuingStrategy("Creation", None, 63, 1800)
    assert defaulted.requeuing == RequeuingStrategy("Eviction", None, 60, 3600)


@pytest.mark.parametrize(
    ("document", "unknown"),
    [
        pytest.param(
            {"apiVersion": "config.kueue.x-k8s.io/v1"},
            "apiVersion config.kueue.x-k8s.io/v1 not modelled",
            id="another-version",
        ),
        pytest.param(
            {"apiVersion": V1BETA2, "waitForPodsReady": {"timeout": "soon"}},
            "waitForPodsReady.timeout 'soon' not a duration",
            id="a-timeout-go-would-refuse",
        ),
        pytest.param(
            {"apiVersion": V1BETA1, "waitForPodsReady": {"enable": "yes"}},
            "waitForPodsReady.enable not true or false",
            id="an-enable-that-is-not-a-bool",
        ),
    ],
)
def test_what_cannot_be_read_is_unknown_never_assumed(document: object, unknown: str) -> None:
    config = read(document)

    ready = config.wait_for_pods_ready
    assert unknown in config.unknown
    assert ready is None or ready.enabled is None or ready.timeout is None


def test_feature_gates_set_are_known_and_the_others_unknown() -> None:
    config = read(
        {"apiVersion": V1BETA2, "featureGates": {"PrioritySortingWithinCohort": False, "X": 1}}
    )

    assert config.feature_gates == {"PrioritySortingWithinCohort": False}  # the rest unknown
    assert "featureGates X not true or false" in config.unknown


def test_an_unreadable_configuration_knows_no_gate_and_says_why_in_one_line() -> None:
    config = unreadable(SOURCE, f"cannot read {SOURCE}: 403 Forbidden")

    assert (config.readable, config.feature_gates, config.wait_for_pods_ready) == (False, {}, None)
    assert config.summary() == (
        f"Kueue configuration {SOURCE}: cannot read (403 Forbidden); workloads with a "
        "PodsReady condition are left to Kueue, its deadline unknown"
    )


@pytest.mark.parametrize(
    ("document", "said"),
    [
        pytest.param(
            {"apiVersion": V1BETA2, "waitForPodsReady": {"timeout": "10m"}},
            "waitForPodsReady on, timeout 10m",
            id="on",
        ),
        pytest.param({"apiVersion": V1BETA1}, "waitForPodsReady off", id="off"),
        pytest.param(
            {"apiVersion": V1BETA2, "featureGates": {"A": True}},
            "waitForPodsReady on, timeout 30m; feature gates A=true",
            id="gates",
        ),
    ],
)
def test_the_summary_line(document: object, said: str) -> None:
    assert read(document).summary() == f"Kueue configuration {SOURCE}: {said}"
