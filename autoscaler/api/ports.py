"""What the API needs beyond the loop's `Cluster` port. The real implementations talk to
Kubernetes (`writer.WorkloadWriter`, `runtime_state.RuntimeStateStore`); a simulated cluster
can offer its own."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from autoscaler.api.writer import Annotated
from autoscaler.domain.models import WorkloadInfo
from autoscaler.runtime_state import AuditRecord, Edit, RuntimeState


class WorkloadWrites(Protocol):
    def annotate_owner(
        self, workload: WorkloadInfo, annotations: Mapping[str, str | None]
    ) -> Annotated:
        """Merge these annotations (None removes) into the owner, else the Workload."""
        ...

    def annotate_workload(
        self, workload: WorkloadInfo, annotations: Mapping[str, str | None]
    ) -> Annotated: ...

    def reactivate(self, workload: WorkloadInfo, annotations: Mapping[str, str | None]) -> None:
        """`spec.active: true` with these annotations, only if unchanged since read (Conflict)."""
        ...


class StateStore(Protocol):
    def read(self) -> RuntimeState: ...

    def change(self, edit: Edit) -> RuntimeState:
        """Apply `edit` to the shared state atomically (Conflict when it keeps racing)."""
        ...

    def record(self, *records: AuditRecord) -> None: ...
