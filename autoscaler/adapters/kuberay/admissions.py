"""Which RayClusters a Kueue Workload admits: any of its ownerReferences naming the
RayCluster (by UID, or by name when the reference carries none). Labels do not decide it:
Kueue also admits unlabelled RayClusters (`manageJobsWithoutQueueName`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from autoscaler.adapters.kuberay.rayclusters import KIND

Obj = Mapping[str, Any]
RAY_GROUP = "ray.io"


@dataclass(frozen=True)
class Admissions:
    by_uid: Mapping[str, str] = field(default_factory=dict)  # RayCluster UID -> Workload
    by_name: Mapping[tuple[str, str], str] = field(default_factory=dict)  # (ns, name) -> ...

    @classmethod
    def of(cls, workloads: Iterable[Obj]) -> Admissions:
        by_uid: dict[str, str] = {}
        by_name: dict[tuple[str, str], str] = {}
        for workload in workloads:
            meta = workload.get("metadata") or {}
            namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
            for ref in meta.get("ownerReferences") or []:
                if not _names_a_raycluster(ref):
                    continue
                if ref.get("uid"):
                    by_uid[str(ref["uid"])] = name
                else:
                    by_name[(namespace, str(ref.get("name", "")))] = name
        return cls(by_uid, by_name)

    def admitting(self, cluster: Obj) -> str | None:
        """The name of a Workload that references this RayCluster, if any."""
        meta = cluster.get("metadata") or {}
        uid = str(meta.get("uid", ""))
        key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        return (self.by_uid.get(uid) if uid else None) or self.by_name.get(key)


def _names_a_raycluster(ref: object) -> bool:
    if not isinstance(ref, Mapping) or ref.get("kind") != KIND:
        return False
    return str(ref.get("apiVersion", "")).partition("/")[0] == RAY_GROUP
