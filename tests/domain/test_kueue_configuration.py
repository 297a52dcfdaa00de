"""Kueue's Configuration as Kueue itself reads it. Each row's expected answer is the one
Kueue's own defaulting gives (kubernetes-sigs/kueue apis/config/v1beta2/defaults_test.go and
apis/config/v1beta1/defaults_test.go, case named in the row's id; the defaults are
defaults.go's), not our own reading of it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from autoscaler.domain.kueue_config import (
    LESS_THAN_INITIAL_SHARE,
    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
    PRIORITIZE_NON_BORROWING,
    V1BETA1,
    V1BETA2,
    KueueConfiguration,
    RequeuingStrategy,
    gate_or_default,
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


# fairSharing and admissionFairSharing as Kueue reads them: apis/config/v1beta1/
# configuration_conversion_test.go (case named in the id) converts v1beta1 into the v1beta2
# Kueue runs on, where the field present is on (preemption/fairsharing/strategy.go Enabled).
BOTH = (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE)
LTIS = LESS_THAN_INITIAL_SHARE


@pytest.mark.parametrize(
    ("document", "on", "strategies"),
    [
        pytest.param({"apiVersion": V1BETA2}, False, (), id="v1beta2-absent-off"),
        pytest.param(
            {"apiVersion": V1BETA2, "fairSharing": {"preemptionStrategies": [LTIS]}},
            True,
            (LTIS,),
            id="v1beta2-present-on",
        ),
        pytest.param(
            {"apiVersion": V1BETA1, "fairSharing": {"enable": True}},
            True,
            BOTH,
            id="with FairSharing enabled, but preemption strategies are empty",
        ),
        pytest.param(
            {"apiVersion": V1BETA1, "fairSharing": {"enable": False}},
            False,
            (),
            id="with FairSharing disabled",
        ),
        pytest.param(
            {"apiVersion": V1BETA1, "fairSharing": {}}, False, (), id="v1beta1-enable-absent"
        ),
        pytest.param({"apiVersion": V1BETA2, "fairSharing": "yes"}, None, (), id="not-a-mapping"),
        pytest.param({"apiVersion": "config.kueue.x-k8s.io/v9"}, None, (), id="unknown-version"),
    ],
)
def test_fair_sharing_is_on_as_kueue_reads_its_configuration(
    document: object, on: bool | None, strategies: tuple[str, ...]
) -> None:
    config = read(document)
    assert config.fair_sharing_on() is on
    if on:
        assert config.fair_sharing is not None
        assert config.fair_sharing.preemption_strategies == strategies


def test_an_unreadable_configuration_says_nothing_about_fair_sharing() -> None:
    config = unreadable(SOURCE, "cannot read it: 403")
    assert (config.fair_sharing_on(), config.admission_fair_sharing_on()) == (None, None)


@pytest.mark.parametrize(
    ("document", "on"),
    [
        pytest.param({"apiVersion": V1BETA2}, False, id="absent-off"),
        pytest.param({"apiVersion": V1BETA2, "admissionFairSharing": {}}, True, id="present-on"),
        pytest.param(
            {
                "apiVersion": V1BETA2,
                "admissionFairSharing": {},
                "featureGates": {"AdmissionFairSharing": False},
            },
            False,
            id="present-but-its-gate-off",  # admission_fair_sharing.go Enabled
        ),
    ],
)
def test_admission_fair_sharing_needs_the_field_and_its_gate(document: object, on: bool) -> None:
    assert read(document).admission_fair_sharing_on() is on


@pytest.mark.parametrize(
    ("gates", "expected"),
    [
        pytest.param({}, (True, "FairSharingPrioritizeNonBorrowing on (Kueue's default)"),
                     id="unnamed-kueue-default"),
        pytest.param({"FairSharingPrioritizeNonBorrowing": False},
                     (False, f"FairSharingPrioritizeNonBorrowing off in {SOURCE}"), id="named-off"),
    ],
)  # fmt: skip
def test_an_ordering_gate_is_the_configurations_else_kueues_default(
    gates: dict[str, bool], expected: tuple[bool, str]
) -> None:
    config = read({"apiVersion": V1BETA2, "featureGates": gates})
    assert gate_or_default(config, PRIORITIZE_NON_BORROWING) == expected
