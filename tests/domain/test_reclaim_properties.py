"""Properties of the reclaim plan over random cohorts: whatever the quotas, a candidate serves
at most one waiter, a served waiter fits once its set is freed, and no candidate of the set
could be left running."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.domain.queues.contention import Candidate, plan_reclaim
from autoscaler.domain.queues.facts import QueueFacts, QueueQuota, Waiter
from autoscaler.domain.queues.fit import fit
from tests.support.quota_builders import GPU, a_waiter, an_idle, gpu_queue, queues, quota

QUEUES = ("cq0", "cq1", "cq2")


@st.composite
def cohorts(draw: st.DrawFn) -> tuple[dict[str, QueueQuota], list[Candidate], list[Waiter]]:
    built = []
    for name in QUEUES:
        nominal = draw(st.integers(0, 8))
        limits = quota(
            nominal,
            borrowing=draw(st.none() | st.integers(0, 4)),
            lending=draw(st.none() | st.integers(0, nominal)),
        )
        built.append(gpu_queue(name, gpus=limits, used=draw(st.integers(0, 8)), cohort="co"))
    idle = [
        an_idle(
            f"i{n}", draw(st.sampled_from(QUEUES)), gpus=draw(st.integers(1, 4)), priority=n % 2
        )
        for n in range(draw(st.integers(0, 5)))
    ]
    waiters = [
        a_waiter(f"w{n}", draw(st.sampled_from(QUEUES)), {GPU: draw(st.integers(1, 6))})
        for n in range(draw(st.integers(0, 4)))
    ]
    return queues(*built), idle, waiters


@settings(max_examples=200, deadline=None)
@given(cohorts())
def test_a_served_waiter_fits_with_its_set_and_needs_every_member(
    drawn: tuple[dict[str, QueueQuota], list[Candidate], list[Waiter]],
) -> None:
    cluster, idle, waiters = drawn
    plan = plan_reclaim(idle, QueueFacts(queues=cluster, waiters=tuple(waiters)))
    freed = [r.candidate.ref for r in plan.reclaims]
    assert len(freed) == len(set(freed))
    by_ref = {c.ref: c for c in idle}
    if not plan.waiters or not plan.waiters[0].freed:
        return  # later waiters see the quotas once earlier ones are admitted: check the first
    report = plan.waiters[0]
    waiter = next(w for w in waiters if w.ref == report.waiter)
    members = [by_ref[ref] for ref in report.freed]
    assert fit(waiter, cluster, _frees(members)).fits
    for left in members:
        assert not fit(waiter, cluster, _frees([c for c in members if c is not left])).fits


def _frees(chosen: list[Candidate]) -> dict[str, dict[tuple[str, str], int]]:
    freed: dict[str, dict[tuple[str, str], int]] = {}
    for candidate in chosen:
        queue = freed.setdefault(candidate.cluster_queue, {})
        for key, qty in candidate.usage.items():
            queue[key] = queue.get(key, 0) + qty
    return freed
