"""The Reclaimer between the policy and the caps: `when-contended` stops go ahead only for a
waiter they let in, and the queues are read only when such a stop is due."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

from prometheus_client import CollectorRegistry

from autoscaler.domain.models import (
    Action,
    Decision,
    Snapshot,
    State,
    WaitersSeen,
    WorkloadInfo,
    WorkloadRef,
)
from autoscaler.domain.queues.facts import QueueFacts
from autoscaler.engine.cycle.reclaim import Reclaimer
from autoscaler.engine.metrics.telemetry import ServiceMetrics
from tests.support.domain_builders import NOW, a_rule_named, a_workload, minutes_ago
from tests.support.fakes import FakeClock
from tests.support.quota_builders import GPU, a_flavor, a_queue, a_waiter, queues

CQ = "team-a-cq"
CONTENDED, ALWAYS = "shared", "default"


@dataclass
class FakeQueues:
    facts: QueueFacts
    reads: list[None] = field(default_factory=list)

    def read_queues(self) -> QueueFacts:
        self.reads.append(None)
        return self.facts


def holder(name: str, *, gpus: int) -> WorkloadInfo:
    info = a_workload("team-a", name).gpu_pod(f"{name}-0", gpus=gpus).build()
    usage = {("default", GPU): gpus}
    return replace(info, cluster_queue=CQ, admitted_usage=usage)


def due(info: WorkloadInfo, *, rule: str = CONTENDED) -> Decision:
    return Decision(
        workload=info.ref,
        state=State.IDLE,
        action=Action.DEACTIVATE,
        reason="idle for 90m",
        gpus=info.gpus,
        idle_since=minutes_ago(90),
        rule=a_rule_named(rule),
    )


def full_queue(*waiting_gpus: int) -> QueueFacts:
    queue = a_queue(CQ).group(a_flavor("default", {GPU: 4})).using("default", GPU, 4)
    waiters = tuple(a_waiter(f"waiter-{i}", CQ, {GPU: n}) for i, n in enumerate(waiting_gpus))
    return QueueFacts(queues=queues(queue), waiters=waiters)


def screen(
    pending: FakeQueues | None, infos: list[WorkloadInfo], decisions: list[Decision]
) -> tuple[tuple[Decision, ...], WaitersSeen | None]:
    reclaimer = Reclaimer(pending=pending, logger=logging.getLogger("test"))
    return reclaimer.screen(infos, decisions, contended=lambda d: d.rule.name == CONTENDED)


def test_without_a_when_contended_stop_due_the_queues_are_not_read() -> None:
    pending = FakeQueues(full_queue(2))
    info = holder("rc", gpus=4)
    decisions, waiters = screen(pending, [info], [due(info, rule=ALWAYS)])
    assert pending.reads == []
    assert waiters is None
    assert decisions[0].action is Action.DEACTIVATE


def test_a_stop_that_lets_a_waiter_in_goes_ahead_and_names_it() -> None:
    pending = FakeQueues(full_queue(2))
    info = holder("rc", gpus=4)
    (decision,), waiters = screen(pending, [info], [due(info)])
    assert decision.action is Action.DEACTIVATE
    assert decision.beneficiary == WorkloadRef("team-a", "waiter-0")
    assert "frees quota for team-a/waiter-0" in decision.reason
    assert waiters is not None and waiters.outcomes == {"served": 1}


def test_with_nobody_waiting_the_idle_workload_is_left_running_with_the_reason() -> None:
    info = holder("rc", gpus=4)
    (decision,), _ = screen(FakeQueues(full_queue()), [info], [due(info)])
    assert decision.action is Action.NONE
    assert decision.state is State.IDLE
    assert decision.reason.endswith(
        "left running until contended: nobody waits that it would let in (rule shared)"
    )


def test_a_waiter_too_big_for_the_queue_frees_nothing() -> None:
    info = holder("rc", gpus=4)
    (decision,), waiters = screen(FakeQueues(full_queue(8)), [info], [due(info)])
    assert decision.action is Action.NONE
    assert waiters is not None and waiters.outcomes == {"cannot fit": 1}


def test_when_who_waits_is_unknown_contended_stops_wait_and_always_stops_go_ahead() -> None:
    failing = FakeQueues(QueueFacts(failure="clusterqueues: 503"))
    contended, always = holder("a", gpus=4), holder("b", gpus=4)
    decisions, waiters = screen(
        failing, [contended, always], [due(contended), due(always, rule=ALWAYS)]
    )
    assert [d.action for d in decisions] == [Action.NONE, Action.DEACTIVATE]
    assert "who waits is unknown (rule shared; clusterqueues: 503)" in decisions[0].reason
    assert waiters is not None and waiters.failure == "clusterqueues: 503"


def test_without_a_reader_of_pending_work_contended_stops_never_go_ahead() -> None:
    info = holder("rc", gpus=4)
    (decision,), _ = screen(None, [info], [due(info)])
    assert decision.action is Action.NONE
    assert "no reader of pending work" in decision.reason


def test_the_metrics_count_waiter_outcomes_and_a_failed_read_as_an_error() -> None:
    metrics = ServiceMetrics(CollectorRegistry(), clock=FakeClock(NOW))
    info = holder("rc", gpus=4)
    _, served = screen(FakeQueues(full_queue(2)), [info], [due(info)])
    _, failed = screen(FakeQueues(QueueFacts(failure="down")), [info], [due(info)])
    for waiters in (served, failed):
        assert isinstance(waiters, WaitersSeen)
        metrics.observe(
            Snapshot(1, NOW, (), cluster_ok=True, metrics_ok=True, dry_run=False, waiters=waiters)
        )
    registry = metrics.registry
    judged = "idle_gpu_autoscaler_waiters_judged_total"
    assert registry.get_sample_value(judged, {"outcome": "served"}) == 1
    errors = registry.get_sample_value("idle_gpu_autoscaler_errors_total", {"source": "queues"})
    assert errors == 1


def test_each_cycle_reports_the_waiters_judged_and_why_a_fit_is_unknown() -> None:
    facts = full_queue(2)
    doubtful = a_queue("other-cq").group(a_flavor("default", {GPU: 4})).not_modelled("TAS")
    unknown_queue = a_waiter("lost", "gone-cq", {GPU: 1})
    facts = replace(
        facts,
        queues={**facts.queues, **queues(doubtful)},
        waiters=(*facts.waiters, a_waiter("tas", "other-cq", {GPU: 1}), unknown_queue),
    )
    metrics = ServiceMetrics(CollectorRegistry(), clock=FakeClock(NOW))
    info = holder("rc", gpus=4)

    _, seen = screen(FakeQueues(facts), [info], [due(info)])
    assert seen is not None
    metrics.observe(
        Snapshot(1, NOW, (), cluster_ok=True, metrics_ok=True, dry_run=False, waiters=seen)
    )

    assert seen.judged == 3
    assert seen.unknown_why == {"queue-unmodelled": 1, "queue-unknown": 1}
    # explain shows the freed workload the judgement of its waiter, without other names
    assert seen.served == {
        info.ref: "team-a/waiter-0 (team-a-cq) served: fits: flavor default for nvidia.com/gpu"
    }
    sample = metrics.registry.get_sample_value
    assert sample("idle_gpu_autoscaler_waiters_last_judged", {"outcome": "served"}) == 1
    assert sample("idle_gpu_autoscaler_waiters_last_judged", {"outcome": "fit unknown"}) == 2
    unknown = "idle_gpu_autoscaler_waiters_fit_unknown"
    assert sample(unknown, {"reason": "queue-unmodelled"}) == 1
    assert sample(unknown, {"reason": "order-unknown"}) == 0
