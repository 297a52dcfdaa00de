"""`idle-gpu-autoscaler backtest`: what the policy (and a few alternatives) would have done.

The composition root passes the policy it builds from the settings and a range-query source
(`PrometheusRange` over the same connection settings as `serve`). History is read from
`--since` ago (or `--start`) to `--end` in chunks, after a warm-up long enough for the longest
window and the grace period, so the first decision sees what the live service would have.
Beside the GPU series, kube-state-metrics' owner series tell each GPU pod's owner
(`owners.py`), with the table's rows as `cluster.ownerKinds` configures their pod selectors.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TextIO

from autoscaler.backtest.chart import write_chart
from autoscaler.backtest.identity import Resolver
from autoscaler.backtest.modes import compare
from autoscaler.backtest.occupancy import OccupancyCounter
from autoscaler.backtest.owners import OwnerHistory
from autoscaler.backtest.queues import QueueHistory, queue_map
from autoscaler.backtest.queues import read_queue_history as read_queues
from autoscaler.backtest.replay import Replay
from autoscaler.backtest.replay import Settings as ReplaySettings
from autoscaler.backtest.report import Report, VariantReport, as_json, table
from autoscaler.backtest.rule_report import summarize
from autoscaler.backtest.rulebook import policy_variant
from autoscaler.backtest.sightings import EvidenceTrack
from autoscaler.backtest.signals import evidence_queries
from autoscaler.backtest.source import ChunkPlan, RangeQueries, chunks, slot_queries
from autoscaler.backtest.variant import ALWAYS, PER_RULE, WHEN_CONTENDED, Variant
from autoscaler.core.clock import SystemClock
from autoscaler.core.errors import MetricsUnavailable
from autoscaler.core.ports import Clock
from autoscaler.domain.durations import parse_duration
from autoscaler.domain.policy.decisions import Policy
from autoscaler.domain.policy.owners import OWNER_KINDS, OwnerKind, PodsFound
from autoscaler.settings.tree import Settings

EXIT_METRICS = 1
EXIT_USAGE = 2
DEFAULT_SINCE = timedelta(days=7)


@dataclass(frozen=True)
class BacktestOptions:
    start: datetime
    end: datetime
    step: timedelta
    alternatives: tuple[Variant, ...]
    chart_windows: tuple[timedelta, ...]
    horizon: timedelta
    raycluster_label: str | None = None
    chunk: timedelta = timedelta(hours=6)
    queue_of: Mapping[str, str] = field(default_factory=dict)  # namespace -> ClusterQueue


@dataclass(frozen=True)
class Span:
    start: datetime
    end: datetime
    queue_of: Mapping[str, str] = field(default_factory=dict)  # the recorded LocalQueues'


def options_from(
    args: argparse.Namespace,
    *,
    settings: Settings,
    policy: Policy,
    now: datetime,
    recorded: Span | None = None,
) -> BacktestOptions:
    """`recorded`: the span of a recorded history, the default range instead of the last 7d."""
    end = args.end or (recorded.end if recorded else now)
    if args.start or args.since:
        start = args.start or end - args.since
    else:
        start = recorded.start if recorded else end - DEFAULT_SINCE
    if start >= end:
        raise ValueError(
            f"the range from {start:%Y-%m-%dT%H:%M:%SZ} to {end:%Y-%m-%dT%H:%M:%SZ} is empty: "
            "give a --start before --end (or a --since)"
        )
    return BacktestOptions(
        start=start,
        end=end,
        step=args.step or settings.loop.interval,
        alternatives=tuple(_variant(text, policy) for text in args.alternative)
        or default_alternatives(policy),
        chart_windows=tuple(
            _option_duration("--chart-windows", w) for w in _chart_window_texts(args)
        ),
        horizon=args.regret_horizon,
        raycluster_label=args.raycluster_label,
        chunk=args.chunk,
        queue_of={**(recorded.queue_of if recorded else {}), **queue_map(args.queue_of)},
    )


def default_alternatives(policy: Policy) -> tuple[Variant, ...]:
    window, threshold = policy.default_rule.usage.window, policy.default_rule.usage.threshold
    found = [Variant(window / 2, threshold), Variant(window * 2, threshold)]
    if threshold * 2 < 1:
        found.append(Variant(window, threshold * 2))
    return tuple(found)


def run_backtest(
    args: argparse.Namespace,
    *,
    settings: Settings,
    policy: Policy,
    source: RangeQueries,
    out: TextIO | None = None,
    clock: Clock | None = None,
    recorded: Span | None = None,
) -> int:
    """Replay, then print the table or JSON (and write the chart); 1 when Prometheus fails.
    `recorded`: the span of a recorded history (`--demo`), replayed whole by default."""
    stream, errors = out or sys.stdout, sys.stderr if out is None else out
    try:
        now = (clock or SystemClock()).now()
        options = options_from(args, settings=settings, policy=policy, now=now, recorded=recorded)
        report = backtest(source, options=options, settings=settings, policy=policy)
    except ValueError as exc:
        errors.write(f"error: {exc}\n")
        return EXIT_USAGE
    except MetricsUnavailable as exc:
        errors.write(f"error: {exc}\n")
        return EXIT_METRICS
    if args.output == "json":
        stream.write(json.dumps(as_json(report), indent=2) + "\n")
    else:
        stream.write("\n".join(table(report)) + "\n")
    if args.chart is not None:
        write_chart(report, args.chart)
    return 0


def backtest(
    source: RangeQueries, *, options: BacktestOptions, settings: Settings, policy: Policy
) -> Report:
    base = policy_variant(policy)
    charted = tuple(
        Variant(w, policy.default_rule.usage.threshold)
        for w in sorted({*options.chart_windows, policy.default_rule.usage.window})
    )
    plan = _plan(options, (base, *options.alternatives, *charted), policy)
    plan = replace(plan, closed_ranges=source.closed_ranges(at=options.end))
    queues = read_queues(source, plan, queue_of=options.queue_of) if options.queue_of else None
    modes = _modes(base) if queues is not None else {}
    variants = list(dict.fromkeys((base, *options.alternatives, *charted, *modes.values())))
    owners = OwnerHistory(kinds=configured_kinds(settings))
    replay = _replay(
        options, variants=variants, settings=settings, policy=policy, queues=queues, owners=owners
    )
    warnings: dict[str, None] = {}
    slot, closed = policy.default_rule.usage.slot, plan.closed_ranges
    queries = slot_queries(settings.prometheus.signals, slot=slot, closed_ranges=closed)
    evidence = evidence_queries(settings.prometheus.evidence, slot=slot, closed_ranges=closed)
    occupancy = OccupancyCounter(
        start=options.start,
        end=options.end,
        slot=replay.settings.slot,
        threshold=policy.default_rule.usage.threshold,
    )
    for fetched in chunks(source, queries, plan, evidence=evidence, owners=True):
        if fetched.owners is not None:
            owners.feed(fetched.owners)
        warnings.update(dict.fromkeys(replay.feed(fetched.chunk, fetched.evidence)))
        occupancy.add(
            fetched.chunk, follows=lambda key: (key.namespace, key.pod) not in replay.skipped
        )
        warnings.update(dict.fromkeys(fetched.warnings))
    found = dict(replay.results())
    reports = {v: VariantReport(v, v == base, tuple(found[v])) for v in variants}
    compared = [(mode, found[v]) for mode, v in modes.items()]
    return Report(
        start=options.start,
        end=options.end,
        step=options.step,
        horizon=options.horizon,
        gpus=replay.gpu_count,
        workloads=replay.workload_count,
        skipped_pods=len(replay.skipped),
        kinds=replay.kind_counts,
        owner_unknown=tuple((*pod, why) for pod, why in sorted(replay.unknown.items())),
        owner_note=owner_note(owners, named=replay.named),
        warnings=tuple(warnings),
        variants=tuple(reports[v] for v in dict.fromkeys((base, *options.alternatives))),
        chart=tuple(reports[v] for v in charted),
        occupancy=occupancy.result(),
        modes=None if queues is None else compare(compared, queues),
        rules=summarize(policy, replay.matches, found[base]),
        states=replay.states()[base],
    )


def configured_kinds(settings: Settings) -> tuple[OwnerKind, ...]:
    """The table's rows, each with the pod selector `cluster.ownerKinds` gives it."""
    configured = settings.cluster.owner_kinds
    return tuple(
        replace(row, pods_found=PodsFound.SELECTOR, pod_selector=selector)
        if row.kind in configured and (selector := configured[row.kind].pod_selector)
        else row
        for row in OWNER_KINDS
    )


def owner_note(owners: OwnerHistory, *, named: int) -> str | None:
    """How pods were mapped to owners, when not wholly from kube-state-metrics, and what
    they cannot tell (a TrainJob above its JobSet)."""
    failed = "; ".join(f"{metric} unread: {why}" for metric, why in owners.failures.items())
    if not owners.scraped:
        said = f"{failed}; " if failed else ""
        return (
            f"{said}kube_pod_owner not found (kube-state-metrics not scraped?): RayCluster pods "
            f"named from KubeRay's pod names ({named} GPU pods), every other GPU pod's owner "
            "unknown, never counted idle"
        )
    blind = [
        f"{said} cannot be told: counted as {', '.join(sorted(owned))}"
        for said, owned in sorted(owners.blind.items())
    ]
    return "; ".join(filter(None, [failed, *blind])) or None


def _modes(base: Variant) -> dict[str, Variant]:
    """`always` and `when-contended` for every workload, each keeping its rule's window,
    threshold and action; between them the policy as configured when its rules mix modes."""
    found = {ALWAYS: replace(base, reclaim=ALWAYS)}
    if base.reclaim == PER_RULE:
        found[PER_RULE] = base
    found[WHEN_CONTENDED] = replace(base, reclaim=WHEN_CONTENDED)
    return found


def _replay(
    options: BacktestOptions,
    *,
    variants: Sequence[Variant],
    settings: Settings,
    policy: Policy,
    queues: QueueHistory | None,
    owners: OwnerHistory,
) -> Replay:
    slot = int(policy.default_rule.usage.slot.total_seconds())
    step = int(options.step.total_seconds())
    if step % slot or step <= 0:
        raise ValueError(f"--step must be a multiple of the policy's slot ({slot} s)")
    return Replay(
        policy=policy,
        variants=variants,
        settings=ReplaySettings(
            start=options.start,
            end=options.end,
            slot=slot,
            step=step,
            horizon=options.horizon,
            lookback=int(settings.policy.idle_since_lookback.total_seconds()),
        ),
        resolver=Resolver(label=options.raycluster_label, owners=owners),
        queues=queues,
        queue_of=options.queue_of,
        evidence=EvidenceTrack.for_policy(
            settings=settings, policy=policy, windows=[v.window for v in variants]
        ),
    )


def _plan(options: BacktestOptions, variants: Sequence[Variant], policy: Policy) -> ChunkPlan:
    slot = int(policy.default_rule.usage.slot.total_seconds())
    spans = [v.window for v in variants] + [r.usage.window for r in policy.rules]
    grace = max(r.grace_period for r in policy.rules)
    warmup = max(*spans, grace) + policy.default_rule.usage.slot
    first = int((options.start - warmup).timestamp()) // slot * slot
    last = int(options.end.timestamp()) // slot * slot
    steps = max(1, int(options.chunk.total_seconds()) // slot)
    return ChunkPlan(start=first, end=last, slot=slot, steps_per_chunk=steps)


def _variant(text: str, policy: Policy) -> Variant:
    window, _, percent = text.partition("@")
    try:
        threshold = float(percent) / 100 if percent else policy.default_rule.usage.threshold
    except ValueError:
        threshold = -1.0  # not a number: refused below in the words of an out-of-range one
    if not 0 <= threshold < 1:
        raise ValueError(
            f"--alternative {text!r}: the threshold is a percentage below 100, e.g. 30m@10"
        )
    return Variant(_option_duration("--alternative", window), threshold)


def _chart_window_texts(args: argparse.Namespace) -> list[str]:
    return [w for w in str(args.chart_windows).split(",") if w]


def _option_duration(option: str, text: str) -> timedelta:
    """A duration inside an option's value, refused naming the option (the parser's words
    say how to write it)."""
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise ValueError(f"{option}: {exc}") from None
