"""Which RayClusters a Kueue Workload admits: any of its ownerReferences naming the
RayCluster (by UID, or by name when the reference carries none), or naming the object that
controls it (a RayJob, an AppWrapper: its Workload is the row, so its RayCluster gets none).
Labels do not decide it: Kueue also admits unlabelled RayClusters
(`manageJobsWithoutQueueName`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from autoscaler.adapters.kuberay.rayclusters import KIND
from autoscaler.adapters.kubernetes.cache import key_of
from autoscaler.adapters.kubernetes.objects import Obj

RAY_GROUP = "ray.io"


@dataclass(frozen=True)
class Admissions:
    by_uid: Mapping[str, str] = field(default_factory=dict)  # owner UID -> Workload
    by_name: Mapping[tuple[str, str], str] = field(default_factory=dict)  # (ns, name) -> ...

    @classmethod
    def of(cls, workloads: Iterable[Obj]) -> Admissions:
        by_uid: dict[str, str] = {}
        by_name: dict[tuple[str, str], str] = {}
        for workload in workloads:
            namespace, name = key_of(workload)
            for ref in (workload.get("metadata") or {}).get("ownerReferences") or []:
                if isinstance(ref, Mapping) and ref.get("uid"):
                    by_uid[str(ref["uid"])] = name  # of any kind: a controller's too
                elif _names_a_raycluster(ref):
                    by_name[(namespace, str(ref.get("name", "")))] = name
        return cls(by_uid, by_name)

    def admitting(self, cluster: Obj) -> str | None:
        """The name of a Workload that references this RayCluster or its controller."""
        meta = cluster.get("metadata") or {}
        uid = str(meta.get("uid", ""))
        found = (self.by_uid.get(uid) if uid else None) or self.by_name.get(key_of(cluster))
        return found or self._admitting_controller(meta)

    def _admitting_controller(self, meta: Obj) -> str | None:
        for ref in meta.get("ownerReferences") or []:
            if isinstance(ref, Mapping) and ref.get("controller") and ref.get("uid"):
                return self.by_uid.get(str(ref["uid"]))
        return None


def _names_a_raycluster(ref: object) -> bool:
    if not isinstance(ref, Mapping) or ref.get("kind") != KIND:
        return False
    return str(ref.get("apiVersion", "")).partition("/")[0] == RAY_GROUP
