"""The PromQL of the fresh check: the newest sample of every GPU of a few pods, in one query.

The candidates' pods go into regex matchers (one alternation of names), in both label styles
(`exported_pod` behind a ServiceMonitor, `pod` with honorLabels), mapped into our own labels
as in `promql`. Each signal's newest sample (an instant selector: within the server's
lookback delta) is merged per GPU with `max`, once as the value and once as its timestamp,
told apart by a `stat` label, so value and time arrive in one answer:

    label_replace(max by (keys) (<value of each signal>), "stat", "value", "", "")
    or label_replace(max by (keys) (timestamp(<each signal>)), "stat", "time", "", "")

The device evidence signals ride in the same query (ISSUE 16), tagged `stat="evidence"` and
`evidence="<signal>"`: each probe's value over the slot ending now, kept only where it reaches
its bar (framebuffer grown, data arriving, power over the learned or configured baseline), so
an idle candidate adds nothing to the answer. One query still, whatever the signals.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta

from autoscaler.adapters.prometheus.device_evidence import FreshProbe
from autoscaler.adapters.prometheus.promql import KEY_LABELS, Row, gpu_key, relabelled, selector
from autoscaler.domain.usage.evidence import FleetEvidence, Sighting
from autoscaler.domain.usage.fresh import LatestSample
from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.settings.tree import SignalSettings

STAT = "stat"
EVIDENCE = "evidence"
_NAME = re.compile(r"^[A-Za-z0-9._-]+$")  # what Kubernetes allows in a namespace or pod name


def latest_query(
    signals: Sequence[SignalSettings],
    pods: Iterable[tuple[str, str]],
    *,
    probes: Sequence[FreshProbe] = (),
    slot: timedelta = timedelta(minutes=1),
    closed_ranges: bool = False,
) -> str:
    """One query over these (namespace, pod)s; ValueError for a name that is not a name."""
    wanted = sorted(set(pods))
    namespaces = _alternation(namespace for namespace, _ in wanted)
    names = _alternation(pod for _, pod in wanted)
    renamed = (f'exported_namespace=~"{namespaces}"', f'exported_pod=~"{names}"')
    kept = ('exported_pod=""', f'namespace=~"{namespaces}"', f'pod=~"{names}"')
    values, times = [], []
    for signal in signals:
        new, old = selector(signal, *renamed), selector(signal, *kept)
        scale = repr(float(signal.scale))
        values.append(_tagged(f"({new} / {scale}) or ({old} / {scale})", signal))
        times.append(_tagged(f"timestamp({new}) or timestamp({old})", signal))
    keys = ", ".join(KEY_LABELS)
    return (
        f'label_replace(max by ({keys}) ({" or ".join(values)}), "{STAT}", "value", "", "")'
        f' or label_replace(max by ({keys}) ({" or ".join(times)}), "{STAT}", "time", "", "")'
        + _evidence_terms(
            probes, renamed=renamed, kept=kept, slot=slot, closed_ranges=closed_ranges
        )
    )


def _evidence_terms(
    probes: Sequence[FreshProbe],
    *,
    renamed: tuple[str, ...],
    kept: tuple[str, ...],
    slot: timedelta,
    closed_ranges: bool,
) -> str:
    terms = []
    for probe in probes:
        new = probe.fresh_expression(renamed, slot=slot, closed_ranges=closed_ranges)
        old = probe.fresh_expression(kept, slot=slot, closed_ranges=closed_ranges)
        if new is not None and old is not None:
            either = relabelled(f"({new}) or ({old})")
            terms.append(f'label_replace({either}, "{EVIDENCE}", "{probe.signal}", "", "")')
    if not terms:
        return ""
    by = ", ".join((*KEY_LABELS, EVIDENCE, "modelName"))
    return (
        f' or label_replace(max by ({by}) ({" or ".join(terms)}), "{STAT}", "{EVIDENCE}", "", "")'
    )


def latest_evidence(
    rows: Sequence[Row],
    *,
    wanted: Iterable[tuple[str, str]],
    probes: Sequence[FreshProbe],
    slot: timedelta,
    now: datetime,
) -> FleetEvidence:
    """The candidates' activity over the slot ending `now`, one sighting per GPU and signal."""
    asked, by_signal = set(wanted), {probe.signal.value: probe for probe in probes}
    found: dict[GpuKey, tuple[Sighting, ...]] = {}
    for labels, value in rows:
        key, probe = gpu_key(labels), by_signal.get(labels.get(EVIDENCE, ""))
        if labels.get(STAT) != EVIDENCE or key is None or probe is None:
            continue
        if (key.namespace, key.pod) not in asked or not math.isfinite(value):
            continue
        detail = probe.fresh_detail(value, slot=slot, labels=labels)
        seen = Sighting(probe.signal, now, now, detail)
        found[key] = (*found.get(key, ()), seen)
    return FleetEvidence(gpus=found)


def latest_samples(
    rows: Sequence[Row], *, wanted: Iterable[tuple[str, str]]
) -> dict[tuple[str, str], tuple[LatestSample, ...]]:
    """The answer per (namespace, pod), only for the pods asked about."""
    asked = set(wanted)
    values: dict[GpuKey, float] = {}
    times: dict[GpuKey, float] = {}
    for labels, value in rows:
        key = gpu_key(labels)
        if key is None or (key.namespace, key.pod) not in asked or labels.get(STAT) == EVIDENCE:
            continue  # a namesake pod in another namespace matched the regex; evidence
        (times if labels.get(STAT) == "time" else values)[key] = value
    grouped: dict[tuple[str, str], list[LatestSample]] = {}
    for key in sorted(values.keys() | times.keys()):
        sample = LatestSample(key, _finite(values.get(key)), _time(times.get(key)))
        grouped.setdefault((key.namespace, key.pod), []).append(sample)
    return {pod: tuple(samples) for pod, samples in grouped.items()}


def _tagged(expr: str, signal: SignalSettings) -> str:
    return f'label_replace({relabelled(expr)}, "signal", "{signal.metric}", "", "")'


def _alternation(names: Iterable[str]) -> str:
    unique = sorted(set(names))
    for name in unique:
        if not _NAME.match(name):
            raise ValueError(f"not a Kubernetes name: {name!r}")
    return "|".join(name.replace(".", "[.]") for name in unique)


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _time(value: float | None) -> datetime | None:
    seconds = _finite(value)
    return None if seconds is None else datetime.fromtimestamp(seconds, tz=UTC)
