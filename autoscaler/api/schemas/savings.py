"""The savings report's answer: the figures of docs/SAVINGS.md, in total and per namespace,
per queue and per owner."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from autoscaler.api.schemas.base import View
from autoscaler.domain.audit.savings import UNKNOWN, Figures, Group
from autoscaler.domain.policy.owner_words import subject_name


class SavingsFigures(View):
    held_idle_gpu_hours: float = Field(
        description="GPUs × hours idle before our deactivation, plus workloads idle now."
    )
    held_not_running_gpu_hours: float = Field(
        0.0,
        description="GPUs × hours admitted while no GPU pod ran (quota held without work, the "
        "not-running class) before our deactivation, plus workloads not running now; apart "
        "from the idle GPU-hours.",
    )
    reclaimed_gpu_hours: float = Field(
        description="GPUs × hours from our deactivation until reactivated, or until now."
    )
    wait_shortened_seconds: float = Field(
        description="Queue wait shortened, bigger is better: per waiter admitted into the quota "
        "one of our stops freed (in its ClusterQueue or cohort, whatever rule made the stop), "
        "how much sooner than it would otherwise have been: until the stopped workload was seen "
        "ending, else until the period's end (then `waitShortenedAtLeast`)."
    )
    wait_shortened_at_least: bool = Field(
        False,
        description="The wait shortened is a lower bound: a stopped workload was not seen "
        "ending within the period.",
    )
    waiters_admitted: int = Field(
        description="The waiters counted in the wait shortened, each once."
    )
    deactivations: int
    regretted: int = Field(description="Deactivations undone within an hour.")
    contested: int = Field(description="Workloads marked contested.")
    requeues: int = Field(
        0,
        description="Stops that are requeues (Kueue's pod integration: the owner's pods come "
        "back as a new Workload that queues again), apart from `deactivations`, the lasting "
        "stops.",
    )
    requeued_gpu_hours: float = Field(
        0.0,
        description="For the requeues: GPUs × hours from the stop until the owner was admitted "
        "again (or stopped again, or until now): handed to the queue while it waited again; "
        "apart from the reclaimed GPU-hours.",
    )

    @classmethod
    def of(cls, figures: Figures) -> SavingsFigures:
        return cls(
            held_idle_gpu_hours=round(figures.held_idle_gpu_hours, 3),
            held_not_running_gpu_hours=round(figures.held_not_running_gpu_hours, 3),
            reclaimed_gpu_hours=round(figures.reclaimed_gpu_hours, 3),
            wait_shortened_seconds=figures.wait_shortened.total_seconds(),
            wait_shortened_at_least=figures.wait_shortened_at_least,
            waiters_admitted=figures.waiters_admitted,
            deactivations=figures.deactivations,
            regretted=figures.regretted,
            contested=figures.contested,
            requeues=figures.requeues,
            requeued_gpu_hours=round(figures.requeued_gpu_hours, 3),
        )


class SavingsRow(SavingsFigures):
    namespace: str = Field(examples=["team-a"])
    queue: str | None = Field(None, description="The LocalQueue; `?` when not recorded.")
    owner: str | None = Field(None, examples=["RayCluster/my-cluster"])
    owner_display: str | None = Field(
        None,
        description="The owner as people know it: `<kind> <namespace>/<name>`.",
        examples=["RayCluster team-a/my-cluster"],
    )

    @classmethod
    def row(cls, group: Group, figures: Figures) -> SavingsRow:
        base = SavingsFigures.of(figures).model_dump()
        return cls(
            namespace=group.namespace,
            queue=group.queue or None,
            owner=group.owner or None,
            owner_display=subject_name(group.namespace, group.owner)
            if group.owner and group.owner != UNKNOWN
            else None,
            **base,
        )


class SavingsReport(View):
    since: datetime
    until: datetime
    namespace: str | None = Field(None, description="The one namespace reported, if named.")
    total: SavingsFigures
    by_namespace: list[SavingsRow]
    by_queue: list[SavingsRow]
    by_owner: list[SavingsRow]
