"""The kinds Kueue queues besides Ray's, as a user applies them (each valid against its
vendored CRD, tests/crds): labelled with a LocalQueue, GPU pods in every template.

Job kinds are built suspended, as Kueue's mutating webhook leaves them (kueue
pkg/controller/jobframework/base_webhook.go, ApplyDefaultForSuspend); the emulation
(`tests.support.kind_controllers`) suspends one that is not. Deployments and StatefulSets are
built as the user writes them: the emulation applies Kueue's webhooks to their pod templates.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from tests.support.kubeflow_kinds import KUBEFLOW_KINDS

from .common import GPU, Object, metadata
from .ray import QUEUE_LABEL

IMAGE = "nvcr.io/nvidia/pytorch:25.01-py3"
JOBSET = "jobset.x-k8s.io/v1alpha2"
TRAINER = "trainer.kubeflow.org/v1alpha1"
LWS = "leaderworkerset.x-k8s.io/v1"
APPWRAPPER = "workload.codeflare.dev/v1beta2"
NOTEBOOK = "kubeflow.org/v1"


def pod_template(
    container_name: str = "main", *, gpus: int = 1, cpu: int = 1, restart: str | None = None
) -> Object:
    """A pod template of one container requesting (and limited to) `gpus` and `cpu`."""
    resources = {"cpu": str(cpu)} | ({GPU: str(gpus)} if gpus else {})
    spec: Object = {
        "containers": [
            {
                "name": container_name,
                "image": IMAGE,
                "resources": {"requests": dict(resources), "limits": dict(resources)},
            }
        ]
    }
    if restart is not None:
        spec["restartPolicy"] = restart
    return {"metadata": {}, "spec": spec}


def _owner(api_version: str, kind: str, namespace: str | None, name: str, spec: Object) -> Object:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": metadata(kind, namespace, name),
        "spec": spec,
    }


def _queued(obj: Object, queue: str | None) -> Object:
    if queue is not None:
        obj["metadata"].setdefault("labels", {})[QUEUE_LABEL] = queue
    return obj


def make_jobset(
    namespace: str, name: str, *, queue: str | None, jobs: dict[str, tuple[int, int]], gpus: int = 1
) -> Object:
    """`jobs`: replicated job name -> (replicas, pods per Job: parallelism = completions)."""
    replicated = [
        {"name": job, "replicas": replicas, "template": _job_spec(pods, gpus=gpus)}
        for job, (replicas, pods) in jobs.items()
    ]
    spec = {"replicatedJobs": replicated, "suspend": True}
    return _queued(_owner(JOBSET, "JobSet", namespace, name, spec), queue)


def _job_spec(pods: int, *, gpus: int) -> Object:
    return {
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "completionMode": "Indexed",
            "template": pod_template(gpus=gpus, restart="Never"),
        }
    }


def make_batch_job(
    namespace: str, name: str, *, pods: int = 1, gpus: int = 1, queue: str | None = None
) -> Object:
    """A batch/v1 Job (AppWrapper's usual component); queued with `queue` (then suspended)."""
    spec = _job_spec(pods, gpus=gpus)["spec"]
    if queue is not None:
        spec["suspend"] = True
    return _queued(_owner("batch/v1", "Job", namespace, name, spec), queue)


def make_kubeflow_job(
    kind: str,
    namespace: str,
    name: str,
    *,
    queue: str | None,
    replicas: Mapping[str, int],
    gpus: int = 1,
) -> Object:
    """A Kubeflow training job (`kubeflow_kinds`) of `replicas` per replica type (those of 0
    left out), each pod `gpus` GPUs in the container its operator looks for; an MPIJob's
    Launcher runs mpirun and gets no GPU."""
    row = KUBEFLOW_KINDS[kind]
    specs = {
        replica_type: {
            "replicas": count,
            "restartPolicy": "OnFailure",
            "template": pod_template(row.container, gpus=0 if replica_type == "Launcher" else gpus),
        }
        for replica_type, count in replicas.items()
        if count
    }
    spec = {row.replica_specs: specs, "runPolicy": {"suspend": True}}
    return _queued(_owner(row.api_version, kind, namespace, name, spec), queue)


def make_pytorchjob(
    namespace: str, name: str, *, queue: str | None, workers: int = 1, gpus: int = 1
) -> Object:
    """One Master and `workers` Workers, each `gpus` GPUs."""
    replicas = {"Master": 1, "Worker": workers}
    return make_kubeflow_job(
        "PyTorchJob", namespace, name, queue=queue, replicas=replicas, gpus=gpus
    )


def make_training_runtime(name: str = "torch-distributed", *, gpus: int = 1) -> Object:
    """A ClusterTrainingRuntime whose JobSet template has the trainer's "node" job."""
    node = _job_spec(1, gpus=gpus)
    node["spec"]["template"]["spec"]["containers"][0]["name"] = "node"
    node["metadata"] = {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}}
    spec = {
        "mlPolicy": {"numNodes": 1, "torch": {}},
        "template": {"spec": {"replicatedJobs": [{"name": "node", "template": node}]}},
    }
    return _owner(TRAINER, "ClusterTrainingRuntime", None, name, spec)


def make_trainjob(
    namespace: str, name: str, *, queue: str | None, runtime: str, nodes: int = 1
) -> Object:
    spec = {
        "runtimeRef": {"name": runtime},
        "trainer": {"numNodes": nodes},
        "suspend": True,
    }
    return _queued(_owner(TRAINER, "TrainJob", namespace, name, spec), queue)


def make_leaderworkerset(
    namespace: str,
    name: str,
    *,
    queue: str | None,
    groups: int = 1,
    size: int = 2,
    gpus: int = 1,
    leader_template: bool = True,
) -> Object:
    """`groups` leader-worker groups of `size` pods (the first of each its leader), each
    `gpus` GPUs; without `leader_template` the leader is made from the worker template."""
    template: Object = {"size": size, "workerTemplate": pod_template("worker", gpus=gpus)}
    if leader_template:
        template["leaderTemplate"] = pod_template("leader", gpus=gpus)
    spec = {"replicas": groups, "leaderWorkerTemplate": template}
    return _queued(_owner(LWS, "LeaderWorkerSet", namespace, name, spec), queue)


def make_appwrapper(namespace: str, name: str, *, queue: str | None, job: Object) -> Object:
    """An AppWrapper of one batch Job (`make_batch_job`), its pod set at the Job's template."""
    wrapped = copy.deepcopy(job)
    del wrapped["metadata"]["uid"]
    del wrapped["metadata"]["namespace"]
    pods = wrapped["spec"].get("parallelism", 1)
    component = {
        "template": wrapped,
        "podSets": [{"path": "template.spec.template", "replicas": pods}],
    }
    spec = {"components": [component], "suspend": True}
    return _queued(_owner(APPWRAPPER, "AppWrapper", namespace, name, spec), queue)


def make_notebook(namespace: str, name: str, *, queue: str | None, gpus: int = 1) -> Object:
    """A Kubeflow Notebook; its labels reach its pod (the notebook controller copies them)."""
    spec = {"template": {"spec": pod_template(name, gpus=gpus)["spec"]}}
    return _queued(_owner(NOTEBOOK, "Notebook", namespace, name, spec), queue)


def make_deployment(
    namespace: str, name: str, *, queue: str | None, replicas: int = 1, gpus: int = 1
) -> Object:
    return _apps_set("Deployment", namespace, name, queue=queue, replicas=replicas, gpus=gpus)


def make_statefulset(
    namespace: str, name: str, *, queue: str | None, replicas: int = 1, gpus: int = 1
) -> Object:
    return _apps_set("StatefulSet", namespace, name, queue=queue, replicas=replicas, gpus=gpus)


def _apps_set(
    kind: str, namespace: str, name: str, *, queue: str | None, replicas: int, gpus: int
) -> Object:
    template = pod_template(gpus=gpus)
    template["metadata"]["labels"] = {"app": name}
    spec = {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": template}
    if kind == "StatefulSet":
        spec["serviceName"] = name
    return _queued(_owner("apps/v1", kind, namespace, name, spec), queue)


def make_plain_pod(
    namespace: str,
    name: str,
    *,
    queue: str | None,
    gpus: int = 1,
    group: str | None = None,
    group_size: int = 1,
) -> Object:
    """A pod of its own; with `group`, one of `group_size` pods Kueue admits together
    (kueue site/content/en/docs/tasks/run/plain_pods.md, "Running a group of Pods")."""
    pod = _owner("v1", "Pod", namespace, name, pod_template(gpus=gpus)["spec"])
    if group is not None:
        pod["metadata"]["labels"] = {"kueue.x-k8s.io/pod-group-name": group}
        pod["metadata"]["annotations"] = {"kueue.x-k8s.io/pod-group-total-count": str(group_size)}
    return _queued(pod, queue)
