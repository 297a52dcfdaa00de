"""The Workload Kueue makes for each kind: its name and its pod sets, read from the kind's
templates the way Kueue's integration for that kind reads them (each function cites it)."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from tests.support.kind_store import Object
from tests.support.kubeflow_kinds import KUBEFLOW_KINDS

POD_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
POD_GROUP_TOTAL = "kueue.x-k8s.io/pod-group-total-count"
PREBUILT_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
ADMISSION_GATE = "kueue.x-k8s.io/admission"
MANAGED_LABEL = "kueue.x-k8s.io/managed"
SUSPENDING_PARENT = "kueue.x-k8s.io/pod-suspending-parent"
IS_GROUP = "kueue.x-k8s.io/is-group-workload"


def workload_name(kind: str, group: str, name: str, uid: str, extra: str = "") -> str:
    """`<kind>-<name>-<5 hex>`, the hex from sha1 of kind, group, name, uid (and extra)
    (kueue pkg/controller/jobframework/workload_names.go, GetWorkloadNameForOwnerWithGVK)."""
    digest = hashlib.sha1(usedforsecurity=False)
    digest.update("\n".join([kind, group, name, uid, *([extra] if extra else [])]).encode())
    prefix = f"{kind.lower()}-{name}"[: 253 - 6]
    return f"{prefix}-{digest.hexdigest()[:5]}"


def api_group(obj: Object) -> str:
    return str(obj["apiVersion"]).rpartition("/")[0]


def owner_workload_name(obj: Object, *, suffix: str = "") -> str:
    """The Workload name Kueue gives `obj`'s Workload (`suffix`: LWS's group index)."""
    meta = obj["metadata"]
    name = f"{meta['name']}-{suffix}" if suffix else meta["name"]
    return workload_name(obj["kind"], api_group(obj), name, meta["uid"])


def pod_set(name: str, count: int, template: Object) -> Object:
    """A pod set of `count` pods, its template without scheduling gates
    (kueue pkg/controller/jobframework/utils.go, SanitizePodSet)."""
    spec = copy.deepcopy(template.get("spec", {}))
    spec.pop("schedulingGates", None)
    meta = {k: v for k, v in (template.get("metadata") or {}).items() if k in ("labels",)}
    return {"name": name, "count": count, "template": {"metadata": meta, "spec": spec}}


def jobset_pod_sets(spec: Object) -> list[Object]:
    """One per replicated job: replicas x min(parallelism, completions)
    (kueue pkg/controller/jobs/jobset/jobset_controller.go, PodSets and podsCount)."""
    sets = []
    for job in spec["replicatedJobs"]:
        job_spec = job["template"]["spec"]
        parallelism = job_spec.get("parallelism", 1)
        pods = min(parallelism, job_spec.get("completions", parallelism))
        sets.append(pod_set(job["name"], job.get("replicas", 1) * pods, job_spec["template"]))
    return sets


def kubeflow_pod_sets(job: Object) -> list[Object]:
    """One per replica type the job has, in its kind's order, named in lower case, of
    `replicas` pods (default 1) (kueue pkg/controller/jobs/kubeflow/kubeflowjob/
    kubeflowjob_controller.go, PodSets and OrderedReplicaTypes; pkg/controller/jobs/mpijob/
    mpijob_controller.go, PodSets, orderedReplicaTypes and podsCount; `kubeflow_kinds`)."""
    row = KUBEFLOW_KINDS[job["kind"]]
    replicas = job["spec"][row.replica_specs]
    return [
        pod_set(kind.lower(), replicas[kind].get("replicas", 1), replicas[kind]["template"])
        for kind in row.replica_types
        if replicas.get(kind) is not None
    ]


def trainjob_jobset_spec(trainjob: Object, runtime: Object) -> Object:
    """The JobSet spec the trainer builds from the runtime's template: the "node" job runs
    `trainer.numNodes` pods (kubeflow/trainer pkg/runtime/framework/plugins/jobset). Kueue
    takes its pod sets from that JobSet (kueue pkg/controller/jobs/trainjob/
    trainjob_controller.go, podSets)."""
    spec = copy.deepcopy(runtime["spec"]["template"]["spec"])
    nodes = trainjob["spec"].get("trainer", {}).get("numNodes")
    nodes = nodes or runtime["spec"].get("mlPolicy", {}).get("numNodes", 1)
    for job in spec["replicatedJobs"]:
        if job["name"] == "node":
            job["template"]["spec"]["parallelism"] = nodes
            job["template"]["spec"]["completions"] = nodes
    spec["suspend"] = trainjob["spec"].get("suspend", False)
    return spec


def appwrapper_pod_sets(appwrapper: Object) -> list[Object]:
    """`<appwrapper>-<index>` per declared pod set, its template at `path` in the component
    (kueue pkg/controller/jobs/appwrapper/appwrapper_controller.go, PodSets)."""
    sets = []
    for component in appwrapper["spec"]["components"]:
        for declared in component.get("podSets", []):
            template = dict(at_path(component, declared["path"]))
            name = f"{appwrapper['metadata']['name']}-{len(sets)}"
            sets.append(pod_set(name, declared.get("replicas", 1), template))
    return sets


def at_path(obj: Object, path: str) -> Object:
    """The object at a dotted path of `obj` (an AppWrapper pod set's `path`), not a copy."""
    node: Any = obj
    for part in path.split("."):
        node = node[part]
    return node


def leaderworkerset_pod_sets(spec: Object) -> list[Object]:
    """ "leader" (1) and "worker" (size - 1), or "main" (size) without a leader template
    (kueue pkg/controller/jobs/leaderworkerset/leaderworkerset_reconciler.go, podSets)."""
    template = spec["leaderWorkerTemplate"]
    size = template.get("size", 1)
    if "leaderTemplate" not in template:
        return [pod_set("main", size, template["workerTemplate"])]
    return [
        pod_set("leader", 1, template["leaderTemplate"]),
        pod_set("worker", size - 1, template["workerTemplate"]),
    ]


def statefulset_pod_sets(spec: Object) -> list[Object]:
    """ "main", one pod per replica (kueue pkg/controller/jobs/statefulset/
    statefulset_reconciler.go, constructWorkload)."""
    return [pod_set("main", spec.get("replicas", 1), spec["template"])]


def pod_group_pod_sets(pods: list[Object]) -> list[Object]:
    """One pod set per role: pods of the same shape share it, named by a hash of the shape
    (kueue pkg/controller/jobs/pod/pod_controller.go, PodSets and getRoleHash; the hash
    here is not Kueue's, only as stable)."""
    roles: dict[str, list[Object]] = {}
    for pod in pods:
        shape = json.dumps(pod["spec"].get("containers", []), sort_keys=True)
        roles.setdefault(hashlib.sha256(shape.encode()).hexdigest()[:8], []).append(pod)
    return [pod_set(role, len(members), members[0]) for role, members in sorted(roles.items())]
