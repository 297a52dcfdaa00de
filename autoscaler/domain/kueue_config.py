"""Kueue's own Configuration, as far as this service reads it: `waitForPodsReady` (whether
Kueue times out admitted Workloads whose pods are not ready, after how long, and how it
requeues them) and `featureGates`. Kueue has no API that says either: both are read from the
manager's configuration file, the `kueue-manager-config` ConfigMap's
`controller_manager_config.yaml` (the adapter reads it; this module interprets it, pure).

The shape is upstream's (kubernetes-sigs/kueue, read at ff69552e):
- `config.kueue.x-k8s.io/v1beta1` (apis/config/v1beta1/configuration_types.go,
  `WaitForPodsReady`): `enable` (false when absent: defaults.go sets `Enable: false`),
  `timeout` (defaults.go `defaultPodsReadyTimeout`, 5 minutes, when enabled without one),
  `recoveryTimeout` (defaults to `timeout`), `requeuingStrategy`;
- `config.kueue.x-k8s.io/v1beta2` (apis/config/v1beta2/configuration_types.go): no `enable`
  field; defaults.go gives every Configuration a `waitForPodsReady` (on), its `timeout`
  `DefaultWaitForPodsReadyTimeout` (30 minutes) when unset or zero, `recoveryTimeout` the
  timeout, and the requeuing backoff 60 s base, 3600 s max
  (`DefaultRequeuingBackoffBaseSeconds`, `DefaultRequeuingBackoffMaxSeconds`);
- `featureGates` (both versions): a map of gate name to bool overriding Kueue's defaults. A
  gate it does not name is at Kueue's default for its version, or set by the manager's
  `--feature-gates` flag, which this service cannot see: unknown.
- `fairSharing`: v1beta1 turns it on with `enable: true` (default false; conversion to
  v1beta2 drops a disabled one, configuration_conversion.go); v1beta2 has no switch: the
  field present is on (pkg/scheduler/preemption/fairsharing/strategy.go `Enabled`). Its
  `preemptionStrategies` default to LessThanOrEqualToFinalShare then LessThanInitialShare
  (v1beta1 defaults.go; preemption.go `parseStrategies`);
- `admissionFairSharing`: present is on while the feature gate AdmissionFairSharing is
  (pkg/util/admissionfairsharing `Enabled`).

Anything else (another apiVersion, a field of the wrong type, a duration Go would refuse) is
unknown, named in `unknown`, and never assumed; unknown never stops anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta

from autoscaler.domain.durations import format_duration, parse_duration

V1BETA1 = "config.kueue.x-k8s.io/v1beta1"
V1BETA2 = "config.kueue.x-k8s.io/v1beta2"
# The timeout Kueue applies when the configuration names none, per version (defaults.go).
DEFAULT_TIMEOUT = {V1BETA1: timedelta(minutes=5), V1BETA2: timedelta(minutes=30)}
# Whether waitForPodsReady is on when the configuration does not say (v1beta1: `enable`
# false by default; v1beta2 has no switch: always on).
DEFAULT_ENABLED = {V1BETA1: False, V1BETA2: True}
CONFIG_KEY = "controller_manager_config.yaml"


@dataclass(frozen=True)
class RequeuingStrategy:
    """How Kueue requeues a Workload its timer evicted; None: not said and not defaulted."""

    timestamp: str | None = None  # Eviction or Creation
    backoff_limit_count: int | None = None  # None: requeued without limit
    backoff_base_seconds: int | None = None
    backoff_max_seconds: int | None = None


@dataclass(frozen=True)
class WaitForPodsReady:
    """None in a field: unknown (unreadable as Kueue would read it)."""

    enabled: bool | None
    timeout: timedelta | None = None
    recovery_timeout: timedelta | None = None  # zero: Kueue does not time out recovery
    requeuing: RequeuingStrategy = RequeuingStrategy()


LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"
# Every strategy Kueue knows, in the order it defaults to.
DEFAULT_STRATEGIES = (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE)


@dataclass(frozen=True)
class FairSharing:
    """The Configuration's `fairSharing`: on or off, and the preemption strategies."""

    enabled: bool
    preemption_strategies: tuple[str, ...] = ()


@dataclass(frozen=True)
class KueueConfiguration:
    """What Kueue's Configuration says, or why it could not be read (`problem`)."""

    source: str  # "kueue-system/kueue-manager-config"
    problem: str | None = None  # "cannot read kueue-system/kueue-manager-config: 403 ..."
    api_version: str | None = None
    wait_for_pods_ready: WaitForPodsReady | None = None  # None: unknown
    # The gates the Configuration sets; a gate not here is unknown (Kueue's default for its
    # version, or the manager's --feature-gates flag), never assumed off or on.
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    unknown: tuple[str, ...] = ()  # fields read but not understood, each with why
    fair_sharing: FairSharing | None = None  # None: unknown
    admission_fair_sharing: bool | None = None  # the field present; None: unknown

    @property
    def readable(self) -> bool:
        return self.problem is None

    def fair_sharing_on(self) -> bool | None:
        """Whether Kueue runs with fair sharing; None when this Configuration cannot say."""
        if self.problem is not None or self.fair_sharing is None:
            return None
        return self.fair_sharing.enabled

    def admission_fair_sharing_on(self) -> bool | None:
        """Admission fair sharing: the field present and its feature gate on; None: unknown."""
        if self.problem is not None or self.admission_fair_sharing is None:
            return None
        return self.admission_fair_sharing and gate_or_default(self, ADMISSION_FAIR_SHARING)[0]

    def pods_ready_timeout(self, *, recovering: bool) -> tuple[timedelta | None, str | None]:
        """(the timeout Kueue's waitForPodsReady applies, None), or (None, why it is
        unknown): `recoveryTimeout` for a Workload waiting for recovery, else `timeout`."""
        ready = self.wait_for_pods_ready
        if self.problem is not None:
            return None, self.problem
        if ready is None or ready.enabled is None:
            return None, f"{self.source} does not say whether waitForPodsReady is on"
        if not ready.enabled:
            return None, f"{self.source} says waitForPodsReady is off, yet PodsReady is there"
        timeout = ready.recovery_timeout if recovering else ready.timeout
        if timeout is None:
            return None, f"{self.source} gives no timeout Kueue would read"
        if timeout == timedelta(0):
            return None, f"{self.source} turns the recovery timeout off (0s)"
        return timeout, None

    def summary(self) -> str:
        """One line for the start-up log and check-config."""
        if self.problem is not None:
            why = self.problem.removeprefix(f"cannot read {self.source}: ")
            return (
                f"Kueue configuration {self.source}: cannot read ({why}); workloads with a "
                "PodsReady condition are left to Kueue, its deadline unknown"
            )
        ready = self.wait_for_pods_ready
        if ready is None or ready.enabled is None:
            said = "waitForPodsReady unknown"
        elif not ready.enabled:
            said = "waitForPodsReady off"
        elif ready.timeout is None:
            said = "waitForPodsReady on, timeout unknown"
        else:
            said = f"waitForPodsReady on, timeout {format_duration(ready.timeout)}"
        gates = ", ".join(f"{k}={str(v).lower()}" for k, v in sorted(self.feature_gates.items()))
        extra = f"; feature gates {gates}" if gates else ""
        unknown = f"; unknown: {'; '.join(self.unknown)}" if self.unknown else ""
        return f"Kueue configuration {self.source}: {said}{extra}{unknown}"


def unreadable(source: str, problem: str) -> KueueConfiguration:
    return KueueConfiguration(source=source, problem=problem)


def interpret(document: object, *, source: str) -> KueueConfiguration:
    """The Configuration document (YAML already loaded) as Kueue reads it, defaults applied
    where its version's defaults.go applies them; what cannot be read is unknown."""
    if not isinstance(document, Mapping):
        return unreadable(source, f"{CONFIG_KEY} is not a mapping")
    version = str(document.get("apiVersion") or "")
    gates, unknown = _gates(document.get("featureGates"))
    if version not in DEFAULT_TIMEOUT:
        return KueueConfiguration(
            source=source,
            api_version=version or None,
            feature_gates=gates,
            unknown=(*unknown, f"apiVersion {version or 'missing'} not modelled"),
        )
    ready, more = _wait_for_pods_ready(document.get("waitForPodsReady"), version=version)
    fair, fair_unknown = _fair_sharing(document.get("fairSharing"), version=version)
    admission = document.get("admissionFairSharing")
    admission_on: bool | None = admission is not None  # absent or null: off
    if admission is not None and not isinstance(admission, Mapping):
        admission_on, more = None, [*more, "admissionFairSharing is not a mapping"]
    return KueueConfiguration(
        source=source,
        api_version=version,
        wait_for_pods_ready=ready,
        feature_gates=gates,
        unknown=(*unknown, *more, *fair_unknown),
        fair_sharing=fair,
        admission_fair_sharing=admission_on,
    )


def _fair_sharing(value: object, *, version: str) -> tuple[FairSharing | None, list[str]]:
    if value is None:  # absent or null: off in both versions
        return FairSharing(enabled=False), []
    if not isinstance(value, Mapping):
        return None, ["fairSharing is not a mapping"]
    enabled: object = True  # v1beta2: present is on
    if version == V1BETA1:
        enabled = value.get("enable", False)
        if not isinstance(enabled, bool):
            return None, ["fairSharing.enable not true or false"]
    raw = value.get("preemptionStrategies") or []
    if not isinstance(raw, list) or any(s not in DEFAULT_STRATEGIES for s in raw):
        return None, [f"fairSharing.preemptionStrategies {raw!r} not modelled"]
    strategies = tuple(str(s) for s in raw) or DEFAULT_STRATEGIES
    return FairSharing(enabled=bool(enabled), preemption_strategies=strategies), []


def _gates(value: object) -> tuple[dict[str, bool], list[str]]:
    if value is None:
        return {}, []
    if not isinstance(value, Mapping):
        return {}, ["featureGates is not a map"]
    gates = {str(k): v for k, v in value.items() if isinstance(v, bool)}
    odd = sorted(str(k) for k, v in value.items() if not isinstance(v, bool))
    return gates, [f"featureGates {', '.join(odd)} not true or false"] if odd else []


def _wait_for_pods_ready(value: object, *, version: str) -> tuple[WaitForPodsReady, list[str]]:
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        return WaitForPodsReady(enabled=None), ["waitForPodsReady is not a mapping"]
    unknown: list[str] = []
    enabled: bool | None = DEFAULT_ENABLED[version]
    if version == V1BETA1 and "enable" in value:
        raw = value["enable"]
        enabled = raw if isinstance(raw, bool) else None
        if enabled is None:
            unknown.append("waitForPodsReady.enable not true or false")
    if not enabled:
        return WaitForPodsReady(enabled=enabled), unknown
    timeout = _duration(value, "timeout", unknown)
    if timeout is None and "timeout" not in value:
        timeout = DEFAULT_TIMEOUT[version]
    elif timeout == timedelta(0):  # v1beta2 defaults a zero timeout; v1beta1 keeps it
        timeout = DEFAULT_TIMEOUT[version] if version == V1BETA2 else None
        if timeout is None:
            unknown.append("waitForPodsReady.timeout 0s not modelled")
    recovery = timeout
    if "recoveryTimeout" in value:  # zero: Kueue does not time out the recovery
        recovery = _duration(value, "recoveryTimeout", unknown)
    return (
        WaitForPodsReady(
            enabled=True,
            timeout=timeout,
            recovery_timeout=recovery,
            requeuing=_requeuing(value.get("requeuingStrategy"), unknown),
        ),
        unknown,
    )


def _duration(value: Mapping[str, object], key: str, unknown: list[str]) -> timedelta | None:
    if key not in value:
        return None
    try:
        return parse_duration(value[key])
    except (TypeError, ValueError):
        unknown.append(f"waitForPodsReady.{key} {value[key]!r} not a duration")
        return None


def _requeuing(value: object, unknown: list[str]) -> RequeuingStrategy:
    """Kueue's defaults (Eviction, 60 s base, 3600 s max) where it names none."""
    found = value if isinstance(value, Mapping) else {}
    if value is not None and not isinstance(value, Mapping):
        unknown.append("waitForPodsReady.requeuingStrategy is not a mapping")

    def count(key: str, default: int | None) -> int | None:
        raw = found.get(key, default)
        if raw is None or (isinstance(raw, int) and not isinstance(raw, bool)):
            return raw
        unknown.append(f"waitForPodsReady.requeuingStrategy.{key} {raw!r} not a number")
        return None

    return RequeuingStrategy(
        timestamp=str(found.get("timestamp") or "Eviction"),
        backoff_limit_count=count("backoffLimitCount", None),
        backoff_base_seconds=count("backoffBaseSeconds", 60),
        backoff_max_seconds=count("backoffMaxSeconds", 3600),
    )


# Kueue's feature gates this service depends on: (the first version that has it, its default
# there, its stage), from pkg/features/kube_features.go (read at ff69552e). PriorityBoost is
# `{Version: "0.17", Default: false, PreRelease: Alpha}`: off unless the manager turns it on.
PRIORITY_BOOST_GATE = "PriorityBoost"
PRIORITIZE_NON_BORROWING = "FairSharingPrioritizeNonBorrowing"
PRIORITY_SORTING_WITHIN_COHORT = "PrioritySortingWithinCohort"
ADMISSION_FAIR_SHARING = "AdmissionFairSharing"
GATE_DEFAULTS: Mapping[str, tuple[str, bool, str]] = {
    PRIORITY_BOOST_GATE: ("0.17", False, "alpha"),
    PRIORITIZE_NON_BORROWING: ("0.17", True, "beta"),
    PRIORITY_SORTING_WITHIN_COHORT: ("0.6", True, "beta"),
    ADMISSION_FAIR_SHARING: ("0.15", True, "beta"),
}


def gate_or_default(config: KueueConfiguration | None, gate: str) -> tuple[bool, str]:
    """A gate as the Configuration sets it, else Kueue's default at ff69552e, and which of
    the two it is. For gates that only order the model's answer, not ones a rule acts on:
    the manager's `--feature-gates` flag, which is not readable, may differ."""
    if config is not None and config.problem is None and gate in config.feature_gates:
        named = config.feature_gates[gate]
        return named, f"{gate} {'on' if named else 'off'} in {config.source}"
    default = GATE_DEFAULTS[gate][1]
    return default, f"{gate} {'on' if default else 'off'} (Kueue's default)"


@dataclass(frozen=True)
class GateServed:
    """Whether Kueue serves a feature gate: True, False, or None (unknown), and one line."""

    gate: str
    on: bool | None
    line: str


def gate_served(config: KueueConfiguration | None, gate: str) -> GateServed:
    """A gate as Kueue's Configuration sets it. Kueue has no API that says which gates are
    on: a gate the Configuration does not name is at its version's default or set by the
    manager's `--feature-gates` flag, neither of which this service can read, so unknown
    (an old Kueue without the gate ignores it too; a Kueue that does not know a gate its
    Configuration names refuses to start, so a gate named true is served)."""
    since, default, stage = GATE_DEFAULTS[gate]
    about = f"Kueue feature gate {gate} ({stage} since v{since}, default {str(default).lower()})"
    if config is None:
        return GateServed(gate, None, f"{about}: unknown, Kueue's Configuration is not read")
    if config.problem is not None:
        return GateServed(gate, None, f"{about}: unknown, {config.problem}")
    named = config.feature_gates.get(gate)
    if named is None:
        return GateServed(
            gate,
            None,
            f"{about}: unknown, {config.source} does not name it (the manager's "
            "--feature-gates flag and Kueue's version are not readable)",
        )
    said = "on" if named else "off"
    return GateServed(gate, named, f"{about}: {said} in {config.source}")
